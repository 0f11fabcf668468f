import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2Internals
import OAuth2JOSE
import OAuth2TestSupport
import OAuth2Testing
@testable import OAuth2Web
import Testing

/// A downstream API as the backend's transport sees it: records each request (head and the
/// body it streamed) and answers from a closure. It stands in for the network only; every
/// rule under test is the backend's.
final class RecordingProxyTransport: WebProxyTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [(HTTPRequest, [UInt8]?, Int?)] = []
    private let answer: @Sendable (HTTPRequest) -> (HTTPResponse, [[UInt8]])

    init(_ answer: @escaping @Sendable (HTTPRequest) -> (HTTPResponse, [[UInt8]]) = { _ in (HTTPResponse(status: .ok), []) }) {
        self.answer = answer
    }

    var requests: [(head: HTTPRequest, body: [UInt8]?, length: Int?)] { lock.withLock { recorded.map { ($0.0, $0.1, $0.2) } } }

    func send(_ request: HTTPRequest, body: WebStreamBody?, contentLength: Int?, deadline: Duration) async throws -> (HTTPResponse, WebStreamBody) {
        var bytes: [UInt8]?
        if let body {
            bytes = []
            for try await chunk in body { bytes! += chunk }
        }
        lock.withLock { recorded.append((request, bytes, contentLength)) }
        let (head, chunks) = answer(request)
        return (head, WebStreamBody(Chunks(chunks: chunks)) { $0 })
    }

    /// Chunks as an async sequence (the body arrives in pieces).
    struct Chunks: AsyncSequence, Sendable {
        let chunks: [[UInt8]]
        struct AsyncIterator: AsyncIteratorProtocol {
            var rest: ArraySlice<[UInt8]>
            mutating func next() async -> [UInt8]? { rest.popFirst() }
        }
        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(rest: chunks[...]) }
    }
}

/// The backend of a single-page app: its rules without a provider (anti-forgery checks,
/// paths, header fields), then its routes with the embedded provider signing the demo user
/// in and a recording transport as the downstream API.
@Suite("Single-page app backend", .timeLimit(.minutes(2)))
struct SinglePageAppBackendTests {
    static let app = URL(string: "http://127.0.0.1:8000")!
    static let header = HTTPField.Name("X-CSRF")!
    static let api = SinglePageAppBackend.ProxiedAPI(pathPrefix: "/bff/api/orders/", destination: URL(string: "http://127.0.0.1:9/v1/")!)

