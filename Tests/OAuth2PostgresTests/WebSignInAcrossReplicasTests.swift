#if Postgres
import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE
@testable import OAuth2Postgres
import OAuth2TestSupport
import OAuth2Testing
import OAuth2Web
import PostgresNIO
import Testing

/// A web app of two replicas behind one load balancer: each its own `WebSignIn` over its own
/// `PostgresWebSessionStore`, `PostgresTokenStore` and `PostgresReplayStore` (its own pool),
/// on one database; the embedded provider plays the identity provider and the browser.
@Suite("OAuth2Web on PostgreSQL: a web sign-in across replicas", .timeLimit(.minutes(5)))
struct WebSignInAcrossReplicasTests {
    /// The load balancer's address, which both replicas are configured with (nothing listens
    /// there: the test hands each request to the replica it chooses).
    static let baseURL = "http://127.0.0.1:8080"
    static let configuration = WebSignInConfiguration(
        publicBaseURL: URL(string: baseURL)!, scopes: ["openid", "profile", "email", "offline_access"])
    static let clientID = "fleet-web-app"
    static let clientSecret = "fleet-web-app-secret"

    /// One replica: its sign-in and its own token store (pool).
    struct Replica: Sendable {
        let signIn: WebSignIn
        let store: PostgresTokenStore
    }

