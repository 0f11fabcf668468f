import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

private func metadata(_ preset: ProviderPreset) throws -> ServerMetadata {
    guard case .metadata(let metadata) = preset.server else {
        throw OAuth2Error.client(.invalidConfiguration, "\(preset.name) is discovered")
    }
    return metadata
}

@Suite struct ProviderPresetTests {
    @Test func configurationChoicesWinOverThePreset() {
        var own = ClientConfiguration(clientID: "c", clientSecret: "s", authenticationMethod: .clientSecretBasic, scopes: ["repo"])
        own.additionalParameters[.token] = ["audience": "mine"]
        own.additionalHeaders[.token] = [.accept: "application/vnd.github+json"]
        own.quirks = [.scopesOnRefresh]
        var preset = ProviderPreset.github
        preset.additionalParameters[.token] = ["audience": "preset", "extra": "1"]
        let applied = preset.applied(to: own)
        #expect(applied.scopes == ["repo"])
        #expect(applied.authenticationMethod == .clientSecretBasic)
        #expect(applied.additionalParameters[.token] == ["audience": "mine", "extra": "1"])
        #expect(applied.additionalHeaders[.token]?[.accept] == "application/vnd.github+json")
        #expect(applied.additionalHeaders[.deviceAuthorization]?[.accept] == "application/json")
        #expect(applied.quirks == [.scopesOnRefresh, .commaSeparatedScopes])
    }

    @Test func thePresetFillsWhatTheConfigurationLeavesOpen() {
        let github = ProviderPreset.github.configuration(clientID: "c", clientSecret: "s")
        #expect(github.scopes == ["read:user"])
        #expect(github.authenticationMethod == .clientSecretPost)
        #expect(github.additionalHeaders[.token]?[.accept] == "application/json")
        // Without a secret a client is public, except where the provider bends Basic (Reddit).
        #expect(ProviderPreset.github.configuration(clientID: "c").authenticationMethod == ClientAuthenticationMethod.none)
        let reddit = ProviderPreset.reddit.configuration(clientID: "installed")
        #expect(reddit.authenticationMethod == .clientSecretBasic)
        #expect(throws: Never.self) { try reddit.validate() }
        #expect(reddit.additionalParameters[.authorization] == ["duration": "permanent"])
    }

    @Test func rebasingMovesEveryURLAndKeepsPathsAndQueries() throws {
        let base = URL(string: "http://127.0.0.1:8080/proxy/")!
        let github = try metadata(try ProviderPreset.github.rebased(onto: base))
        #expect(github.authorizationEndpoint == URL(string: "http://127.0.0.1:8080/proxy/login/oauth/authorize"))
        #expect(github.tokenEndpoint == URL(string: "http://127.0.0.1:8080/proxy/login/oauth/access_token"))
        #expect(github.deviceAuthorizationEndpoint == URL(string: "http://127.0.0.1:8080/proxy/login/device/code"))
        #expect(github.tokenEndpointAuthMethodsSupported == ["client_secret_post"])

        let linkedIn = try metadata(try ProviderPreset.linkedIn.rebased(onto: URL(string: "https://li.example.com")!))
        #expect(linkedIn.issuer == "https://li.example.com/oauth")
        #expect(linkedIn.userInfoEndpoint == URL(string: "https://li.example.com/v2/userinfo"))

        let google = try ProviderPreset.google.rebased(onto: URL(string: "http://127.0.0.1:9")!)
        #expect(google.server == .issuer(URL(string: "http://127.0.0.1:9")!))
        let auth0 = try ProviderPreset.auth0(domain: "t.eu.auth0.com").rebased(onto: URL(string: "http://127.0.0.1:9")!)
        #expect(auth0.server == .issuer(URL(string: "http://127.0.0.1:9/")!))

        let withQuery = try AuthorizationServer.rebase(URL(string: "https://a.example.com/x?tenant=1")!, onto: base)
        #expect(withQuery == URL(string: "http://127.0.0.1:8080/proxy/x?tenant=1"))
        #expect(throws: OAuth2Error.self) { try ProviderPreset.github.rebased(onto: URL(string: "relative/path")!) }
    }

