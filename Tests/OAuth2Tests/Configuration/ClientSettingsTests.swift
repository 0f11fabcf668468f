import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

private func settings(_ json: String, format: SettingsFile.Format? = nil) throws -> SettingsFile {
    try SettingsFile(data: Data(json.utf8), format: format)
}

/// The error settings throw, with its message.
private func settingsError(_ json: String, format: SettingsFile.Format? = nil) -> OAuth2Error? {
    do {
        _ = try SettingsFile(data: Data(json.utf8), format: format)
        return nil
    } catch {
        return error
    }
}

private func endpoints(_ server: AuthorizationServer) -> ServerMetadata? {
    if case .metadata(let metadata) = server { return metadata }
    return nil
}

@Suite struct P2SettingsTests {
    /// The settings dictionary of p2/OAuth2's README, written as JSON.
    static let readme = #"""
        {
          "client_id": "my_swift_app",
          "client_secret": "C7447242",
          "authorize_uri": "https://github.com/login/oauth/authorize",
          "token_uri": "https://github.com/login/oauth/access_token",
          "redirect_uris": ["myapp://oauth/callback"],
          "scope": "user repo:status",
          "secret_in_body": true,
          "keychain": false
        }
        """#

    @Test func readmeExampleBecomesAConfigurationAndEndpoints() throws {
        let settings = try settings(Self.readme)
        #expect(settings.format == .p2)
        #expect(settings.configuration.clientID == "my_swift_app")
        #expect(settings.configuration.clientSecret == "C7447242")
        #expect(settings.configuration.authenticationMethod == .clientSecretPost)
        #expect(settings.configuration.redirectURI == URL(string: "myapp://oauth/callback"))
        #expect(settings.configuration.scopes == ["user", "repo:status"])
        #expect(settings.redirectURIs == [URL(string: "myapp://oauth/callback")!])
        let metadata = try #require(endpoints(settings.server))
        #expect(metadata.authorizationEndpoint == URL(string: "https://github.com/login/oauth/authorize"))
        #expect(metadata.tokenEndpoint == URL(string: "https://github.com/login/oauth/access_token"))
        #expect(settings.ignoredKeys == ["keychain"])
        #expect(settings.assumesTokensWithoutExpiryAreValid)
        #expect(!settings.description.contains("C7447242"))
    }

    @Test func secretChoosesTheAuthenticationMethodAsP2Does() throws {
        let base = #""client_id": "c", "authorize_uri": "https://as.example.com/auth""#
        #expect(try settings("{\(base), \"client_secret\": \"s\"}").configuration.authenticationMethod == .clientSecretBasic)
        #expect(try settings("{\(base), \"client_secret\": \"s\", \"secret_in_body\": false}").configuration.authenticationMethod == .clientSecretBasic)
        #expect(try settings("{\(base)}").configuration.authenticationMethod == ClientAuthenticationMethod.none)
        // p2 documents "client_secret": "" for Reddit: Basic with an empty password.
        let empty = try settings("{\(base), \"client_secret\": \"\"}").configuration
        #expect(empty.authenticationMethod == .clientSecretBasic)
        #expect(empty.clientSecret == nil)
        #expect(empty.quirks == [.basicAuthenticationWithEmptySecret])
        #expect(try ClientAuthentication.basicAuthorization(empty) == "Basic " + Data("c:".utf8).base64EncodedString())
    }

    @Test func parametersAndHeadersGoWhereP2PutsThem() throws {
        let settings = try settings(#"""
            {"client_id": "c", "client_secret": "s", "authorize_uri": "https://as.example.com/auth",
             "parameters": {"duration": "permanent"}, "headers": {"Accept": "application/vnd.github.v3+json"},
             "device_authorize_uri": "https://as.example.com/device", "registration_uri": "https://as.example.com/register",
             "device_id": "device-1", "token_assume_unexpired": false, "client_name": "My App", "verbose": true}
            """#)
        let configuration = settings.configuration
        #expect(configuration.additionalParameters[.authorization] == ["duration": "permanent"])
        #expect(configuration.additionalParameters[.token] == ["duration": "permanent", "device_id": "device-1"])
        #expect(configuration.additionalParameters[.deviceAuthorization] == ["duration": "permanent"])
        #expect(configuration.additionalHeaders[.token]?[.accept] == "application/vnd.github.v3+json")
        #expect(configuration.additionalHeaders[.deviceAuthorization]?[.accept] == "application/vnd.github.v3+json")
        let metadata = try #require(endpoints(settings.server))
        // p2 falls back to authorize_uri for tokens.
        #expect(metadata.tokenEndpoint == URL(string: "https://as.example.com/auth"))
        #expect(metadata.deviceAuthorizationEndpoint == URL(string: "https://as.example.com/device"))
        #expect(metadata.registrationEndpoint == URL(string: "https://as.example.com/register"))
        #expect(!settings.assumesTokensWithoutExpiryAreValid)
        #expect(settings.clientName == "My App")
        #expect(settings.ignoredKeys == ["verbose"])
    }

    @Test func unknownKeyIsNamed() throws {
        let error = try #require(settingsError(#"{"client_id": "c", "authorize_uri": "https://as.example.com/a", "tokn_uri": "x"}"#))
        #expect(error.code == .invalidConfiguration)
        #expect(error.message?.contains("“tokn_uri”") == true)
        #expect(error.message?.contains("p2/OAuth2") == true)
    }

    @Test func aKeyOfTheOwnFormatInAP2FileIsNamedAndExplained() throws {
        let error = try #require(settingsError(#"{"client_id": "c", "token_uri": "https://as.example.com/t", "issuer": "https://as.example.com"}"#))
        #expect(error.message?.contains("“issuer”") == true)
        #expect(error.message?.contains("swift-oauth2's own format") == true)
    }

    @Test func wrongTypesAreNamedWithoutTheirValue() throws {
        let error = try #require(settingsError(#"{"client_id": "c", "client_secret": "TOPSECRET", "authorize_uri": "https://as.example.com/a", "secret_in_body": "TOPSECRET"}"#))
        #expect(error.message == "“secret_in_body” must be a boolean.")
        let headers = try #require(settingsError(#"{"client_id": "c", "authorize_uri": "https://as.example.com/a", "headers": {"X-Key": 42}}"#))
        #expect(headers.message == "“headers.X-Key” must be a string.")
    }

    @Test func missingOrUnsafeEndpointsAreRefusedWithoutLeakingTheSecret() throws {
        let none = try #require(settingsError(#"{"client_id": "c", "client_secret": "TOPSECRET", "secret_in_body": true}"#))
        #expect(none.code == .invalidConfiguration)
        #expect(none.message?.contains("authorize_uri") == true)
        let http = try #require(settingsError(#"{"client_id": "c", "client_secret": "TOPSECRET", "authorize_uri": "http://as.example.com/a"}"#))
        #expect(http.code == .insecureEndpoint)
        let refresh = try #require(settingsError(#"{"client_id": "c", "token_uri": "https://as.example.com/t", "refresh_uri": "https://as.example.com/r"}"#))
        #expect(refresh.message?.contains("refresh_uri") == true)
        for error in [none, http, refresh] { #expect(!error.description.contains("TOPSECRET")) }
        // The same refresh URL as the token URL is what p2 does anyway.
        #expect(throws: Never.self) {
            _ = try settings(#"{"client_id": "c", "token_uri": "https://as.example.com/t", "refresh_uri": "https://as.example.com/t"}"#)
        }
    }

    @Test func aP2ClientSendsWhatP2Would() async throws {
        let transport = StubTransport(json: #"{"access_token":"at","token_type":"bearer"}"#)
        let settings = try settings(#"""
            {"client_id": "my app", "client_secret": "s3cr3t", "token_uri": "https://as.example.com/token",
             "scope": "read write", "headers": {"X-Tenant": "acme", "Accept": "application/vnd.github.v3+json"},
             "parameters": {"audience": "api"}}
            """#)
        let client = try await OAuth2Client(server: settings.server, configuration: settings.configuration, environment: HTTPEnvironment(transport: transport))
        _ = try await client.clientCredentials()
        let sent = try #require(transport.sent.first)
        #expect(sent.request.url == URL(string: "https://as.example.com/token"))
        #expect(sent.request.headerFields[.authorization] == "Basic " + Data("my+app:s3cr3t".utf8).base64EncodedString())
        #expect(sent.request.headerFields[HTTPField.Name("X-Tenant")!] == "acme")
        #expect(sent.request.headerFields[.accept] == "application/vnd.github.v3+json")
        #expect(sent.form["scope"] == "read write")
        #expect(sent.form["audience"] == "api")
        #expect(sent.form["client_secret"] == nil)
    }
}

@Suite struct OktaSettingsTests {
    /// The property list of OktaOidc's README.
    static let plist = #"""
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
          <dict>
            <key>issuer</key>
            <string>https://dev-1.okta.com/oauth2/default</string>
            <key>clientId</key>
            <string>0oa1b2c3</string>
            <key>redirectUri</key>
            <string>com.example.app:/callback</string>
            <key>logoutRedirectUri</key>
            <string>com.example.app:/logout</string>
            <key>scopes</key>
            <string>openid profile offline_access</string>
          </dict>
        </plist>
        """#

    @Test func readmePlistBecomesAnIssuerToDiscover() throws {
        let settings = try settings(Self.plist)
        #expect(settings.format == .oktaOIDC)
        #expect(settings.server == .issuer(URL(string: "https://dev-1.okta.com/oauth2/default")!))
        #expect(settings.configuration.clientID == "0oa1b2c3")
        #expect(settings.configuration.redirectURI == URL(string: "com.example.app:/callback"))
        #expect(settings.postLogoutRedirectURI == URL(string: "com.example.app:/logout"))
        #expect(settings.configuration.scopes == ["openid", "profile", "offline_access"])
        #expect(settings.configuration.authenticationMethod == ClientAuthenticationMethod.none)
        #expect(settings.configuration.additionalParameters.isEmpty)
    }

    @Test func otherKeysBecomeAuthorizationParameters() throws {
        let settings = try settings(#"""
            {"issuer": "https://dev-1.okta.com/oauth2/default", "clientId": "0oa1", "redirectUri": "com.example.app:/cb",
             "scopes": "openid", "login_hint": "username@email.com", "idp": "0oa-idp"}
            """#)
        #expect(settings.configuration.additionalParameters[.authorization] == ["login_hint": "username@email.com", "idp": "0oa-idp"])
        let client = try OAuth2Client(metadata: Fixtures.metadata, configuration: settings.configuration, environment: HTTPEnvironment(transport: StubTransport(json: "{}")))
        let query = URLComponents(url: try client.authorizationRequest().url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.contains(URLQueryItem(name: "login_hint", value: "username@email.com")))
        #expect(query.contains(URLQueryItem(name: "idp", value: "0oa-idp")))
    }

    @Test func aSecretIsNeverPassedThroughToTheURL() throws {
        let error = try #require(settingsError(#"""
            {"issuer": "https://dev-1.okta.com", "clientId": "0oa1", "redirectUri": "app:/cb", "scopes": "openid",
             "clientSecret": "TOPSECRET"}
            """#))
        #expect(error.message?.contains("“clientSecret”") == true)
        #expect(!error.description.contains("TOPSECRET"))
    }

    @Test func requiredKeysAndStringValuesAsOktaOidcRequires() throws {
        let missing = try #require(settingsError(#"{"issuer": "https://dev-1.okta.com", "clientId": "0oa1", "redirectUri": "app:/cb"}"#))
        #expect(missing.message?.contains("“scopes”") == true)
        let number = try #require(settingsError(#"{"issuer": "https://dev-1.okta.com", "clientId": "0oa1", "redirectUri": "app:/cb", "scopes": "openid", "max_age": 5}"#))
        #expect(number.message == "“max_age” must be a string.")
        let mixed = try #require(settingsError(#"{"issuer": "https://dev-1.okta.com", "clientId": "0oa1", "token_uri": "https://x.example.com"}"#))
        #expect(mixed.message?.contains("“token_uri”") == true)
    }
}

@Suite struct OwnSettingsTests {
    @Test func issuerAloneIsDiscovered() throws {
        let settings = try settings(#"""
            {"client_id": "cli", "redirect_uris": ["http://127.0.0.1:53682/callback"], "scope": ["openid", "profile"],
             "post_logout_redirect_uris": ["http://127.0.0.1:53682/bye"], "issuer": "https://accounts.example.com"}
            """#)
        #expect(settings.format == .swiftOAuth2)
        #expect(settings.server == .issuer(URL(string: "https://accounts.example.com")!))
        #expect(settings.configuration.scopes == ["openid", "profile"])
        #expect(settings.configuration.redirectURI == URL(string: "http://127.0.0.1:53682/callback"))
        #expect(settings.postLogoutRedirectURI == URL(string: "http://127.0.0.1:53682/bye"))
        #expect(settings.configuration.authenticationMethod == nil)
    }

    @Test func endpointsAreUsedAsGiven() throws {
        let settings = try settings(#"""
            {"client_id": "svc", "client_secret": "s", "token_endpoint_auth_method": "client_secret_post", "scope": "read write",
             "issuer": "https://as.example.com", "token_endpoint": "https://as.example.com/token",
             "revocation_endpoint": "https://as.example.com/revoke", "token_endpoint_auth_methods_supported": ["client_secret_post"],
             "additional_parameters": {"token": {"audience": "https://api.example.com"}},
             "additional_headers": {"token": {"X-Tenant": "acme"}}, "quirks": ["comma_separated_scopes"]}
            """#)
        let metadata = try #require(endpoints(settings.server))
        #expect(metadata.issuer == "https://as.example.com")
        #expect(metadata.tokenEndpoint == URL(string: "https://as.example.com/token"))
        #expect(metadata.revocationEndpoint == URL(string: "https://as.example.com/revoke"))
        #expect(metadata.tokenEndpointAuthMethodsSupported == ["client_secret_post"])
        let configuration = settings.configuration
        #expect(configuration.authenticationMethod == .clientSecretPost)
        #expect(configuration.scopes == ["read", "write"])
        #expect(configuration.additionalParameters == [.token: ["audience": "https://api.example.com"]])
        #expect(configuration.additionalHeaders[.token]?[HTTPField.Name("X-Tenant")!] == "acme")
        #expect(configuration.quirks == [.commaSeparatedScopes])
    }

    @Test func unknownKeysKindsQuirksAndProvidersAreNamed() throws {
        let cases: [(String, String)] = [
            (#"{"client_id": "c", "issuer": "https://a.example.com", "tokenEndpoint": "https://a.example.com/t"}"#, "“tokenEndpoint”"),
            (#"{"client_id": "c", "issuer": "https://a.example.com", "additional_parameters": {"tokn": {}}}"#, "“additional_parameters.tokn”"),
            (#"{"client_id": "c", "issuer": "https://a.example.com", "quirks": ["lenient"]}"#, "“lenient”"),
            (#"{"client_id": "c", "provider": "myspace"}"#, "“myspace”"),
            (#"{"client_id": "c", "provider": {"name": "keycloak", "base_url": "https://sso.example.com", "relm": "x"}}"#, "“provider.relm”"),
            (#"{"client_id": "c", "provider": "github", "token_endpoint": "https://a.example.com/t"}"#, "“token_endpoint”"),
            (#"{"client_id": "c"}"#, "“issuer”"),
            (#"{"client_id": "c", "issuer": "https://a.example.com", "redirect_uris": ["/relative"]}"#, "“redirect_uris[0]”"),
        ]
        for (json, named) in cases {
            let error = try #require(settingsError(json), "no error for \(json)")
            #expect(error.code == .invalidConfiguration)
            #expect(error.message?.contains(named) == true, "\(error) should name \(named)")
        }
    }

    @Test func providerPresetsFillTheConfiguration() throws {
        let github = try settings(#"{"client_id": "c", "client_secret": "s", "provider": "github"}"#)
        #expect(github.provider == "github")
        #expect(github.server == ProviderPreset.github.server)
        #expect(github.configuration.authenticationMethod == .clientSecretPost)
        #expect(github.configuration.scopes == ["read:user"])
        #expect(github.configuration.quirks == [.commaSeparatedScopes])

        let entra = try settings(#"{"client_id": "c", "scope": "User.Read", "provider": {"name": "microsoft", "tenant": "contoso.onmicrosoft.com"}}"#)
        #expect(entra.configuration.scopes == ["User.Read"])
        #expect(endpoints(entra.server)?.tokenEndpoint == URL(string: "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token"))

        let okta = try settings(#"{"client_id": "c", "provider": {"name": "okta", "domain": "dev-1.okta.com", "authorization_server_id": null}}"#)
        #expect(okta.server == .issuer(URL(string: "https://dev-1.okta.com")!))
        let keycloak = try settings(#"{"client_id": "c", "provider": {"name": "keycloak", "base_url": "https://sso.example.com", "realm": "main"}}"#)
        #expect(keycloak.server == .issuer(URL(string: "https://sso.example.com/realms/main")!))
    }

    @Test func formatCanBeForced() throws {
        // token_uri makes the file p2's; read as the library's format, it is an unknown key.
        let json = #"{"client_id": "c", "scope": "a b", "token_uri": "https://as.example.com/t"}"#
        #expect(try settings(json).format == .p2)
        let error = try #require(settingsError(json, format: .swiftOAuth2))
        #expect(error.message?.contains("“token_uri”") == true)
    }
}

@Suite struct SettingsLoadingTests {
    @Test func jsonAndPropertyListDecodersBothWork() throws {
        let fromJSON = try JSONDecoder().decode(SettingsFile.self, from: Data(P2SettingsTests.readme.utf8))
        #expect(fromJSON.format == .p2)
        let fromPlist = try PropertyListDecoder().decode(SettingsFile.self, from: Data(OktaSettingsTests.plist.utf8))
        #expect(fromPlist.format == .oktaOIDC)

        let decoder = JSONDecoder()
        decoder.userInfo[SettingsFile.formatUserInfoKey] = SettingsFile.Format.swiftOAuth2
        #expect(throws: OAuth2Error.self) { try decoder.decode(SettingsFile.self, from: Data(P2SettingsTests.readme.utf8)) }
    }

    @Test func binaryPropertyListWithBooleans() throws {
        let values: [String: Any] = [
            "client_id": "c", "client_secret": "s", "authorize_uri": "https://as.example.com/a", "secret_in_body": true,
            "redirect_uris": ["app://cb"], "token_assume_unexpired": false,
        ]
        let data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
        let settings = try SettingsFile(data: data)
        #expect(settings.format == .p2)
        #expect(settings.configuration.authenticationMethod == .clientSecretPost)
        #expect(!settings.assumesTokensWithoutExpiryAreValid)
    }

    @Test func filesAreReadAndBadOnesRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let plist = directory.appendingPathComponent("Okta.plist")
        try Data(OktaSettingsTests.plist.utf8).write(to: plist)
        #expect(try SettingsFile(contentsOf: plist).configuration.clientID == "0oa1b2c3")

        let missing = directory.appendingPathComponent("missing.json")
        #expect(throws: OAuth2Error.self) { try SettingsFile(contentsOf: missing) }

        let broken = #"{"client_id": "c", "client_secret": "TOPSECRET" "authorize_uri": 1}"#
        let jsonError = try #require(settingsError(broken))
        #expect(jsonError.message?.hasPrefix("The settings are not valid JSON") == true)
        #expect(!jsonError.description.contains("TOPSECRET"))
        #expect(settingsError("client_id = c")?.message == "The settings are neither a JSON object nor a property list.")
        #expect(settingsError("[1, 2]")?.code == .invalidConfiguration)

        let dated = OktaSettingsTests.plist.replacingOccurrences(
            of: "<key>scopes</key>", with: "<key>when</key><date>2020-01-01T00:00:00Z</date><key>scopes</key>")
        #expect(settingsError(dated)?.message?.contains("“when”") == true)
    }
}
