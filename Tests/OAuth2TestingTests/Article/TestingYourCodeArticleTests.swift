// The examples of "Testing your code with OAuth2Testing" (Snippets/TestingWithTestProvider.swift),
// each as the test the article tells its reader to write: the same lines, with `#expect` in
// place of `precondition`. If one of them stops passing, the article is wrong.
import Foundation
import OAuth2
import OAuth2InteractiveSignIn
import OAuth2Testing
import Testing

@Suite("The article's examples, as tests")
struct TestingYourCodeArticleTests {
    @Test("Sign a user in")
    func signIn() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(
                    clientID: TestProvider.Demo.publicClientID,
                    redirectURI: URL(string: "http://127.0.0.1:53682/callback")!,   // any port: RFC 8252 §7.3
                    scopes: ["openid", "profile", "offline_access"]))
            let request = try await client.startAuthorization()
            let callback = try await provider.followRedirect(from: request.url)   // plays the browser
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)
        }
    }

    @Test("Script failures and count requests")
    func failures() async throws {
        try await TestProvider.withProvider { provider in
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(
                    clientID: TestProvider.Demo.confidentialClientID,
                    clientSecret: TestProvider.Demo.confidentialClientSecret,
                    scopes: ["api"]))
            let session = TokenSession(client: client, options: TokenSession.Options(renewal: .clientCredentials()))
            _ = try await session.freshAccessToken()

            provider.failNext(.token, with: .status(503, retryAfter: 2))   // the next token request meets a 503
            provider.resetRequestCounts()
            do {
                _ = try await session.refresh()                            // renew now, whatever the expiry
                Issue.record("the 503 should have been thrown")
            } catch let error as OAuth2Error {
                #expect(error.isTransient && error.retryAfter == 2)
            }
            // Until Retry-After has passed, the session answers the same error without a request.
            do {
                _ = try await session.refresh()
                Issue.record("the session should have waited for Retry-After")
            } catch let error as OAuth2Error {
                #expect(error.isTransient && error.retryAfter != nil)
            }
            #expect(provider.requestCount(.token) == 1)
        }
    }

    @Test("Drive a loopback sign-in")
    func loopback() async throws {
        try await TestProvider.withProvider { provider in
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(clientID: TestProvider.Demo.publicClientID, scopes: ["openid"]))
            let signIn = LoopbackSignIn(browser: .custom { url in (try? await provider.openInBrowser(url)) != nil })
            let tokens = try await signIn.signIn(client: client)
            #expect(tokens.idToken != nil)
        }
    }

    @Test("Drive a device flow")
    func device() async throws {
        try await TestProvider.withProvider { provider in
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(clientID: TestProvider.Demo.publicClientID, scopes: ["openid"]))
            let authorization = try await client.startDeviceAuthorization()
            try provider.approveDevice(userCode: authorization.userCode)   // or denyDevice(userCode:)
            let tokens = try await client.pollDeviceToken(authorization)
            #expect(provider.isActive(token: tokens.accessToken))
        }
    }

    @Test("Configure your own clients and users")
    func configuration() async throws {
        let configuration = TestProvider.Configuration(
            clients: [
                TestProvider.Client(id: "app", redirectURIs: [URL(string: "http://127.0.0.1/callback")!]),
                TestProvider.Client(id: "worker", secret: "s3cret", grantTypes: [.clientCredentials]),
            ],
            users: [TestProvider.User(username: "alice", password: "pw", claims: ["email": "alice@example.com"])],
            autoApprovedUser: "alice",
            lifetimes: TestProvider.Lifetimes(accessToken: .seconds(2)),
            signingAlgorithm: .es256,
            rotatesRefreshTokens: true)
        let provider = try await TestProvider.start(configuration: configuration)
        _ = try provider.rotateKeys()                                      // a new kid: clients must refetch the JWK set
        do {
            try await checkConfiguration(provider)
        } catch {
            await provider.shutdown()
            throw error
        }
        await provider.shutdown()
    }

    private func checkConfiguration(_ provider: TestProvider) async throws {
        // What the configuration says, through a client: alice signs in to "app" without a
        // page, the worker gets a token with its secret.
        let app = try await OAuth2Client(
            server: .issuer(provider.issuer),
            configuration: ClientConfiguration(
                clientID: "app", redirectURI: URL(string: "http://127.0.0.1:40000/callback")!, scopes: ["openid", "email"]))
        let request = try await app.startAuthorization()
        let tokens = try await app.completeAuthorization(
            callbackURL: try await provider.followRedirect(from: request.url), request: request)
        #expect(tokens.idTokenClaims?.email == "alice@example.com")
        let worker = try await OAuth2Client(
            server: .issuer(provider.issuer), configuration: ClientConfiguration(clientID: "worker", clientSecret: "s3cret"))
        #expect(try await worker.clientCredentials().accessToken.isEmpty == false)
    }

    @Test("Accept clients by their metadata document")
    func metadataDocuments() async throws {
        let testCAPEM = try ClientMetadataDocumentTests.caPEM()
        var configuration = TestProvider.Configuration.demo
        // Serve the document over TLS with a CA your test makes, and trust only that CA.
        configuration.clientMetadataDocuments = .init(trustedRootCertificatesPEM: [testCAPEM])
        try await TestProvider.withProvider(configuration: configuration) { provider in
            let server = try await OAuth2Client(server: .issuer(provider.issuer), configuration: ClientConfiguration(clientID: "x"))
            #expect(server.metadata.clientIDMetadataDocumentSupported == true)
        }
    }

    @Test("Test a step-up loop")
    func stepUpLoop() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(
                    clientID: TestProvider.Demo.publicClientID,
                    redirectURI: URL(string: "http://127.0.0.1:53682/callback")!,
                    scopes: ["openid", "profile", "email"]))
            func signIn() async throws -> Set<String> {
                let request = try await client.startAuthorization()
                let callback = try await provider.followRedirect(from: request.url)
                return Set(try await client.completeAuthorization(callbackURL: callback, request: request).scopes ?? [])
            }
            provider.withholdScopes(["email"], times: 2)   // the first sign-in and its step-up
            let first = try await signIn(), stepUp = try await signIn()
            #expect(!first.contains("email") && !stepUp.contains("email"))   // your client must give up with an error
            #expect(provider.pendingScopeWithholdings == 0)
        }
    }
}
