import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2JOSE
@testable import OAuth2Web
import Testing

/// The rules under WebSignIn's routes, without a provider: where `returnTo` may lead, how
/// cookies are read and written, which cookies are `Secure`, what a requirement asks of a
/// session, how the memory store expires and ends sessions, which requests' bodies are read.
@Suite struct WebSignInRulesTests {
    static let https = WebSignInConfiguration(publicBaseURL: URL(string: "https://app.example.com")!)

    // MARK: returnTo

    @Test("returnTo: a path of the app is kept; other hosts, scheme-relative URLs and odd characters become nil")
    func returnTo() {
        let configuration = WebSignInConfiguration(
            publicBaseURL: URL(string: "https://app.example.com")!, allowedReturnOrigins: [URL(string: "https://shop.example.com")!])
        for kept in ["/", "/profile", "/orders?page=2&sort=date", "https://app.example.com/x", "https://APP.example.com:443/y", "https://shop.example.com/cart"] {
            #expect(ReturnTo.checked(kept, configuration: configuration) == kept, "\(kept)")
        }
        for refused in [
            "", "//evil.example/x", "/\\evil.example", "https://evil.example/", "https://app.example.com.evil.example/",
            "http://app.example.com/", "https://app.example.com:8443/", "https://user@app.example.com/", "javascript:alert(1)",
            "data:text/html,x", "/a\nb", "/a\tb", "/a\u{7F}", "profile", "/" + String(repeating: "a", count: 2048),
        ] {
            #expect(ReturnTo.checked(refused, configuration: configuration) == nil, "\(refused)")
        }
        #expect(ReturnTo.checked(nil, configuration: configuration) == nil)
    }

    // MARK: Cookies

