import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2TestSupport
import OAuth2Testing
@testable import OAuth2Web
import Testing

/// What a person who cannot sign in can do to a web app's sign-in: each test is one of the
/// holes issue 26 names, with the embedded provider as the provider and hand-made requests
/// as the browsers'.
@Suite("Web sign-in under abuse", .timeLimit(.minutes(3)))
struct WebSignInAbuseTests {
    typealias App = WebSignInTests.App
    typealias Browser = WebSignInTests.Browser

    /// A memory store that counts the session lookups made through it.
    actor CountingStore: WebSessionStore {
        let inner: MemoryWebSessionStore
        private(set) var lookups = 0

        init(_ inner: MemoryWebSessionStore) { self.inner = inner }

        func session(_ idHash: String, idleLifetime: TimeInterval, now: Date) async throws -> WebSessionRecord? {
            lookups += 1
            return inner.session(idHash, idleLifetime: idleLifetime, now: now)
        }
        func save(_ record: WebSessionRecord) async throws { try inner.save(record) }
        func touch(_ idHash: String, now: Date) async throws { inner.touch(idHash, now: now) }
        func remove(_ idHash: String) async throws -> WebSessionRecord? { inner.remove(idHash) }
        func sessions(issuer: String, subject: String?, providerSessionID: String?) async throws -> [WebSessionRecord] {
            inner.sessions(issuer: issuer, subject: subject, providerSessionID: providerSessionID)
        }
        func removeSessions(issuer: String, subject: String?, providerSessionID: String?) async throws -> [WebSessionRecord] {
            inner.removeSessions(issuer: issuer, subject: subject, providerSessionID: providerSessionID)
        }
        func insert(_ pending: PendingSignIn) async throws { inner.insert(pending) }
        func takePendingSignIn(state: String, now: Date) async throws -> PendingSignIn? {
            inner.takePendingSignIn(state: state, now: now)
        }
    }

    static func randomID() -> String { SecureRandom.token() }

    // MARK: 2. One request, hundreds of lookups

    @Test("A request carrying 240 well-formed session cookies costs at most two store lookups")
    func cookieFloodIsBounded() async throws {
        let memory = MemoryWebSessionStore()
        let counting = CountingStore(memory)
        try await WebSignInTests.withApp(sessions: memory, sessionStore: { _ in counting }) { app in
            let browser = Browser()
            try await app.signIn(browser)
            let valid = try #require(browser.cookies["oauth2-session"])
            let flood = (0..<240).map { _ in "oauth2-session=\(Self.randomID())" }.joined(separator: "; ")
            #expect(flood.utf8.count < WebCookies.maximumHeaderLength)
            var request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:8000", path: "/orders")
            request.headerFields[.cookie] = flood

            let before = await counting.lookups
            #expect(WebSignInTests.denial(await app.signIn.authorize(request)) != nil)
            #expect(try await app.signIn.user(for: request) == nil)
            #expect(await counting.lookups - before <= 4, "two lookups per call at most")

            // The browser's own cookie first, as a browser sends it, still signs in.
            request.headerFields[.cookie] = "oauth2-session=\(valid); " + flood
            #expect(WebSignInTests.user(await app.signIn.authorize(request)) != nil)
        }
    }

    // MARK: 3. A login flood

