import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// Settings files in each format, read from disk, drive a real client against a local
/// provider: p2's endpoints are used as given, OktaOidc's issuer is discovered, the
/// library's `provider` names a preset.
@Suite struct SettingsFileTests {
    static func write(_ text: String, name: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file
    }

    @Test func p2SettingsForGitHub() async throws {
        try await ProviderStub.with(GitHubPresetTests.github()) { stub in
            let file = try Self.write(
                """
                {
                  "client_id": "\(GitHubPresetTests.clientID)",
                  "client_secret": "\(GitHubPresetTests.secret)",
                  "authorize_uri": "\(stub.baseURL.absoluteString)/login/oauth/authorize",
                  "token_uri": "\(stub.baseURL.absoluteString)/login/oauth/access_token",
                  "redirect_uris": ["\(redirectURI.absoluteString)"],
                  "scope": "user repo:status",
                  "secret_in_body": true,
                  "headers": {"Accept": "application/json"},
                  "keychain": false
                }
                """, name: "github.json")
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let settings = try SettingsFile(contentsOf: file)
            #expect(settings.format == .p2)
            let client = try await OAuth2Client(server: settings.server, configuration: settings.configuration)
            let request = try client.authorizationRequest()
            #expect(query(request.url)["scope"] == "user repo:status")
            let tokens = try await client.completeAuthorization(callbackURL: callback(for: request, code: "good-code"), request: request)
            #expect(tokens.accessToken == "gho_16C7e42F292c6912E7710c838347Ae178B4a")
            // p2's settings have no scope quirk: GitHub's comma-separated scope stays one string.
            #expect(tokens.scopes == ["repo,gist"])
            let sent = try #require(stub.requests.first)
            #expect(sent.form["client_secret"] == GitHubPresetTests.secret)
            #expect(sent.accept == "application/json")
        }
    }

    @Test func oktaPlistIsDiscoveredAndPassesItsExtraKeys() async throws {
        try await ProviderStub.with(OktaPresetTests.okta()) { stub in
            let file = try Self.write(
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0">
                  <dict>
                    <key>issuer</key><string>\(stub.baseURL.absoluteString)/oauth2/default</string>
                    <key>clientId</key><string>\(OktaPresetTests.clientID)</string>
                    <key>redirectUri</key><string>\(redirectURI.absoluteString)</string>
                    <key>logoutRedirectUri</key><string>http://127.0.0.1:53682/signed-out</string>
                    <key>scopes</key><string>openid profile offline_access</string>
                    <key>login_hint</key><string>username@email.com</string>
                  </dict>
                </plist>
                """, name: "Okta.plist")
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let settings = try SettingsFile(contentsOf: file)
            #expect(settings.format == .oktaOIDC)
            let client = try await OAuth2Client(server: settings.server, configuration: settings.configuration, environment: HTTPEnvironment(metadataCache: MetadataCache()))
            #expect(client.metadata.endSessionEndpoint?.path == "/oauth2/default/v1/logout")
            let request = try client.authorizationRequest()
            #expect(query(request.url)["login_hint"] == "username@email.com")
            let tokens = try await client.completeAuthorization(callbackURL: callback(for: request, code: "okta-code-from-plist"), request: request)
            #expect(tokens.refreshToken == "okta-rt-1")
            let logout = try client.endSessionRequest(EndSessionOptions(postLogoutRedirectURI: settings.postLogoutRedirectURI))
            #expect(query(logout.url)["post_logout_redirect_uri"] == "http://127.0.0.1:53682/signed-out")
        }
    }

    @Test func ownFormatNamesAPreset() async throws {
        try await ProviderStub.with(KeycloakPresetTests.keycloak()) { stub in
            let file = try Self.write(
                """
                {
                  "client_id": "\(KeycloakPresetTests.clientID)",
                  "client_secret": "\(KeycloakPresetTests.secret)",
                  "provider": {"name": "keycloak", "base_url": "\(stub.baseURL.absoluteString)", "realm": "\(KeycloakPresetTests.realm)"}
                }
                """, name: "keycloak.json")
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let settings = try SettingsFile(contentsOf: file)
            #expect(settings.provider == "keycloak")
            #expect(settings.configuration.scopes == ["openid", "profile", "email"])
            let client = try await OAuth2Client(server: settings.server, configuration: settings.configuration, environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let tokens = try await client.password(username: "alice", password: "wonderland")
            #expect(tokens.accessToken == "kc-at-1")
        }
    }
}