    @Test func githubEnterpriseServerUsesTheSamePaths() throws {
        let ghes = try ProviderPreset.github(enterpriseServer: URL(string: "https://git.example.com")!)
        #expect(ghes.name == "github-enterprise")
        #expect(try metadata(ghes).tokenEndpoint == URL(string: "https://git.example.com/login/oauth/access_token"))
    }

    @Test func microsoftTenantsAndClouds() throws {
        let common = try metadata(try .microsoft(tenant: "common"))
        #expect(common.issuer == nil)
        #expect(common.authorizationEndpoint == URL(string: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize"))
        #expect(common.deviceAuthorizationEndpoint == URL(string: "https://login.microsoftonline.com/common/oauth2/v2.0/devicecode"))
        #expect(common.userInfoEndpoint == URL(string: "https://graph.microsoft.com/oidc/userinfo"))
        let tenantID = "72f988bf-86f1-41af-91ab-2d7cd011db47"
        let single = try metadata(try .microsoft(tenant: tenantID))
        #expect(single.issuer == "https://login.microsoftonline.com/\(tenantID)/v2.0")
        #expect(single.jwksURI == URL(string: "https://login.microsoftonline.com/\(tenantID)/discovery/v2.0/keys"))
        let government = try metadata(try .microsoft(tenant: "organizations", authority: URL(string: "https://login.microsoftonline.us")!))
        #expect(government.tokenEndpoint == URL(string: "https://login.microsoftonline.us/organizations/oauth2/v2.0/token"))
        #expect(government.userInfoEndpoint == nil)
        #expect(try ProviderPreset.microsoft(tenant: "common").quirks == [.scopesOnRefresh])
        #expect(throws: OAuth2Error.self) { try ProviderPreset.microsoft(tenant: "common/../evil") }
    }

    @Test func issuersOfDiscoveredProviders() throws {
        #expect(try ProviderPreset.okta(domain: "dev-1.okta.com").server == .issuer(URL(string: "https://dev-1.okta.com/oauth2/default")!))
        #expect(try ProviderPreset.okta(domain: "dev-1.okta.com", authorizationServerID: nil).server == .issuer(URL(string: "https://dev-1.okta.com")!))
        #expect(try ProviderPreset.okta(domain: "dev-1.okta.com").scopes.contains("offline_access"))
        #expect(try ProviderPreset.auth0(domain: "t.eu.auth0.com").server == .issuer(URL(string: "https://t.eu.auth0.com/")!))
        let keycloak = try ProviderPreset.keycloak(baseURL: URL(string: "https://sso.example.com/auth/")!, realm: "my realm")
        #expect(keycloak.server == .issuer(URL(string: "https://sso.example.com/auth/realms/my%20realm")!))
        #expect(try ProviderPreset.gitlab().server == .issuer(URL(string: "https://gitlab.com")!))
        #expect(try ProviderPreset.gitlab(baseURL: URL(string: "https://example.com/gitlab/")!).server == .issuer(URL(string: "https://example.com/gitlab")!))
        for bad in ["", "evil.com/x", "a b", "user@host", ".okta.com"] {
            #expect(throws: OAuth2Error.self, "\(bad)") { try ProviderPreset.okta(domain: bad) }
        }
        #expect(throws: OAuth2Error.self) { try ProviderPreset.keycloak(baseURL: URL(string: "https://sso.example.com")!, realm: "") }
        #expect(throws: OAuth2Error.self) { try ProviderPreset.keycloak(baseURL: URL(string: "https://sso.example.com?x=1")!, realm: "r") }
    }

    @Test func auth0AudienceGoesOnAuthorizationAndTokenRequests() throws {
        let auth0 = try ProviderPreset.auth0(domain: "t.auth0.com", audience: "https://api.example.com")
        #expect(auth0.additionalParameters[.authorization] == ["audience": "https://api.example.com"])
        #expect(auth0.additionalParameters[.token] == ["audience": "https://api.example.com"])
    }