    static func request(_ path: String, _ fields: [(String, String)], method: HTTPRequest.Method = .get) -> HTTPRequest {
        var request = HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1:8000", path: path)
        for (name, value) in fields { request.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return request
    }

    // MARK: Rules

    @Test("Anti-forgery: the header must be 1; Sec-Fetch-Site, when sent, same-origin; Origin, when sent, the app's")
    func antiForgeryMatrix() {
        let own = "http://127.0.0.1:8000"
        // (header, Sec-Fetch-Site, Origin) → refusal reason or nil
        let cases: [(String?, String?, String?, String?)] = [
            ("1", nil, nil, nil),
            ("1", "same-origin", nil, nil),
            ("1", "same-origin", own, nil),
            ("1", nil, own, nil),
            (" 1 ", "same-origin", "http://127.0.0.1:8000/", nil),
            (nil, "same-origin", own, "no_anti_forgery_header"),
            ("0", "same-origin", own, "no_anti_forgery_header"),
            ("true", "same-origin", own, "no_anti_forgery_header"),
            ("", nil, nil, "no_anti_forgery_header"),
            ("1", "same-site", own, "cross_site"),
            ("1", "cross-site", own, "cross_site"),
            ("1", "none", nil, "cross_site"),
            ("1", "cross-site", nil, "cross_site"),
            ("1", "same-origin", "http://evil.example", "cross_origin"),
            ("1", "same-origin", "null", "cross_origin"),
            ("1", nil, "http://127.0.0.1:8001", "cross_origin"),
            ("1", nil, "https://127.0.0.1:8000", "cross_origin"),
            ("1", nil, "not a url", "cross_origin"),
        ]
        for (value, site, origin, expected) in cases {
            var fields: [(String, String)] = []
            if let value { fields.append(("X-CSRF", value)) }
            if let site { fields.append(("Sec-Fetch-Site", site)) }
            if let origin { fields.append(("Origin", origin)) }
            let reason = SinglePageAppBackend.forgeryReason(Self.request("/bff/user", fields), header: Self.header, appOrigin: Self.app)
            #expect(reason == expected, "\(fields)")
        }
        // Twice the header, twice Sec-Fetch-Site or Origin: refused.
        #expect(SinglePageAppBackend.forgeryReason(Self.request("/x", [("X-CSRF", "1"), ("X-CSRF", "1")]), header: Self.header, appOrigin: Self.app) != nil)
        #expect(SinglePageAppBackend.forgeryReason(
            Self.request("/x", [("X-CSRF", "1"), ("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Site", "cross-site")]), header: Self.header, appOrigin: Self.app) != nil)
        #expect(SinglePageAppBackend.forgeryReason(
            Self.request("/x", [("X-CSRF", "1"), ("Origin", own), ("Origin", "http://evil.example")]), header: Self.header, appOrigin: Self.app) != nil)
    }

    @Test("Paths: under the prefix at a segment boundary, query kept; dot segments, encoded slashes and backslashes refused")
    func destinations() {
        #expect(Self.api.pathPrefix == "/bff/api/orders")
        func destination(_ path: String) -> String? {
            SinglePageAppBackend.destination(of: Self.request(path, []), under: Self.api)?.absoluteString
        }
        #expect(destination("/bff/api/orders") == "http://127.0.0.1:9/v1")
        #expect(destination("/bff/api/orders/") == "http://127.0.0.1:9/v1/")
        #expect(destination("/bff/api/orders/42/lines?page=2&q=a%20b") == "http://127.0.0.1:9/v1/42/lines?page=2&q=a%20b")
        for refused in [
            "/bff/api/ordersx", "/bff/api", "/other", "/bff/api/orders/../admin", "/bff/api/orders/%2e%2e/admin", "/bff/api/orders/%2E./x",
            "/bff/api/orders/a/./b", "/bff/api/orders/a%2Fb", "/bff/api/orders/a%5cb", "/bff/api/orders/a\\b", "/bff/api/orders/..",
        ] {
            #expect(destination(refused) == nil, "\(refused)")
        }
    }

    @Test("Request fields: hop-by-hop ones, those Connection names, cookies, credentials, Origin and the anti-forgery header stay behind")
    func requestFields() {
        let request = Self.request("/bff/api/orders", [
            ("Connection", "keep-alive, X-Hop"), ("Keep-Alive", "timeout=5"), ("X-Hop", "1"), ("TE", "trailers"), ("Transfer-Encoding", "chunked"),
            ("Upgrade", "websocket"), ("Proxy-Authorization", "Basic eA=="), ("Proxy-Connection", "keep-alive"), ("Trailer", "X-T"),
            ("Cookie", "oauth2-session=abc; other=1"), ("Authorization", "Bearer from-the-browser"), ("DPoP", "proof"), ("Origin", "http://127.0.0.1:8000"),
            ("X-CSRF", "1"), ("Host", "127.0.0.1:8000"), ("Content-Type", "application/json"), ("Accept", "application/json"), ("X-Request-ID", "r1"), ("Content-Length", "2"),
        ], method: .post)
        let forwarded = SinglePageAppBackend.forwardedRequestFields(request.headerFields, antiForgeryHeader: Self.header)
        #expect(forwarded.map(\.name.canonicalName).sorted() == ["accept", "content-length", "content-type", "x-request-id"])
    }

    @Test("Response fields: hop-by-hop ones, those Connection names and Set-Cookie stay behind; nosniff added")
    func responseFields() {
        var fields = HTTPFields()
        for (name, value) in [
            ("Connection", "close, X-Hop"), ("X-Hop", "1"), ("Transfer-Encoding", "chunked"), ("Set-Cookie", "api=1; Path=/"), ("Set-Cookie", "b=2"),
            ("Proxy-Authenticate", "Basic"), ("Content-Type", "application/json"), ("Content-Length", "12"), ("ETag", "\"x\""),
        ] {
            fields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
        }
        let forwarded = SinglePageAppBackend.forwardedResponseFields(fields)
        #expect(forwarded.map(\.name.canonicalName).sorted() == ["content-length", "content-type", "etag", "x-content-type-options"])
        #expect(forwarded[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
    }

    @Test("A DPoP nonce challenge is one: 401, DPoP scheme, use_dpop_nonce, a DPoP-Nonce header")
    func nonceChallenge() {
        var challenge = HTTPResponse(status: .unauthorized)
        challenge.headerFields[.wwwAuthenticate] = #"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof""#
        challenge.headerFields[.dpopNonce] = "n-1"
        #expect(SinglePageAppBackend.dpopNonceChallenge(challenge) == "n-1")
        var bearer = challenge
        bearer.headerFields[.wwwAuthenticate] = #"Bearer error="invalid_token""#
        #expect(SinglePageAppBackend.dpopNonceChallenge(bearer) == nil)
        var noNonce = challenge
        noNonce.headerFields[.dpopNonce] = nil
        #expect(SinglePageAppBackend.dpopNonceChallenge(noNonce) == nil)
        var ok = challenge
        ok.status = .ok
        #expect(SinglePageAppBackend.dpopNonceChallenge(ok) == nil)
    }

    // MARK: Routes

    /// The sign-in app of WebSignInTests with a backend over `transport`.
    static func withBackend(
        transport: RecordingProxyTransport, sessionStore: @escaping (MemoryWebSessionStore) -> any WebSessionStore = { $0 },
        _ body: (WebSignInTests.App, SinglePageAppBackend) async throws -> Void
    ) async throws {
        try await WebSignInTests.withApp(sessionStore: sessionStore) { app in
            let backend = SinglePageAppBackend(
                signIn: app.signIn, configuration: .init(apis: [Self.api]), transport: transport)
            try await body(app, backend)
        }
    }

    static func call(_ backend: SinglePageAppBackend, _ browser: WebSignInTests.Browser, _ method: HTTPRequest.Method = .get, _ path: String,
                     fields: [(String, String)] = [("X-CSRF", "1"), ("Sec-Fetch-Site", "same-origin")], body: [UInt8]? = nil) async throws -> (HTTPResponse, [UInt8]) {
        var request = browser.request(method, path)
        for (name, value) in fields { request.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        if let body { request.headerFields[.contentLength] = String(body.count) }
        let answer = try #require(await backend.handle(request, body: body.map { WebStreamBody($0) }))
        browser.take(WebResponse(status: answer.head.status, headerFields: answer.head.headerFields))
        var bytes: [UInt8] = []
        for try await chunk in answer.body { bytes += chunk }
        return (answer.head, bytes)
    }

    /// The one user's stored tokens.
    static func storedTokens(_ app: WebSignInTests.App) async throws -> StoredTokenSession {
        let key = try #require(try await app.tokens.list().first)
        return try #require(try await app.tokens.load(key))
    }

    static func json(_ bytes: [UInt8]) throws -> [String: JSONValue] {
        try JSONDecoder().decode([String: JSONValue].self, from: Data(bytes))
    }

    @Test("The user route: 401 JSON before sign-in, the claims and CSRF token after, session_expired (cookie cleared) once it ends")
    func userRoute() async throws {
        try await Self.withBackend(transport: RecordingProxyTransport()) { app, backend in
            let browser = WebSignInTests.Browser()
            let (before, beforeBody) = try await Self.call(backend, browser, .get, "/bff/user")
            #expect(before.status == .unauthorized)
            #expect(before.headerFields[.location] == nil)
            #expect(before.headerFields[.contentType] == "application/json")
            #expect(try Self.json(beforeBody)["error"] == "not_signed_in")

            try await app.signIn(browser)
            let (signedIn, body) = try await Self.call(backend, browser, .get, "/bff/user")
            #expect(signedIn.status == .ok)
            #expect(signedIn.headerFields[.cacheControl] == "no-store")
            let user = try Self.json(body)
            #expect(user["sub"]?.stringValue == TestProvider.Demo.subject)
            #expect(user["claims"]?.objectValue?["sub"]?.stringValue == TestProvider.Demo.subject)
            #expect(user["csrf"]?.stringValue?.isEmpty == false)
            #expect(user["logout"] == "/auth/logout")
            // No token of any kind in what the page receives.
            let stored = try await Self.storedTokens(app)
            let text = String(decoding: body, as: UTF8.self)
            for token in [stored.tokens.accessToken, stored.tokens.refreshToken, stored.tokens.idToken].compactMap(\.self) {
                #expect(!text.contains(token))
            }

            let (post, _) = try await Self.call(backend, browser, .post, "/bff/user")
            #expect(post.status == .methodNotAllowed)

            app.date.advance(by: 25 * 3600)  // past the idle lifetime
            let (expired, expiredBody) = try await Self.call(backend, browser, .get, "/bff/user")
            #expect(expired.status == .unauthorized)
            #expect(try Self.json(expiredBody)["error"] == "session_expired")
            #expect(expired.headerFields[values: .setCookie].contains { $0.hasPrefix("oauth2-session=;") && $0.contains("Max-Age=0") })
            #expect(browser.cookies["oauth2-session"] == nil)
            let (after, afterBody) = try await Self.call(backend, browser, .get, "/bff/user")
            #expect(after.status == .unauthorized)
            #expect(try Self.json(afterBody)["error"] == "not_signed_in")
        }
    }

    @Test("Without the anti-forgery header: 403 before any session is read, on the user route and the API")
    func forgedRequestsTouchNothing() async throws {
        let transport = RecordingProxyTransport()
        let reads = Locked(0)
        try await Self.withBackend(transport: transport, sessionStore: { CountingSessionStore(base: $0, reads: reads) }) { app, backend in
            let browser = WebSignInTests.Browser()
            try await app.signIn(browser)
            let before = reads.withLock { $0 }
            for path in ["/bff/user", "/bff/api/orders/1"] {
                for fields in [[], [("X-CSRF", "1"), ("Sec-Fetch-Site", "cross-site")], [("X-CSRF", "1"), ("Origin", "http://evil.example")]] {
                    let (answer, body) = try await Self.call(backend, browser, .get, path, fields: fields)
                    #expect(answer.status == .forbidden, "\(path) \(fields)")
                    #expect(try Self.json(body)["error"] == "forbidden")
                }
            }
            #expect(reads.withLock { $0 } == before)
            #expect(transport.requests.isEmpty)
        }
    }

    @Test("Proxy: the user's token goes, the browser's cookies do not; bodies pass both ways; the API's cookies stay behind")
    func proxies() async throws {
        let transport = RecordingProxyTransport { request in
            var head = HTTPResponse(status: .created)
            head.headerFields = [.contentType: "application/json", .setCookie: "api=1", .contentLength: "11"]
            return (head, [Array("{\"id\":".utf8), Array("42}".utf8), Array("  ".utf8)])
        }
        try await Self.withBackend(transport: transport) { app, backend in
            let browser = WebSignInTests.Browser()
            // Not signed in: 401, and nothing sent.
            let (anonymous, anonymousBody) = try await Self.call(backend, browser, .get, "/bff/api/orders/1")
            #expect(anonymous.status == .unauthorized)
            #expect(try Self.json(anonymousBody)["error"] == "not_signed_in")
            #expect(transport.requests.isEmpty)

            try await app.signIn(browser)
            let payload = Array(repeating: Array("order line;".utf8), count: 100).flatMap { $0 }
            let (answer, body) = try await Self.call(
                backend, browser, .post, "/bff/api/orders/new?x=1",
                fields: [("X-CSRF", "1"), ("Sec-Fetch-Site", "same-origin"), ("Content-Type", "text/plain"), ("Origin", "http://127.0.0.1:8000")], body: payload)
            #expect(answer.status == .created)
            #expect(String(decoding: body, as: UTF8.self) == "{\"id\":42}  ")
            #expect(answer.headerFields[.setCookie] == nil)
            #expect(answer.headerFields[.contentType] == "application/json")

            let sent = try #require(transport.requests.first)
            #expect(sent.head.url?.absoluteString == "http://127.0.0.1:9/v1/new?x=1")
            #expect(sent.head.method == .post)
            let stored = try await Self.storedTokens(app)
            #expect(sent.head.headerFields[.authorization] == "Bearer " + stored.tokens.accessToken)
            #expect(sent.head.headerFields[.cookie] == nil)
            #expect(sent.head.headerFields[HTTPField.Name("X-CSRF")!] == nil)
            #expect(sent.head.headerFields[.origin] == nil)
            #expect(sent.head.headerFields[.contentType] == "text/plain")
            #expect(sent.body == payload)
            #expect(sent.length == payload.count)
        }
    }

    @Test("Proxy: the API's 401 is 'sign in again' (token_refused), never its own body or challenge")
    func downstreamUnauthorized() async throws {
        let transport = RecordingProxyTransport { _ in
            var head = HTTPResponse(status: .unauthorized)
            head.headerFields[.wwwAuthenticate] = #"Bearer error="invalid_token""#
            return (head, [Array("secret detail".utf8)])
        }
        try await Self.withBackend(transport: transport) { app, backend in
            let browser = WebSignInTests.Browser()
            try await app.signIn(browser)
            let (answer, body) = try await Self.call(backend, browser, .get, "/bff/api/orders")
            #expect(answer.status == .unauthorized)
            #expect(answer.headerFields[.wwwAuthenticate] == nil)
            #expect(try Self.json(body)["error"] == "token_refused")
        }
    }

    @Test("Proxy: 50 concurrent calls on an expired token make one refresh; tokens that cannot be renewed end the session")
    func oneRefreshForConcurrentCalls() async throws {
        let transport = RecordingProxyTransport()
        try await Self.withBackend(transport: transport) { app, backend in
            let browser = WebSignInTests.Browser()
            try await app.signIn(browser)
            let key = try #require(try await app.tokens.list().first)
            var stored = try #require(try await app.tokens.load(key))
            let oldToken = stored.tokens.accessToken
            stored.tokens.expiresAt = Date().addingTimeInterval(-60)
            try await app.tokens.save(stored)
            let refreshesBefore = app.provider.requestCount(.token)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<50 {
                    group.addTask { try await Self.call(backend, browser, .get, "/bff/api/orders/\(index)").0.status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .ok })
            #expect(app.provider.requestCount(.token) == refreshesBefore + 1)
            let sentTokens = Set(transport.requests.compactMap { $0.head.headerFields[.authorization] })
            #expect(sentTokens.count == 1)
            #expect(!sentTokens.contains("Bearer " + oldToken))

            // The provider forgets the grant: the next renewal is refused, the session ends.
            app.provider.revokeAll()
            stored = try #require(try await app.tokens.load(key))
            stored.tokens.expiresAt = Date().addingTimeInterval(-60)
            try await app.tokens.save(stored)
            let (ended, body) = try await Self.call(backend, browser, .get, "/bff/api/orders/1")
            #expect(ended.status == .unauthorized)
            #expect(try Self.json(body)["error"] == "session_expired")
            #expect(browser.cookies["oauth2-session"] == nil)
            #expect(try await app.tokens.load(key) == nil)
        }
    }
}