    /// Runs `body` with replicas A and B of the app on `schema`, with `clock` as their
    /// sessions' clock; registers the app (a confidential client) at `provider` first.
    static func withReplicas<T: Sendable>(
        schema: String, provider: TestProvider, clock: ManualDate, _ body: @Sendable (Replica, Replica) async throws -> T
    ) async throws -> T {
        provider.register(TestProvider.Client(
            id: clientID, secret: clientSecret, redirectURIs: [configuration.redirectURI],
            postLogoutRedirectURIs: [URL(string: baseURL + configuration.postLogoutPath)!],
            allowedScopes: TestProvider.Demo.scopes))
        let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
        @Sendable func replica(_ store: PostgresTokenStore) async throws -> Replica {
            // Each replica discovers the provider itself (its own metadata and JWK set caches).
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(clientID: clientID, clientSecret: clientSecret, redirectURI: configuration.redirectURI),
                environment: HTTPEnvironment(transport: URLSessionTransport.shared, metadataCache: MetadataCache()))
            let signIn = WebSignIn(
                client: client, configuration: configuration, sessions: PostgresWebSessionStore(store: store), tokens: store,
                replayStore: PostgresReplayStore(store: store), now: clock.function)
            return Replica(signIn: signIn, store: store)
        }
        return try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { a in
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { b in
                try await body(try await replica(a), try await replica(b))
            }
        }
    }

    // MARK: The browser

    /// A request from the browser to the app: `target` is a path and query; `cookies` are
    /// sent as one `Cookie` field.
    static func request(_ target: String, method: HTTPRequest.Method = .get, cookies: [String: String] = [:]) -> HTTPRequest {
        var request = HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1:8080", path: target)
        if !cookies.isEmpty {
            request.headerFields[.cookie] = cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }
        return request
    }

    /// The value a response sets for cookie `name` (the first `Set-Cookie` of that name).
    static func cookie(_ name: String, in response: WebResponse) -> String? {
        for field in response.headerFields[values: .setCookie] {
            let pair = field.prefix { $0 != ";" }
            guard let equals = pair.firstIndex(of: "="), pair[..<equals] == name else { continue }
            return String(pair[pair.index(after: equals)...])
        }
        return nil
    }

    /// The path and query of a URL (what a browser sends to the app for it).
    static func target(of url: URL) throws -> String {
        let components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        return components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    /// A browser's sign-in: login on `start`, the provider, the callback on `finish`;
    /// returns the session cookie's value.
    static func signIn(_ provider: TestProvider, start: Replica, finish: Replica, returnTo: String = "/orders") async throws -> String {
        let login = try #require(await start.signIn.handle(request("/auth/login?returnTo=\(returnTo)")))
        #expect(login.status == .seeOther)
        let authorize = try #require(login.headerFields[.location].flatMap(URL.init(string:)))
        let state = try #require(URLComponents(url: authorize, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value)
        let bindingName = configuration.bindingCookieName(state: state)
        let binding = try #require(cookie(bindingName, in: login))
        #expect(authorize.absoluteString.hasPrefix(provider.url(for: .authorization).absoluteString))
        // The browser at the provider (the demo user is signed in automatically), back with a code.
        let callback = try await provider.followRedirect(from: authorize)
        #expect(callback.absoluteString.hasPrefix(configuration.redirectURI.absoluteString + "?"))
        let answer = try #require(await finish.signIn.handle(request(try target(of: callback), cookies: [bindingName: binding])))
        #expect(answer.status == .seeOther, "\(answer.error.map { "\($0)" } ?? "")")
        #expect(answer.headerFields[.location] == baseURL + returnTo)
        return try #require(cookie(configuration.cookieName, in: answer))
    }

    static func user(_ access: WebSignIn.Access) -> WebUser? {
        if case .granted(let user) = access { user } else { nil }
    }

    static func logoutRequest(_ token: String) -> (HTTPRequest, [UInt8]) {
        var request = request(configuration.backChannelLogoutPath, method: .post)
        request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        return (request, Array("logout_token=\(token)".utf8))
    }

    /// A back-channel logout endpoint's answer to a replayed logout token: 400 `invalid_request`.
    static func expectReplayRefused(_ answer: WebResponse?, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let answer = try #require(answer, comment, sourceLocation: sourceLocation)
        #expect(answer.status == .badRequest, comment, sourceLocation: sourceLocation)
        let error = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
        #expect(error?["error"] as? String == "invalid_request", comment, sourceLocation: sourceLocation)
    }

    // MARK: Tests

    @Test("Signed in on A, completed on B, known on A; a back-channel logout at A ends it on B, and both refuse the same logout token; the same the other way round")
    func signInAndBackChannelLogoutAcrossReplicas() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("webfleet")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            try await TestProvider.withProvider(configuration: .demo) { provider in
                let clock = ManualDate(PostgresFixture.now)
                try await Self.withReplicas(schema: schema, provider: provider, clock: clock) { a, b in
                    // The sign-in starts on A and its callback reaches B.
                    let session = try await Self.signIn(provider, start: a, finish: b)
                    let cookies = [Self.configuration.cookieName: session]

                    // A knows the user B signed in.
                    let user = try #require(Self.user(await a.signIn.authorize(Self.request("/orders", cookies: cookies))))
                    #expect(user.subject == TestProvider.Demo.subject)
                    #expect(user.issuer == provider.issuer.absoluteString)
                    #expect(user.claims["name"]?.stringValue == "Demo User")
                    #expect(user.claims["email"]?.stringValue == "demo@example.com")
                    #expect(user.scopes.contains("offline_access"))
                    let sid = try #require(user.record.providerSessionID)
                    let tokenKey = TokenSession.key(for: a.signIn.client, account: user.record.account)
                    #expect(try await b.store.load(tokenKey) != nil)
                    #expect(try await Self.user(b.signIn.authorize(Self.request("/orders", cookies: cookies)))?.record == user.record)
                    // The pending sign-in was taken; the cookie itself is nowhere in the database.
                    #expect(try await WebSessionStoreTests.count(database, "\(schema).oauth2_web_pending_sign_ins") == 0)
                    let hashes = try await database.execute(PostgresQuery(unsafeSQL: "SELECT id_hash FROM \(schema).oauth2_web_sessions")).decode(String.self)
                    #expect(hashes == [user.record.idHash])
                    #expect(!hashes.contains(session))

                    // The provider ends its session: its logout token reaches A.
                    let logoutToken = try provider.logoutToken(clientID: Self.clientID, subject: nil, sessionID: sid)
                    let (logout, body) = Self.logoutRequest(logoutToken)
                    let atA = try #require(await a.signIn.handle(logout, body: body))
                    #expect(atA.status == .ok)

                    // B: signed out (a GET goes to sign in again); the tokens are gone from the store.
                    guard case .denied(let denied) = await b.signIn.authorize(Self.request("/orders", cookies: cookies)) else {
                        Issue.record("B still knows the user after the back-channel logout")
                        return
                    }
                    #expect(denied.status == .seeOther)
                    #expect(denied.headerFields[.location]?.hasPrefix(provider.url(for: .authorization).absoluteString) == true)
                    #expect(try await a.store.load(tokenKey) == nil)
                    for table in ["oauth2_sessions", "oauth2_web_sessions"] {
                        #expect(try await WebSessionStoreTests.count(database, "\(schema).\(table)") == 0, "\(table)")
                    }
                    // B's cache of the token row goes when B's listener hears of the removal.
                    try await PostgresFixture.eventually("B hears that the tokens were removed") { try await b.store.load(tokenKey) == nil }

                    // The same logout token at B, and again at A: a replay, refused by each (the
                    // replay store is shared; A's own memory is not what refuses it at B).
                    try Self.expectReplayRefused(await b.signIn.handle(logout, body: body), "at B")
                    try Self.expectReplayRefused(await a.signIn.handle(logout, body: body), "at A")

                    // The other way round: a second sign-in (a provider session of its own), its
                    // logout token delivered at B first, then replayed at A.
                    let second = try await Self.signIn(provider, start: b, finish: a)
                    let secondCookies = [Self.configuration.cookieName: second]
                    let secondUser = try #require(Self.user(await b.signIn.authorize(Self.request("/orders", cookies: secondCookies))))
                    let secondSID = try #require(secondUser.record.providerSessionID)
                    #expect(secondSID != sid)
                    #expect(try await Self.user(a.signIn.authorize(Self.request("/orders", cookies: secondCookies)))?.record == secondUser.record)
                    let secondToken = try provider.logoutToken(clientID: Self.clientID, subject: nil, sessionID: secondSID)
                    let (secondLogout, secondBody) = Self.logoutRequest(secondToken)
                    #expect(try #require(await b.signIn.handle(secondLogout, body: secondBody)).status == .ok)
                    guard case .denied = await a.signIn.authorize(Self.request("/orders", cookies: secondCookies)) else {
                        Issue.record("A still knows the second session after its back-channel logout at B")
                        return
                    }
                    #expect(try await WebSessionStoreTests.count(database, "\(schema).oauth2_web_sessions") == 0)
                    try Self.expectReplayRefused(await a.signIn.handle(secondLogout, body: secondBody), "the second token at A")
                    try Self.expectReplayRefused(await b.signIn.handle(secondLogout, body: secondBody), "the second token at B")
                    // The first token, a third time, still refused: replays are remembered for the token's lifetime.
                    try Self.expectReplayRefused(await b.signIn.handle(logout, body: body), "the first token at B again")
                }
            }
        }
    }

    @Test("The user's access token expired: 2 replicas × 20 concurrent requests make one refresh at the provider, and all get its token")
    func oneRefreshForTheWebFleet() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("webfleet")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            try await TestProvider.withProvider(configuration: .demo) { provider in
                #expect(TestProvider.Configuration.demo.rotatesRefreshTokens)
                let clock = ManualDate(PostgresFixture.now)
                try await Self.withReplicas(schema: schema, provider: provider, clock: clock) { a, b in
                    let session = try await Self.signIn(provider, start: b, finish: a)
                    let cookies = [Self.configuration.cookieName: session]
                    let user = try #require(Self.user(await a.signIn.authorize(Self.request("/orders", cookies: cookies))))
                    let key = TokenSession.key(for: a.signIn.client, account: user.record.account)
                    // Expired an hour ago, as every replica's `TokenSession` sees it.
                    var stored = try #require(try await a.store.load(key))
                    let signedIn = stored.tokens
                    stored.tokens.expiresAt = Date().addingTimeInterval(-3600)
                    stored.tokens.issuedAt = Date().addingTimeInterval(-7200)
                    try await a.store.save(stored)
                    provider.resetRequestCounts()

                    // Each request to each replica: its own `authorize`, its own user, its own token session.
                    let start = Gate()
                    let results = try await withThrowingTaskGroup(of: Result<String, any Error>.self) { group in
                        for replica in [a, b] {
                            for _ in 0..<20 {
                                group.addTask {
                                    await start.wait()
                                    guard let user = Self.user(await replica.signIn.authorize(Self.request("/orders", cookies: cookies))) else {
                                        return .failure(CancellationError())
                                    }
                                    do { return .success(try await user.tokens.freshAccessToken()) } catch { return .failure(error) }
                                }
                            }
                        }
                        try await PostgresFixture.eventually("every request is ready") { await start.waiting == 40 }
                        await start.release()
                        return try await group.reduce(into: [Result<String, any Error>]()) { $0.append($1) }
                    }
                    let failures = results.compactMap { if case .failure(let error) = $0 { "\(error)" } else { nil } }
                    #expect(failures.isEmpty, "\(failures.prefix(3))")
                    #expect(provider.requestCount(.token) == 1)
                    let tokens = Set(results.compactMap { try? $0.get() })
                    #expect(tokens.count == 1)
                    let renewed = try #require(tokens.first)
                    #expect(renewed != signedIn.accessToken)
                    #expect(provider.isActive(token: renewed))
                    let refreshed = try #require(try await b.store.load(key))
                    #expect(refreshed.tokens.accessToken == renewed)
                    #expect(refreshed.tokens.refreshToken != signedIn.refreshToken)
                }
            }
        }
    }
}
#endif