    @Test func facebookVersionsAndNoSecretsInDescriptions() throws {
        #expect(try metadata(.facebook).tokenEndpoint == URL(string: "https://graph.facebook.com/oauth/access_token"))
        let pinned = try metadata(try .facebook(graphAPIVersion: "v21.0"))
        #expect(pinned.authorizationEndpoint == URL(string: "https://www.facebook.com/v21.0/dialog/oauth"))
        #expect(pinned.tokenEndpoint == URL(string: "https://graph.facebook.com/v21.0/oauth/access_token"))
        #expect(ProviderPreset.knownNames.count == 10)
        #expect(ProviderPreset.reddit.description == "ProviderPreset(reddit, metadata(token endpoint: https://www.reddit.com/api/v1/access_token))")
    }
}

@Suite struct ProviderNameTests {
    @Test func everyKnownNameNamesItsPreset() throws {
        let arguments: [String: [String: String?]] = [
            "microsoft": ["tenant": "contoso"], "okta": ["domain": "dev-1.okta.com"], "auth0": ["domain": "acme.eu.auth0.com"],
            "keycloak": ["base_url": "https://sso.example.com", "realm": "staff"],
        ]
        for name in ProviderPreset.knownNames {
            let preset = try ProviderPreset.named(name, arguments: arguments[name] ?? [:])
            #expect(preset.name == name)
        }
    }

    @Test func oktaWithoutAServerIDIsTheOrgServer() throws {
        let custom = try ProviderPreset.named("okta", arguments: ["domain": "dev-1.okta.com"])
        let org = try ProviderPreset.named("okta", arguments: ["domain": "dev-1.okta.com", "authorization_server_id": String?.none])
        #expect(custom.server == .issuer(URL(string: "https://dev-1.okta.com/oauth2/default")!))
        #expect(org.server == .issuer(URL(string: "https://dev-1.okta.com")!))
    }

    @Test func unknownNamesArgumentsAndInsecureURLsAreRefused() {
        for (name, arguments, named) in [
            ("myspace", [:], "myspace"), ("google", ["tenant": "x"], "provider.tenant"),
            ("keycloak", ["realm": "x"], "provider.base_url"), ("gitlab", ["base_url": "http://gitlab.example.com"], "provider.base_url"),
        ] as [(String, [String: String?], String)] {
            let error = #expect(throws: OAuth2Error.self) { try ProviderPreset.named(name, arguments: arguments) }
            #expect(error?.code == (name == "gitlab" ? .insecureEndpoint : .invalidConfiguration))
            #expect(error?.message?.contains(named) == true, "\(String(describing: error)) names \(named)")
        }
    }
}

@Suite struct ServerQuirkTests {
    @Test func namesRoundTrip() {
        for (name, quirk) in ServerQuirks.named {
            #expect(ServerQuirks(name: name) == quirk)
            #expect(quirk.names == [name])
        }
        #expect(ServerQuirks(name: "nope") == nil)
        #expect(ServerQuirks().description == "none")
    }

    @Test func basicCredentialsAreFormEncodedUnlessAServerCannotDecodeThem() throws {
        // RFC 6749 §2.3.1 form-encodes both before Base64; LemonLDAP::NG 2.16 does not decode
        // them, so a registered secret with a `/` never matches there (seen against it).
        var configuration = ClientConfiguration(clientID: "id", clientSecret: "a/b+c d", authenticationMethod: .clientSecretBasic)
        #expect(try ClientAuthentication.basicAuthorization(configuration) == "Basic " + Data("id:a%2Fb%2Bc+d".utf8).base64EncodedString())
        configuration.quirks.insert(.basicAuthenticationWithoutFormEncoding)
        #expect(try ClientAuthentication.basicAuthorization(configuration) == "Basic " + Data("id:a/b+c d".utf8).base64EncodedString())
        // Unencoded, a colon in the client id would end it early: refused, the secret unnamed.
        configuration = ClientConfiguration(clientID: "a:b", clientSecret: "s3cret", authenticationMethod: .clientSecretBasic, quirks: [.basicAuthenticationWithoutFormEncoding])
        let error = #expect(throws: OAuth2Error.self) { try ClientAuthentication.basicAuthorization(configuration) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.description.contains("s3cret") == false)
    }