/// A session store that counts the sessions read through it.
struct CountingSessionStore: WebSessionStore {
    let base: MemoryWebSessionStore
    let reads: Locked<Int>

    func session(_ idHash: String, idleLifetime: TimeInterval, now: Date) async throws -> WebSessionRecord? {
        reads.withLock { $0 += 1 }
        return try await base.session(idHash, idleLifetime: idleLifetime, now: now)
    }
    func save(_ record: WebSessionRecord) async throws { try await base.save(record) }
    func touch(_ idHash: String, now: Date) async throws { try await base.touch(idHash, now: now) }
    func remove(_ idHash: String) async throws -> WebSessionRecord? { try await base.remove(idHash) }
    func sessions(issuer: String, subject: String?, providerSessionID: String?) async throws -> [WebSessionRecord] {
        try await base.sessions(issuer: issuer, subject: subject, providerSessionID: providerSessionID)
    }
    func removeSessions(issuer: String, subject: String?, providerSessionID: String?) async throws -> [WebSessionRecord] {
        try await base.removeSessions(issuer: issuer, subject: subject, providerSessionID: providerSessionID)
    }
    func insert(_ pending: PendingSignIn) async throws { try await base.insert(pending) }
    func takePendingSignIn(state: String, now: Date) async throws -> PendingSignIn? { try await base.takePendingSignIn(state: state, now: now) }
}