    @Test("Cookies: every value of a name, in order, across fields; quotes removed; other names and malformed pairs ignored")
    func cookieValues() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .cookie, value: "a=1; session=first; b"))
        fields.append(HTTPField(name: .cookie, value: #" session="second" ;c=3"#))
        #expect(WebCookies.values(named: "session", in: fields) == ["first", "second"])
        #expect(WebCookies.values(named: "a", in: fields) == ["1"])
        #expect(WebCookies.values(named: "b", in: fields).isEmpty)
        #expect(WebCookies.values(named: "sess", in: fields).isEmpty)

        // A field longer than the limit is ignored whole.
        var long = HTTPFields()
        long.append(HTTPField(name: .cookie, value: "session=x; pad=" + String(repeating: "p", count: WebCookies.maximumHeaderLength)))
        #expect(WebCookies.values(named: "session", in: long).isEmpty)
    }

    @Test("Cookies: ids read in place from ASCII fields are those of the general reader: spacing, quotes, empty pairs, non-ASCII, limits")
    func cookieIDsAgreeWithTheGeneralReader() {
        let ids = (0..<4).map { _ in SecureRandom.token() }
        // Pieces of Cookie fields, ASCII and not (NBSP and IDEOGRAPHIC SPACE are trimmed by
        // the general reader; KELVIN SIGN is "K" as a String).
        let pieces = [
            "session=\(ids[0])", " session=\(ids[1])", "session =\(ids[2])", "session= \(ids[3])\t", "session=\"\(ids[1])\"",
            "\tsession=\(ids[0])", "session=\"\(ids[2])", "session=\(ids[3])x", "sessions=\(ids[0])", "xsession=\(ids[1])",
            "session", "", " ", "=", "session=", "a=1", "session=\u{A0}\(ids[2])", "session\u{3000}=\(ids[3])", "\u{212A}ey=\(ids[0])",
            "session=\(ids[1])=", "session==\(ids[1])", "\"session\"=\(ids[2])",
        ]
        var generator = SystemRandomNumberGenerator()
        for round in 0..<400 {
            var fields = HTTPFields()
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let chosen = (0..<Int.random(in: 0...5, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }
                fields.append(HTTPField(name: .cookie, value: chosen.joined(separator: Bool.random(using: &generator) ? ";" : "; ")))
            }
            for name in ["session", "Key", "\u{212A}ey"] {
                var expected: [String] = []
                for value in WebCookies.values(named: name, in: fields) where WebCookies.isWellFormedID(value) && !expected.contains(value) {
                    expected.append(value)
                }
                for limit in 0...3 {
                    #expect(WebCookies.ids(named: name, in: fields, limit: limit) == Array(expected.prefix(limit)), "round \(round): \(fields), \(name), \(limit)")
                }
            }
        }
    }

    @Test("Cookies: a session id is 43 base64url characters, nothing else")
    func wellFormedID() {
        #expect(WebCookies.isWellFormedID(SecureRandom.token()))
        #expect(WebCookies.isWellFormedID(String(repeating: "A", count: 42) + "_"))
        #expect(!WebCookies.isWellFormedID(String(repeating: "A", count: 42)))
        #expect(!WebCookies.isWellFormedID(String(repeating: "A", count: 44)))
        #expect(!WebCookies.isWellFormedID(String(repeating: "A", count: 42) + "="))
        #expect(!WebCookies.isWellFormedID(String(repeating: "A", count: 42) + "+"))
        #expect(!WebCookies.isWellFormedID(String(repeating: "é", count: 43)))
    }

    @Test("Set-Cookie: HttpOnly, SameSite=Lax, Path=/, Secure when asked; Max-Age 0 deletes, never negative")
    func setCookie() {
        #expect(WebCookies.setCookie(name: "s", value: "v", maxAge: 60, secure: false) == "s=v; Path=/; Max-Age=60; HttpOnly; SameSite=Lax")
        #expect(WebCookies.setCookie(name: "s", value: "v", maxAge: 60, secure: true) == "s=v; Path=/; Max-Age=60; HttpOnly; SameSite=Lax; Secure")
        #expect(WebCookies.setCookie(name: "s", value: "", maxAge: -5, secure: true).contains("Max-Age=0;"))
    }

    @Test("Cookies are Secure but on plain-HTTP loopback; an https app's cookie is __Host- prefixed")
    func secureCookies() {
        for loopback in ["http://127.0.0.1:8080", "http://localhost:3000", "http://[::1]:8080", "http://LOCALHOST"] {
            #expect(!WebSignInConfiguration(publicBaseURL: URL(string: loopback)!).securesCookies, "\(loopback)")
        }
        for other in ["https://127.0.0.1:8443", "https://app.example.com", "http://app.example.com", "http://10.0.0.5:8080"] {
            #expect(WebSignInConfiguration(publicBaseURL: URL(string: other)!).securesCookies, "\(other)")
        }
        #expect(Self.https.cookieName == "__Host-oauth2-session")
        #expect(Self.https.bindingCookieName(state: "s").hasPrefix("__Host-oauth2-session-signin-"))
        #expect(WebSignInConfiguration(publicBaseURL: URL(string: "http://127.0.0.1:8080")!).cookieName == "oauth2-session")
    }

    @Test("The redirect URI and every location come from the public base URL, with or without its trailing slash")
    func publicURLs() {
        let slash = WebSignInConfiguration(publicBaseURL: URL(string: "https://app.example.com/base/")!)
        #expect(slash.redirectURI.absoluteString == "https://app.example.com/base/auth/callback")
        #expect(slash.url("profile").absoluteString == "https://app.example.com/base/profile")
        #expect(Self.https.redirectURI.absoluteString == "https://app.example.com/auth/callback")
    }

    // MARK: Requirements

    static func record(
        scopes: [String] = ["openid"], claims: [String: JSONValue] = [:], now: Date = Date(timeIntervalSince1970: 1_800_000_000)
    ) -> WebSessionRecord {
        WebSessionRecord(
            idHash: "h", account: "a", issuer: "https://op.example.com", subject: "alice", providerSessionID: "sid-1", claims: claims,
            scopes: scopes, csrfToken: "c", createdAt: now, lastSeenAt: now, absoluteExpiry: now.addingTimeInterval(3600))
    }

    @Test("A requirement: claims that do not match forbid; scopes, acr and an old sign-in ask for a step-up")
    func requirements() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let record = Self.record(
            scopes: ["openid", "orders:read"],
            claims: ["groups": ["staff", "admins"], "tenant": "acme", "acr": "mfa", "auth_time": .integer(1_800_000_000 - 100)])
        #expect(WebAccessRequirement().shortfall(of: record, now: now) == .none)
        #expect(WebAccessRequirement(scopes: ["orders:read"], claims: ["groups": "admins", "tenant": "acme"], acrValues: ["mfa", "hwk"], maxAge: 300)
            .shortfall(of: record, now: now) == .none)
        #expect(WebAccessRequirement(claims: ["groups": "finance"]).shortfall(of: record, now: now) == .forbidden)
        #expect(WebAccessRequirement(claims: ["tenant": "other"]).shortfall(of: record, now: now) == .forbidden)
        #expect(WebAccessRequirement(claims: ["missing": "x"]).shortfall(of: record, now: now) == .forbidden)
        #expect(WebAccessRequirement(scopes: ["orders:write"]).shortfall(of: record, now: now) == .stepUp)
        #expect(WebAccessRequirement(acrValues: ["hwk"]).shortfall(of: record, now: now) == .stepUp)
        #expect(WebAccessRequirement(maxAge: 60).shortfall(of: record, now: now) == .stepUp)
        // A claim mismatch wins over a step-up: a new sign-in would not change it.
        #expect(WebAccessRequirement(scopes: ["orders:write"], claims: ["tenant": "other"]).shortfall(of: record, now: now) == .forbidden)
        // Without auth_time, max_age cannot be met; without acr, acr_values neither.
        let bare = Self.record()
        #expect(WebAccessRequirement(maxAge: 3600).shortfall(of: bare, now: now) == .stepUp)
        #expect(WebAccessRequirement(acrValues: ["mfa"]).shortfall(of: bare, now: now) == .stepUp)
    }

    // MARK: The memory store

    @Test("The memory store: a session ends after its idle lifetime or at its absolute expiry, whichever comes first")
    func memoryStoreExpiry() async throws {
        let store = MemoryWebSessionStore()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try store.save(Self.record(now: start))
        #expect(store.session("h", idleLifetime: 600, now: start.addingTimeInterval(599)) != nil)
        store.touch("h", now: start.addingTimeInterval(599))
        #expect(store.session("h", idleLifetime: 600, now: start.addingTimeInterval(1100)) != nil)
        // The absolute expiry (an hour) holds however recent the last use.
        store.touch("h", now: start.addingTimeInterval(3500))
        #expect(store.session("h", idleLifetime: 600, now: start.addingTimeInterval(3600)) == nil)
        // …and an expired session is gone.
        #expect(store.count == 0)
    }

    @Test("The memory store: logouts end the sessions of a subject or a provider session, of that issuer only")
    func memoryStoreRemoval() async throws {
        let store = MemoryWebSessionStore()
        var first = Self.record()
        first.idHash = "1"
        var second = Self.record()
        second.idHash = "2"
        second.providerSessionID = "sid-2"
        var other = Self.record()
        other.idHash = "3"
        other.issuer = "https://other.example.com"
        for record in [first, second, other] { try store.save(record) }

        #expect(store.removeSessions(issuer: first.issuer, subject: nil, providerSessionID: nil).isEmpty)
        #expect(store.removeSessions(issuer: first.issuer, subject: "alice", providerSessionID: "sid-2").map(\.idHash) == ["2"])
        #expect(store.removeSessions(issuer: first.issuer, subject: "bob", providerSessionID: nil).isEmpty)
        #expect(store.removeSessions(issuer: first.issuer, subject: "alice", providerSessionID: nil).map(\.idHash) == ["1"])
        #expect(store.count == 1)
        #expect(store.remove("3")?.issuer == "https://other.example.com")
        #expect(store.remove("3") == nil)
    }

    @Test("The memory store: a pending sign-in completes once, and not after it expired; a full store drops the oldest pending sign-in and refuses more sessions")
    func memoryStorePending() async throws {
        let store = MemoryWebSessionStore(capacity: 1)
        let client = try OAuth2Client(
            metadata: ServerMetadata(issuer: URL(string: "https://op.example.com")!, authorizationEndpoint: URL(string: "https://op.example.com/authorize")!),
            configuration: ClientConfiguration(clientID: "web", redirectURI: URL(string: "https://app.example.com/auth/callback")!, scopes: ["openid"]),
            environment: HTTPEnvironment(transport: NoNetwork()))
        let request = try await client.startAuthorization()
        let now = Date()
        let pending = PendingSignIn(request: request, browserBindingHash: "b", returnTo: "/", requirement: WebAccessRequirement(), expiresAt: now.addingTimeInterval(600))
        store.insert(pending)
        #expect(store.takePendingSignIn(state: request.state, now: now)?.returnTo == "/")
        #expect(store.takePendingSignIn(state: request.state, now: now) == nil)

        store.insert(pending)
        #expect(store.takePendingSignIn(state: request.state, now: now.addingTimeInterval(601)) == nil)

        // Full: the oldest pending sign-in makes room for the new one.
        store.insert(pending)
        var another = pending
        another.request = try await client.startAuthorization()
        store.insert(another)
        #expect(store.pendingCount == 1)
        #expect(store.takePendingSignIn(state: request.state, now: now) == nil)
        #expect(store.takePendingSignIn(state: another.request.state, now: now) != nil)
        try store.save(Self.record())
        var second = Self.record()
        second.idHash = "other"
        #expect(throws: MemoryWebSessionStore.Full.self) { try store.save(second) }
    }

    // MARK: Routes

    /// A web sign-in on ``https`` whose client cannot send anything.
    static func offlineSignIn() throws -> WebSignIn {
        let client = try OAuth2Client(
            metadata: ServerMetadata(issuer: URL(string: "https://op.example.com")!, authorizationEndpoint: URL(string: "https://op.example.com/authorize")!),
            configuration: ClientConfiguration(clientID: "web"), environment: HTTPEnvironment(transport: NoNetwork()))
        return WebSignIn(client: client, configuration: https)
    }

    @Test("Routes: the path alone, without query or fragment, byte for byte; anything else is the app's")
    func routes() throws {
        let signIn = try Self.offlineSignIn()
        func route(_ path: String?) -> WebSignIn.Route? {
            signIn.route(of: HTTPRequest(method: .get, scheme: "https", authority: "app.example.com", path: path))
        }
        let configuration = Self.https
        #expect(route(configuration.loginPath) == .login)
        #expect(route(configuration.loginPath + "?returnTo=%2Fx") == .login)
        #expect(route(configuration.callbackPath + "?code=c&state=s#frag") == .callback)
        #expect(route(configuration.logoutPath) == .logout)
        #expect(route(configuration.backChannelLogoutPath + "#") == .backChannelLogout)
        #expect(route(configuration.frontChannelLogoutPath + "?iss=x&sid=y") == .frontChannelLogout)
        for other in [nil, "/", "/profile", configuration.loginPath + "/", configuration.loginPath.uppercased(), "?" + configuration.loginPath,
                      String(configuration.loginPath.dropLast()) + "é", "/auth/log%69n"] {
            #expect(route(other) == nil, "\(other ?? "nil")")
        }
    }

    // MARK: Bodies

    @Test("Only a POST to the logout or back-channel logout route has its body read, at most 32 KB of form")
    func bodies() throws {
        let signIn = try Self.offlineSignIn()
        func request(_ method: HTTPRequest.Method, _ path: String) -> HTTPRequest {
            HTTPRequest(method: method, scheme: "https", authority: "app.example.com", path: path)
        }
        #expect(signIn.readsBody(request(.post, "/auth/logout")))
        #expect(signIn.readsBody(request(.post, "/auth/backchannel-logout?x=1")))
        #expect(!signIn.readsBody(request(.get, "/auth/logout")))
        #expect(!signIn.readsBody(request(.post, "/auth/callback")))
        #expect(!signIn.readsBody(request(.post, "/profile")))

        #expect(WebSignIn.form(Array("csrf=a%20b&csrf=second&x=".utf8)) == ["csrf": "a b", "x": ""])
        #expect(WebSignIn.form(Array(repeating: UInt8(ascii: "a"), count: WebSignIn.maximumBodySize + 1)) == nil)
        #expect(WebSignIn.form([0xFF, 0xFE]) == nil)
    }
}

/// A transport for rules that need no network: any request is an error.
private struct NoNetwork: HTTPTransport {
    struct Unexpected: Error {}
    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) { throw Unexpected() }
}
