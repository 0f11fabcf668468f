import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite("Authorization code grant")
struct AuthorizationCodeTests {
    @Test("A public client signs in with PKCE and gets verified tokens")
    func publicClientSignsIn() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let request = try client.authorizationRequest()
            let callback = try await provider.followRedirect(from: request.url)
            let query = Fixture.query(callback)
            #expect(callback.path == "/callback")
            #expect(query["iss"] == provider.issuer.absoluteString)
            #expect(query["state"] == request.state)
            #expect(query["code"] != nil)

            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.refreshToken != nil)
            #expect(tokens.scopes == ["openid", "profile", "email", "offline_access"])
            let claims = try #require(tokens.idTokenClaims)
            #expect(claims.subject == TestProvider.Demo.subject)
            #expect(claims.issuer == provider.issuer.absoluteString)
            #expect(claims.audiences == [TestProvider.Demo.publicClientID])
            #expect(claims.nonce == request.nonce)
            #expect(claims.name == "Demo User")
            #expect(claims.email == "demo@example.com")
            #expect(claims.preferredUsername == TestProvider.Demo.username)
            #expect(claims.authTime != nil)
            #expect(claims.sessionID.map(provider.isSessionActive) == true)
            #expect(provider.requestCount(.authorization) == 1)
            #expect(provider.requestCount(.token) == 1)
            #expect(provider.requestCount(.jwks) == 1)
        }
    }

    @Test("A confidential client authenticates with client_secret_basic and client_secret_post",
          arguments: [ClientAuthenticationMethod.clientSecretBasic, .clientSecretPost])
    func confidentialClientSignsIn(method: ClientAuthenticationMethod) async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.confidentialClient(provider, method: method)
            let tokens = try await Fixture.signIn(client, provider)
            #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)
            #expect(provider.isActive(token: tokens.accessToken))
        }
    }

    /// With client_secret_basic the answer is a 401 with `WWW-Authenticate: Basic` (RFC 6749
    /// §5.2), which the URLSession transport never completes on Linux with Swift 6.3.1
    /// (swift-corelibs-foundation #5456): that case runs through AsyncHTTPClient only.
    @Test("A wrong client secret is invalid_client (401), with either method",
          arguments: [(ClientAuthenticationMethod.clientSecretBasic, false), (.clientSecretPost, false), (.clientSecretPost, true)])
    func wrongSecretIsRefused(method: ClientAuthenticationMethod, urlSession: Bool) async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let transport: any HTTPTransport = urlSession ? URLSessionTransport.shared : Fixture.asyncHTTPClient
            let client = try await Fixture.confidentialClient(provider, method: method, secret: "not-the-secret", transport: transport)
            let error = await Fixture.oauthError { _ = try await Fixture.signIn(client, provider) }
            #expect(error?.code == .invalidClient)
            #expect(error?.statusCode == 401)
            #expect(provider.requestCount(.token) == 1)
        }
    }

    @Test("A confidential client that sends no secret is refused")
    func confidentialClientWithoutSecretIsRefused() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let (response, body) = try await Fixture.send(
                .post, provider.url(for: .token),
                form: [("grant_type", "client_credentials"), ("client_id", TestProvider.Demo.confidentialClientID)])
            #expect(response.status.code == 401)
            #expect(Fixture.json(body)["error"] == "invalid_client")
        }
    }

    @Test("A wrong code_verifier is refused, and the code is spent")
    func wrongVerifierIsRefused() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let request = try client.authorizationRequest()
            let code = try #require(Fixture.query(try await provider.followRedirect(from: request.url))["code"])
            let wrong = String(repeating: "a", count: 43)
            let error = await Fixture.oauthError {
                _ = try await client.requestToken(.authorizationCode(code: code, redirectURI: request.redirectURI, codeVerifier: wrong))
            }
            #expect(error?.code == .invalidGrant)
            let retry = await Fixture.oauthError {
                _ = try await client.requestToken(
                    .authorizationCode(code: code, redirectURI: request.redirectURI, codeVerifier: request.codeVerifier))
            }
            #expect(retry?.code == .invalidGrant)
        }
    }

    @Test("A reused code is refused and the tokens issued from it are revoked")
    func reusedCodeRevokesTokens() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let request = try client.authorizationRequest()
            let callback = try await provider.followRedirect(from: request.url)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(provider.isActive(token: tokens.accessToken))
            let error = await Fixture.oauthError { _ = try await client.completeAuthorization(callbackURL: callback, request: request) }
            #expect(error?.code == .invalidGrant)
            #expect(!provider.isActive(token: tokens.accessToken))
            #expect(!provider.isActive(token: try #require(tokens.refreshToken)))
        }
    }

    @Test("An unregistered redirect URI gets an error page, never a redirect")
    func unregisteredRedirectURIIsRefused() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            for uri in ["http://127.0.0.1:53682/elsewhere", "http://localhost:53682/callback", "https://127.0.0.1:53682/callback"] {
                let client = try await OAuth2Client(
                    server: .issuer(provider.issuer),
                    configuration: ClientConfiguration(
                        clientID: TestProvider.Demo.publicClientID, redirectURI: URL(string: uri)!, scopes: ["openid"]))
                let request = try client.authorizationRequest()
                let error = await Fixture.providerError { _ = try await provider.followRedirect(from: request.url) }
                #expect(error?.code == .errorPage)
                #expect(error?.statusCode == 400)
                #expect(error?.body?.contains("redirect_uri") == true)
            }
        }
    }

    @Test("A registered loopback redirect URI without a port accepts any port; one with a port only that port")
    func loopbackPortRule() async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.clients.append(
            TestProvider.Client(id: "fixed-port", redirectURIs: [URL(string: "http://127.0.0.1:7000/cb")!]))
        try await TestProvider.withProvider(configuration: configuration) { provider in
            for (clientID, uri, accepted) in [
                (TestProvider.Demo.publicClientID, "http://127.0.0.1:1234/callback", true),
                (TestProvider.Demo.publicClientID, "http://[::1]:1234/callback", true),
                ("fixed-port", "http://127.0.0.1:7000/cb", true),
                ("fixed-port", "http://127.0.0.1:7001/cb", false),
            ] {
                let client = try await OAuth2Client(
                    server: .issuer(provider.issuer),
                    configuration: ClientConfiguration(clientID: clientID, redirectURI: URL(string: uri)!, scopes: ["openid"]))
                let request = try client.authorizationRequest()
                let outcome = try? await provider.followRedirect(from: request.url)
                #expect((outcome != nil) == accepted, "\(clientID) \(uri)")
                if let outcome { #expect(outcome.absoluteString.hasPrefix(uri + "?")) }
            }
        }
    }

    @Test("A redirect_uri at the token endpoint other than the authorization request's is refused")
    func redirectMismatchAtTokenEndpoint() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let request = try client.authorizationRequest()
            let code = try #require(Fixture.query(try await provider.followRedirect(from: request.url))["code"])
            let error = await Fixture.oauthError {
                _ = try await client.requestToken(
                    .authorizationCode(code: code, redirectURI: URL(string: "http://127.0.0.1:9/callback")!, codeVerifier: request.codeVerifier))
            }
            #expect(error?.code == .invalidGrant)
        }
    }

    @Test("Without PKCE S256 the client is sent back invalid_request, with state and iss")
    func pkceIsRequired() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let base: [(String, String)] = [
                ("response_type", "code"), ("client_id", TestProvider.Demo.publicClientID),
                ("redirect_uri", Fixture.redirectURI.absoluteString), ("scope", "openid"), ("state", "s-123"),
            ]
            for extra in [[], [("code_challenge", String(repeating: "A", count: 43)), ("code_challenge_method", "plain")]] {
                let url = URL(string: provider.url(for: .authorization).absoluteString + "?" + Fixture.encode(base + extra))!
                let query = Fixture.query(try await provider.followRedirect(from: url))
                #expect(query["error"] == "invalid_request")
                #expect(query["state"] == "s-123")
                #expect(query["iss"] == provider.issuer.absoluteString)
                #expect(query["code"] == nil)
            }
        }
    }

    @Test("An unsupported response_type, a repeated parameter and a forbidden scope are sent back as errors")
    func requestErrorsAreRedirected() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let base: [(String, String)] = [
                ("client_id", TestProvider.Demo.publicClientID), ("redirect_uri", Fixture.redirectURI.absoluteString), ("state", "xyz"),
                ("code_challenge", String(repeating: "A", count: 43)), ("code_challenge_method", "S256"),
            ]
            let cases: [([(String, String)], String)] = [
                ([("response_type", "token")], "unsupported_response_type"),
                ([("response_type", "code"), ("scope", "openid"), ("scope", "email")], "invalid_request"),
                ([("response_type", "code"), ("scope", "openid admin")], "invalid_scope"),
            ]
            for (extra, expected) in cases {
                let url = URL(string: provider.url(for: .authorization).absoluteString + "?" + Fixture.encode(base + extra))!
                let query = Fixture.query(try await provider.followRedirect(from: url))
                #expect(query["error"] == expected)
                #expect(query["state"] == "xyz")
            }
        }
    }

    @Test("iss can be left out of authorization responses, and the metadata says so")
    func issParameterCanBeTurnedOff() async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.sendsIssuerParameter = false
        try await TestProvider.withProvider(configuration: configuration) { provider in
            let client = try await Fixture.publicClient(provider)
            #expect(client.metadata.authorizationResponseIssParameterSupported == false)
            let request = try client.authorizationRequest()
            let callback = try await provider.followRedirect(from: request.url)
            #expect(Fixture.query(callback)["iss"] == nil)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)
        }
    }

    @Test("login_hint picks a user; without an auto-approved user the request is denied")
    func userSelection() async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.users.append(TestProvider.User(username: "bob", password: "bob-pw", subject: "bob-sub"))
        configuration.autoApprovedUser = nil
        try await TestProvider.withProvider(configuration: configuration) { provider in
            let client = try await Fixture.publicClient(provider)
            let bob = try await Fixture.signIn(client, provider, options: AuthorizationOptions(loginHint: "bob"))
            #expect(bob.idTokenClaims?.subject == "bob-sub")

            let denied = await Fixture.oauthError { _ = try await Fixture.signIn(client, provider) }
            #expect(denied?.code == .accessDenied)
            let silent = await Fixture.oauthError { _ = try await Fixture.signIn(client, provider, options: AuthorizationOptions(prompt: ["none"])) }
            #expect(silent?.code == .loginRequired)

            provider.autoApprovedUser = TestProvider.Demo.username
            let demo = try await Fixture.signIn(client, provider)
            #expect(demo.idTokenClaims?.subject == TestProvider.Demo.subject)
        }
    }

    @Test("An expired code is refused")
    func expiredCodeIsRefused() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            provider.lifetimes.authorizationCode = .milliseconds(50)
            let client = try await Fixture.publicClient(provider)
            let request = try client.authorizationRequest()
            let callback = try await provider.followRedirect(from: request.url)
            try await Task.sleep(for: .milliseconds(120))
            let error = await Fixture.oauthError { _ = try await client.completeAuthorization(callbackURL: callback, request: request) }
            #expect(error?.code == .invalidGrant)
        }
    }

    @Test("An unknown client gets an error page")
    func unknownClient() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let query = Fixture.encode([("client_id", "nobody"), ("response_type", "code"), ("redirect_uri", Fixture.redirectURI.absoluteString)])
            let url = URL(string: provider.url(for: .authorization).absoluteString + "?" + query)!
            let error = await Fixture.providerError { _ = try await provider.followRedirect(from: url) }
            #expect(error?.code == .errorPage)
            #expect(error?.statusCode == 400)
            #expect(provider.requestCount(.authorization) == 1)
        }
    }
}