    @Test func emptySecretBasicIsAnExplicitOptIn() throws {
        var configuration = ClientConfiguration(clientID: "installed", authenticationMethod: .clientSecretBasic)
        #expect(throws: OAuth2Error.self) { try configuration.validate() }
        #expect(throws: OAuth2Error.self) { try ClientAuthentication.basicAuthorization(configuration) }
        configuration.quirks.insert(.basicAuthenticationWithEmptySecret)
        try configuration.validate()
        #expect(try ClientAuthentication.basicAuthorization(configuration) == "Basic aW5zdGFsbGVkOg==")
        // The quirk bends Basic only: client_secret_post still needs a secret.
        configuration.authenticationMethod = .clientSecretPost
        #expect(throws: OAuth2Error.self) { try configuration.validate() }
    }

    @Test func commaSeparatedScopesOnlyWithTheQuirk() throws {
        let body = Data(#"{"access_token":"a","token_type":"bearer","scope":"repo,gist read:user"}"#.utf8)
        let response = HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"])
        let strict = try TokenSet.parse(response: response, body: body, sentAt: Date())
        #expect(strict.scopes == ["repo,gist", "read:user"])
        let bent = try TokenSet.parse(
            response: response, body: body, requestedScopes: nil, sentAt: Date(), receivedAt: Date(), quirks: [.commaSeparatedScopes])
        #expect(bent.scopes == ["repo", "gist", "read:user"])
    }

    @Test func scopesOnRefreshSendsTheConfiguredScopes() async throws {
        let transport = StubTransport(json: #"{"access_token":"at-2","token_type":"Bearer","expires_in":60}"#)
        var configuration = Fixtures.configuration()
        let plain = try Fixtures.client(transport, configuration: configuration)
        _ = try await plain.refresh(TokenSet(accessToken: "a", refreshToken: "rt"))
        configuration.quirks = [.scopesOnRefresh]
        let bent = try Fixtures.client(transport, configuration: configuration)
        let refreshed = try await bent.refresh(TokenSet(accessToken: "a", refreshToken: "rt", scopes: ["openid"]))
        _ = try await bent.refresh(TokenSet(accessToken: "a", refreshToken: "rt"), scopes: ["read"])
        let forms = transport.sent.map(\.form)
        #expect(forms[0]["scope"] == nil)
        #expect(forms[1]["scope"] == "openid read")
        #expect(forms[2]["scope"] == "read")
        #expect(refreshed.scopes == ["openid"])
    }
}

@Suite struct ProviderErrorTests {
    private func error(_ status: Int, _ body: String, kind: RequestKind = .token) throws -> OAuth2Error {
        let members = ResponseParsing.members(of: Data(body.utf8), contentType: "application/json")
        return try #require(ResponseParsing.error(in: HTTPResponse(status: .init(code: status)), members: members, kind: kind, now: Date()))
    }

    @Test func keycloaksUnauthorizedClientWith401IsInvalidClient() throws {
        let wrongSecret = try error(401, #"{"error":"unauthorized_client","error_description":"Invalid client or Invalid client credentials"}"#)
        #expect(wrongSecret.code == .invalidClient)
        #expect(wrongSecret.serverCode == "unauthorized_client")
        #expect(wrongSecret.message == "Invalid client or Invalid client credentials")
        // With 400 it keeps its RFC meaning: the client may not use this grant.
        let grant = try error(400, #"{"error":"unauthorized_client","error_description":"Client not allowed for direct access grants"}"#)
        #expect(grant.code == .unauthorizedClient)
        #expect(grant.serverCode == nil)
    }

    @Test func facebookGraphErrorObjectsKeepTheirMessage() throws {
        let used = try error(
            400, #"{"error":{"message":"This authorization code has been used.","type":"OAuthException","code":100,"error_subcode":36009,"fbtrace_id":"AbC"}}"#)
        #expect(used.code == .invalidRequest)
        #expect(used.message == "This authorization code has been used.")
        #expect(used.serverCode == "OAuthException")
        #expect(used.statusCode == 400)
    }

    @Test func githubCodesMapToTheRFCOnes() throws {
        let code = try error(200, #"{"error":"bad_verification_code","error_description":"The code passed is incorrect or expired."}"#)
        #expect(code.code == .invalidGrant)
        #expect(code.serverCode == "bad_verification_code")
        #expect(code.requiresReauthorization)
        #expect(try error(200, #"{"error":"bad_refresh_token"}"#).code == .invalidGrant)
        #expect(try error(200, #"{"error":"incorrect_client_credentials"}"#).code == .invalidClient)
    }
}
