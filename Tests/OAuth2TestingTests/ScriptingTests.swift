import Foundation
import OAuth2
import OAuth2TestSupport
import OAuth2Testing
import Testing

@Suite("Scripted failures, lifetimes, counters and the browser stand-in")
struct ScriptingTests {
    @Test("A scripted OAuth error answers once; the next request succeeds")
    func scriptedError() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.confidentialClient(provider)
            provider.failNext(.token, with: .error("temporarily_unavailable", status: 503, description: "maintenance"))
            let error = await Fixture.oauthError { _ = try await client.clientCredentials() }
            #expect(error?.code == .temporarilyUnavailable)
            #expect(error?.statusCode == 503)
            #expect(error?.message == "maintenance")
            #expect(error?.isTransient == true)
            _ = try await client.clientCredentials()
            #expect(provider.requestCount(.token) == 2)
        }
    }

    @Test("A bare status with Retry-After, several times in a row")
    func scriptedStatus() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.confidentialClient(provider)
            provider.failNext(.token, with: .status(503, retryAfter: 7), times: 2)
            for _ in 0..<2 {
                let error = await Fixture.oauthError { _ = try await client.clientCredentials() }
                #expect(error?.statusCode == 503)
                #expect(error?.retryAfter == 7)
                #expect(error?.isTransient == true)
            }
            _ = try await client.clientCredentials()
        }
    }

    @Test("A closed connection is a network error")
    func scriptedClose() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.confidentialClient(provider, transport: Fixture.asyncHTTPClient)
            provider.failNext(.token, with: .closeConnection)
            let error = await Fixture.oauthError { _ = try await client.clientCredentials() }
            #expect(error?.source == .transport)
            #expect(error?.isTransient == true)
            #expect(provider.requestCount(.token) == 1)
        }
    }

    @Test("A delay holds the answer back, then answers normally")
    func scriptedDelay() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.confidentialClient(provider)
            provider.failNext(.token, with: .delay(.milliseconds(400)))
            let clock = ContinuousClock()
            let start = clock.now
            _ = try await client.clientCredentials()
            #expect(clock.now - start >= .milliseconds(400))
        }
    }

    @Test("A scripted error at the authorization endpoint goes back to the client with state and iss")
    func scriptedAuthorizationError() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            provider.failNext(.authorization, with: .error("access_denied", description: "The user said no."))
            let request = try client.authorizationRequest()
            let callback = try await provider.followRedirect(from: request.url)
            let query = Fixture.query(callback)
            #expect(query["error"] == "access_denied")
            #expect(query["state"] == request.state)
            #expect(query["iss"] == provider.issuer.absoluteString)
            let error = await Fixture.oauthError { _ = try await client.completeAuthorization(callbackURL: callback, request: request) }
            #expect(error?.code == .accessDenied)
            #expect(provider.requestCount(.token) == 0)
        }
    }

    @Test("A scripted UserInfo error carries a WWW-Authenticate challenge")
    func scriptedUserInfoError() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let tokens = try await Fixture.signIn(client, provider)
            provider.failNext(.userInfo, with: .error("invalid_token", status: 401))
            let error = await Fixture.oauthError { _ = try await client.userInfo(for: tokens) }
            #expect(error?.code == .invalidToken)
            _ = try await client.userInfo(for: tokens)
        }
    }

    @Test("clearFailures drops what is scripted; resetRequestCounts starts counting again")
    func clearing() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.confidentialClient(provider)
            provider.failNext(.token, with: .status(500), times: 3)
            provider.clearFailures()
            _ = try await client.clientCredentials()
            #expect(provider.requestCounts[.token] == 1)
            #expect(provider.requestCounts[.discovery] ?? 0 >= 1)
            provider.resetRequestCounts()
            #expect(provider.requestCounts.isEmpty)
            #expect(provider.requestCount(.token) == 0)
        }
    }

    @Test("Access token lifetime is what expires_in says")
    func accessTokenLifetime() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            provider.lifetimes.accessToken = .seconds(5)
            let client = try await Fixture.confidentialClient(provider)
            // expires_in counts from when the request was sent: between these two instants,
            // however long the exchange took on a busy machine.
            let before = Date()
            let tokens = try await client.clientCredentials()
            let after = Date()
            let expiresAt = try #require(tokens.expiresAt)
            #expect(expiresAt >= before.addingTimeInterval(5 - 0.001) && expiresAt <= after.addingTimeInterval(5 + 0.001))
            provider.lifetimes.accessToken = .milliseconds(100)
            let short = try await Fixture.confidentialClient(provider).clientCredentials()
            try await Task.sleep(for: .milliseconds(200))
            #expect(!provider.isActive(token: short.accessToken))
        }
    }

    @Test("expireAccessTokens: UserInfo says invalid_token, and a refresh brings a working token")
    func expiringAccessTokens() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let tokens = try await Fixture.signIn(client, provider)
            provider.expireAccessTokens()
            let error = await Fixture.oauthError { _ = try await client.userInfo(for: tokens) }
            #expect(error?.code == .invalidToken)
            let fresh = try await client.refresh(tokens)
            #expect(try await client.userInfo(for: fresh).subject == TestProvider.Demo.subject)
        }
    }

    @Test("revokeAll: refreshes fail with invalid_grant, pending codes are gone")
    func revokingEverything() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let tokens = try await Fixture.signIn(client, provider)
            let request = try client.authorizationRequest()
            let callback = try await provider.followRedirect(from: request.url)
            provider.revokeAll()
            let refresh = await Fixture.oauthError { _ = try await client.refresh(tokens) }
            #expect(refresh?.code == .invalidGrant)
            #expect(refresh?.requiresReauthorization == true)
            let exchange = await Fixture.oauthError { _ = try await client.completeAuthorization(callbackURL: callback, request: request) }
            #expect(exchange?.code == .invalidGrant)
        }
    }

    @Test("Clients and users registered at run time can sign in")
    func runtimeRegistration() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            provider.register(TestProvider.Client(id: "late", secret: "late-secret", grantTypes: [.password]))
            provider.register(TestProvider.User(username: "carol", password: "carol-pw", claims: ["groups": ["admins"]]))
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(clientID: "late", clientSecret: "late-secret", scopes: ["openid"]))
            let tokens = try await client.password(username: "carol", password: "carol-pw")
            #expect(tokens.idTokenClaims?.subject == "carol")
            #expect(tokens.idTokenClaims?[claim: "groups"] == ["admins"])
            #expect(tokens.idTokenClaims?.preferredUsername == nil)  // no profile scope
        }
    }

    @Test("openInBrowser delivers the callback to the redirect target, like a browser")
    func browserDeliversCallback() async throws {
        let received = Received()
        try await LocalHTTPServer.with(handler: { request in
            received.add(request.head.path ?? "")
            return .body(200, Data("signed in".utf8), contentType: "text/plain")
        }) { listener in
            try await TestProvider.withProvider(configuration: .demo) { provider in
                let client = try await OAuth2Client(
                    server: .issuer(provider.issuer),
                    configuration: ClientConfiguration(
                        clientID: TestProvider.Demo.publicClientID, redirectURI: URL(string: "http://127.0.0.1:\(listener.port)/callback")!,
                        scopes: ["openid"]))
                let request = try client.authorizationRequest()
                let target = try await provider.openInBrowser(request.url)
                let delivered = try #require(received.paths.first)
                #expect(received.paths.count == 1)
                #expect(delivered.hasPrefix("/callback?"))
                #expect(target.absoluteString.hasSuffix(delivered))
                let tokens = try await client.completeAuthorization(callbackURL: target, request: request)
                #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)
            }
        }
    }

    @Test("The browser stand-in reports a target that does not answer, and refuses non-http URLs")
    func browserFailures() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            // A port nothing listens on, as for a provider that was shut down; held bound so
            // that no server of a parallel test can take it (a shut-down provider's port can).
            let url = URL(string: "http://127.0.0.1:\(try refusedPort())/jwks")!
            let refused = await Fixture.providerError { _ = try await provider.openInBrowser(url) }
            #expect(refused?.code == .browser)
            let https = await Fixture.providerError { _ = try await provider.followRedirect(from: URL(string: "https://127.0.0.1/")!) }
            #expect(https?.code == .browser)
            let page = await Fixture.providerError { _ = try await provider.followRedirect(from: provider.url(for: .deviceVerification)) }
            #expect(page?.code == .noRedirect)
            #expect(page?.statusCode == 200)
        }
    }
}

/// Paths a listener received.
final class Received: @unchecked Sendable {
    private let lock = NSLock()
    private var _paths: [String] = []
    var paths: [String] { lock.withLock { _paths } }
    func add(_ path: String) { lock.withLock { _paths.append(path) } }
}