    /// 40 times the store's capacity. (100,000 hits against a capacity of 1,000 took 35 s of
    /// one core in a debug build, which starved the tests running beside it.)
    @Test("20,000 login hits: the memory store evicts the oldest pending sign-ins, and a real sign-in afterwards succeeds")
    func loginFlood() async throws {
        let store = MemoryWebSessionStore(capacity: 500)
        try await WebSignInTests.withApp(sessions: store) { app in
            for _ in 0..<20_000 {
                // A client that keeps no cookie: each hit is a new browser.
                let answer = await app.signIn.login(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:8000", path: "/auth/login"))
                #expect(answer.status == .seeOther)
            }
            #expect(store.pendingCount <= 500, "memory stays bounded")
            let person = Browser()
            let landed = try await app.signIn(person)
            #expect(landed.status == .seeOther)
            #expect(WebSignInTests.user(await app.user(person)) != nil)
        }
    }

    @Test("One browser holds a bounded number of pending sign-ins: the oldest bindings are cleared")
    func pendingSignInsPerBrowserAreBounded() async throws {
        try await WebSignInTests.withApp { app in
            let browser = Browser()
            for _ in 0..<20 {
                #expect(await app.send(browser, browser.request(.get, "/auth/login")).status == .seeOther)
            }
            let bindings = browser.cookies.keys.filter { $0.hasPrefix("oauth2-session-signin-") }
            #expect(bindings.count <= WebSignIn.maximumPendingSignInsPerBrowser)
            #expect(!bindings.isEmpty)
        }
    }

    @Test("Login hits that push their request (PAR) hold at most a bounded number of provider calls; the others are shed with 503 and Retry-After")
    func pushedSignInStartsAreBounded() async throws {
        let gate = Gate()
        let transport = RecordingTransport { _, _ in
            await gate.pass()  // a provider that is slow to answer the push
            return jsonResponse(201, #"{"request_uri":"urn:ietf:params:oauth:request_uri:r1","expires_in":60}"#)
        }
        let web = WebSignInConfiguration(publicBaseURL: WebSignInTests.base, scopes: ["openid"])
        var configuration = ClientConfiguration(clientID: "web-app", clientSecret: "web-app-secret", redirectURI: web.redirectURI)
        configuration.usePushedAuthorizationRequests = true
        let metadata = try ServerMetadata(fields: [
            "issuer": .string("https://id.example.com"),
            "authorization_endpoint": .string("https://id.example.com/authorize"),
            "token_endpoint": .string("https://id.example.com/token"),
            "pushed_authorization_request_endpoint": .string("https://id.example.com/par"),
        ])
        let client = try OAuth2Client(metadata: metadata, configuration: configuration, environment: HTTPEnvironment(transport: transport))
        let signIn = WebSignIn(client: client, configuration: web, webSessions: MemoryWebSessionStore(), tokenStore: MemoryTokenStore())
        let login = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:8000", path: "/auth/login")
        let limit = WebSignIn.maximumConcurrentSignInStarts

        let starting = (0..<limit).map { _ in Task { await signIn.handle(login, body: []) } }
        await gate.arrived(limit)
        let shed = try #require(await signIn.handle(login, body: []))
        #expect(shed.status == .serviceUnavailable)
        #expect(shed.headerFields[.retryAfter] == "1")
        #expect(transport.count == limit, "the shed start never reached the provider")

        gate.open()
        for task in starting {
            #expect(await task.value?.status == .seeOther)
        }
        #expect(await signIn.handle(login, body: [])?.status == .seeOther, "room again once the pushes are answered")
        #expect(transport.count == limit + 1)
    }

    // MARK: 5. Front-channel logout without iss and sid

    @Test("A front-channel logout without iss and sid is refused by default: a cross-site page cannot sign users out")
    func frontChannelLogoutNeedsIssAndSid() async throws {
        try await WebSignInTests.withApp { app in
            let browser = Browser()
            try await app.signIn(browser)
            // A top-level GET from any site carries the SameSite=Lax cookie.
            let answer = await app.send(browser, browser.request(.get, "/auth/frontchannel-logout"))
            #expect(answer.status == .forbidden)
            #expect(answer.error?.reason == .forgedRequest)
            #expect(WebSignInTests.user(await app.user(browser)) != nil, "the session lives on")
        }
        var lenient = WebSignInConfiguration(publicBaseURL: WebSignInTests.base, scopes: ["openid", "profile", "offline_access"])
        lenient.acceptsFrontChannelLogoutWithoutSessionID = true
        try await WebSignInTests.withApp(configuration: lenient) { app in
            let browser = Browser()
            try await app.signIn(browser)
            #expect(await app.send(browser, browser.request(.get, "/auth/frontchannel-logout")).status == .ok)
            #expect(WebSignInTests.denial(await app.user(browser)) != nil, "opted in: the cookie's session ends")
        }
    }

    // MARK: 7. Cookie prefix and planted cookies

    @Test("On https a custom cookie name keeps the __Host- prefix; on plain-HTTP loopback it is used as given")
    func hostPrefixEnforced() {
        let https = WebSignInConfiguration(publicBaseURL: URL(string: "https://app.example.com")!, cookieName: "shop")
        #expect(https.cookieName == "__Host-shop")
        #expect(https.bindingCookieName.hasPrefix("__Host-shop-signin"))
        var changed = https
        changed.cookieName = "other"
        #expect(changed.cookieName == "__Host-other")
        #expect(WebSignInConfiguration(publicBaseURL: URL(string: "https://app.example.com")!, cookieName: "__Host-x").cookieName == "__Host-x")
        #expect(WebSignInConfiguration(publicBaseURL: URL(string: "http://127.0.0.1:8080")!, cookieName: "shop").cookieName == "shop")
    }

    @Test("A planted sign-in binding is never adopted: a callback the attacker started does not sign the victim in")
    func plantedBindingIsNotAdopted() async throws {
        try await WebSignInTests.withApp { app in
            // The attacker starts a sign-in with a binding value of their choosing and
            // plants the same cookie in the victim's browser (a sibling subdomain can).
            let planted = Self.randomID()
            let attacker = Browser()
            var request = attacker.request(.get, "/auth/login")
            let state = try await {
                let names = ["oauth2-session-signin", "oauth2-session-signin-x"]
                request.headerFields[.cookie] = names.map { "\($0)=\(planted)" }.joined(separator: "; ")
                let start = await app.send(attacker, request)
                for cookie in start.headerFields[values: .setCookie] { #expect(!cookie.contains(planted), "the server issues its own binding") }
                return try await app.atProvider(start)
            }()
            // The victim follows the attacker's callback, carrying the planted values under
            // every name a binding may have.
            let victim = Browser()
            var callback = victim.request(.get, state)
            let stateValue = try #require(URLComponents(string: state)?.queryItems?.first { $0.name == "state" }?.value)
            let names = ["oauth2-session-signin", app.signIn.configuration.bindingCookieName(state: stateValue)]
            callback.headerFields[.cookie] = names.map { "\($0)=\(planted)" }.joined(separator: "; ")
            let answer = await app.send(victim, callback)
            #expect(answer.error?.reason == .browserMismatch)
            #expect(victim.cookies["oauth2-session"] == nil)
        }
    }

    // MARK: 8. nosniff and no echo

    @Test("Every answer of the sign-in routes carries X-Content-Type-Options: nosniff")
    func nosniffEverywhere() async throws {
        try await WebSignInTests.withApp { app in
            let browser = Browser()
            var answers = [await app.send(browser, browser.request(.get, "/auth/login"))]
            answers.append(await app.send(browser, browser.request(.get, "/auth/callback?state=unknown")))
            answers.append(await app.send(browser, browser.request(.post, "/auth/login")))
            answers.append(await app.send(browser, browser.request(.get, "/auth/frontchannel-logout")))
            answers.append(await app.send(browser, browser.request(.post, "/auth/backchannel-logout"), body: "logout_token=x"))
            answers.append(await app.send(browser, browser.request(.post, "/auth/logout"), body: "csrf=x"))
            if case .denied(let denial) = await app.user(browser) { answers.append(denial) }
            try await app.signIn(browser)
            answers.append(await app.send(browser, browser.request(.get, "/auth/frontchannel-logout")))
            for answer in answers {
                #expect(answer.headerFields[HTTPField.Name("X-Content-Type-Options")!] == "nosniff", "\(answer.status)")
            }
        }
    }

    @Test("The provider's error value is never echoed raw: an unregistered code becomes a generic sentence")
    func providerErrorNotEchoed() async throws {
        try await WebSignInTests.withApp { app in
            let browser = Browser()
            let start = await app.send(browser, browser.request(.get, "/auth/login"))
            let location = try #require(start.headerFields[.location].flatMap { URLComponents(string: $0) })
            let state = try #require(location.queryItems?.first { $0.name == "state" }?.value)
            let iss = app.provider.issuer.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let hostile = "Your_account_is_locked_call_555-0100"
            let answer = await app.send(browser, browser.request(.get, "/auth/callback?error=\(hostile)&state=\(state)&iss=\(iss)"))
            #expect(answer.error?.reason == .signInFailed)
            let body = String(decoding: answer.body, as: UTF8.self)
            #expect(!body.contains(hostile))
            #expect(!(answer.error?.message.contains(hostile) ?? true))

            // A registered code is named.
            let again = await app.send(browser, browser.request(.get, "/auth/login"))
            let againState = try #require(again.headerFields[.location].flatMap { URLComponents(string: $0) }?.queryItems?.first { $0.name == "state" }?.value)
            let denied = await app.send(browser, browser.request(.get, "/auth/callback?error=access_denied&state=\(againState)&iss=\(iss)"))
            #expect(String(decoding: denied.body, as: UTF8.self).contains("access_denied"))
        }
    }

    // MARK: 1. A session that cannot be found is no session

    @Test("A cookie naming no session is cleared when the browser is sent to sign in")
    func deadCookieIsCleared() async throws {
        try await WebSignInTests.withApp { app in
            let browser = Browser()
            var request = browser.request(.get, "/orders")
            request.headerFields[.cookie] = "oauth2-session=\(Self.randomID())"
            let denial = try #require(WebSignInTests.denial(await app.signIn.authorize(request)))
            #expect(denial.status == .seeOther)
            #expect(denial.headerFields[values: .setCookie].contains { $0.hasPrefix("oauth2-session=;") && $0.contains("Max-Age=0") })
        }
    }
}
