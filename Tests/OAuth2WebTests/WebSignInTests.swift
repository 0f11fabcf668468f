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

/// The web sign-in's rules, with the embedded provider as the provider (its authorization
/// endpoint signs the demo user in, as a browser would) and hand-made requests as the
/// browser's: no web framework.
@Suite("Web sign-in", .timeLimit(.minutes(1)))
struct WebSignInTests {
    static let base = URL(string: "http://127.0.0.1:8000")!

    /// A browser: its cookies, sent with each request and updated by each `Set-Cookie`.
    final class Browser: @unchecked Sendable {
        private let lock = NSLock()
        private var jar: [String: String] = [:]

        var cookies: [String: String] { lock.withLock { jar } }

        func request(_ method: HTTPRequest.Method, _ pathAndQuery: String, origin: String? = nil) -> HTTPRequest {
            var request = HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1:8000", path: pathAndQuery)
            let cookies = lock.withLock { jar }
            if !cookies.isEmpty {
                request.headerFields[.cookie] = cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
            }
            if let origin { request.headerFields[.origin] = origin }
            return request
        }

        func take(_ response: WebResponse) {
            for cookie in response.headerFields[values: .setCookie] {
                let pair = cookie.split(separator: ";", maxSplits: 1)[0]
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                let maxAge = cookie.range(of: "Max-Age=0;") != nil
                lock.withLock { jar[parts[0]] = maxAge ? nil : (parts.count > 1 ? parts[1] : "") }
            }
        }
    }

    /// One app on one provider.
    struct App {
        let provider: TestProvider
        let signIn: WebSignIn
        let sessions: MemoryWebSessionStore
        let tokens: MemoryTokenStore
        let date: ManualDate

        /// Sends a request to the app's sign-in routes, or to a protected route (`requiring`).
        func send(_ browser: Browser, _ request: HTTPRequest, body: String = "") async -> WebResponse {
            let response = await signIn.handle(request, body: Array(body.utf8)) ?? WebResponse(status: .notFound)
            browser.take(response)
            return response
        }

        /// Follows a redirect to the provider, lets it sign the user in, and returns the
        /// callback's path and query.
        func atProvider(_ response: WebResponse) async throws -> String {
            let location = try #require(response.headerFields[.location].flatMap(URL.init(string:)))
            #expect(location.host == provider.issuer.host)
            let callback = try await provider.followRedirect(from: location)
            let components = try #require(URLComponents(url: callback, resolvingAgainstBaseURL: false))
            return components.path + "?" + (components.percentEncodedQuery ?? "")
        }

        /// A full sign-in of `browser`, from the login route; returns the callback's answer.
        @discardableResult
        func signIn(_ browser: Browser, returnTo: String = "/") async throws -> WebResponse {
            let start = await send(browser, browser.request(.get, "/auth/login?returnTo=\(returnTo.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"))
            #expect(start.status == .seeOther)
            return await send(browser, browser.request(.get, try await atProvider(start)))
        }

        func user(_ browser: Browser, requiring requirement: WebAccessRequirement = WebAccessRequirement()) async -> WebSignIn.Access {
            await signIn.authorize(browser.request(.get, "/orders"), requiring: requirement)
        }
    }

    static let clientID = "web-app"
    static let secret = "web-app-secret"

    static func withApp(
        configuration: WebSignInConfiguration = WebSignInConfiguration(publicBaseURL: base, scopes: ["openid", "profile", "offline_access"]),
        log: CapturedLog? = nil, sessions: MemoryWebSessionStore = MemoryWebSessionStore(),
        sessionStore: (MemoryWebSessionStore) -> any WebSessionStore = { $0 },
        tokenStore: (MemoryTokenStore) -> any TokenStore = { $0 }, downstreamTokens: DownstreamTokens? = nil,
        jarm: JARMOptions? = nil,
        _ body: (App) async throws -> Void
    ) async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            provider.register(TestProvider.Client(
                id: clientID, secret: secret, redirectURIs: [configuration.redirectURI],
                postLogoutRedirectURIs: [configuration.url(configuration.postLogoutPath)]))
            var clientConfiguration = ClientConfiguration(clientID: clientID, clientSecret: secret, redirectURI: configuration.redirectURI)
            clientConfiguration.jarm = jarm
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer), configuration: clientConfiguration, environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let tokens = MemoryTokenStore()
            let date = ManualDate()
            let signIn = WebSignIn(
                client: client, configuration: configuration, webSessions: sessionStore(sessions), tokenStore: tokenStore(tokens),
                downstreamTokens: downstreamTokens, logger: log?.logger() ?? Logger(label: "test"), now: date.function)
            try await body(App(provider: provider, signIn: signIn, sessions: sessions, tokens: tokens, date: date))
        }
    }

    static func user(_ access: WebSignIn.Access) -> WebUser? {
        if case .granted(let user) = access { return user }
        return nil
    }

    static func denial(_ access: WebSignIn.Access) -> WebResponse? {
        if case .denied(let response) = access { return response }
        return nil
    }

    @Test("A JARM sign-in: the callback's one response JWT finds the pending sign-in and is verified")
    func jarmSignIn() async throws {
        try await Self.withApp(jarm: JARMOptions()) { app in
            let browser = Browser()
            let start = await app.send(browser, browser.request(.get, "/auth/login"))
            let callbackPath = try await app.atProvider(start)
            #expect(callbackPath.contains("?response=") && !callbackPath.contains("state="))
            let callback = await app.send(browser, browser.request(.get, callbackPath))
            #expect(callback.status == .seeOther)
            #expect(Self.user(await app.user(browser))?.subject == TestProvider.Demo.subject)

            // A plain answer to a JARM sign-in (a downgrade) finds its sign-in but fails it.
            let again = await app.send(browser, browser.request(.get, "/auth/login"))
            let location = try #require(again.headerFields[.location].flatMap(URL.init(string:)))
            let plain = try await app.provider.followRedirect(from: URL(string: location.absoluteString.replacingOccurrences(of: "&response_mode=jwt", with: ""))!)
            let refused = await app.send(browser, browser.request(.get, "/auth/callback?" + (plain.query ?? "")))
            #expect(refused.status != .seeOther)
        }
    }

    @Test("A sign-in: PKCE, state and nonce sent; a new opaque cookie; the user and their tokens on the server")
    func signIn() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            let start = await app.send(browser, browser.request(.get, "/auth/login?returnTo=%2Forders%3Fpage%3D2"))
            let authorize = try #require(start.headerFields[.location].flatMap(URL.init(string:)))
            let query = Dictionary(uniqueKeysWithValues: (URLComponents(url: authorize, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            #expect(query["code_challenge_method"] == "S256")
            #expect(query["state"]?.isEmpty == false)
            #expect(query["nonce"]?.isEmpty == false)
            #expect(query["redirect_uri"] == "http://127.0.0.1:8000/auth/callback")
            #expect(start.headerFields[.cacheControl] == "no-store")
            #expect(browser.cookies.keys.contains { $0.hasPrefix("oauth2-session-signin-") })
            #expect(browser.cookies["oauth2-session"] == nil)

            let callback = await app.send(browser, browser.request(.get, try await app.atProvider(start)))
            #expect(callback.status == .seeOther)
            #expect(callback.headerFields[.location] == "http://127.0.0.1:8000/orders?page=2")
            let setCookie = try #require(callback.headerFields[values: .setCookie].first { $0.hasPrefix("oauth2-session=") })
            #expect(setCookie.contains("; HttpOnly"))
            #expect(setCookie.contains("; SameSite=Lax"))
            #expect(setCookie.contains("; Path=/"))
            #expect(setCookie.contains("; Max-Age=604800"))
            #expect(!setCookie.contains("Secure"), "a plain-HTTP loopback app: a browser would drop a Secure cookie")
            #expect(setCookie.utf8.count < 200)

            let user = try #require(Self.user(await app.user(browser)))
            #expect(user.subject == TestProvider.Demo.subject)
            #expect(user.issuer == app.provider.issuer.absoluteString)
            #expect(user.claims["sid"]?.stringValue != nil)
            #expect(user.scopes.contains("offline_access"))
            let accessToken = try await user.tokenSession.freshAccessToken()
            #expect(!accessToken.isEmpty)
            // The store keeps a hash of the cookie's id, never the id.
            let cookieValue = try #require(browser.cookies["oauth2-session"])
            #expect(user.record.idHash == WebSignIn.hash(cookieValue))
            #expect(user.record.idHash != cookieValue)
            #expect(!user.record.account.contains(cookieValue))
        }
    }

    @Test("Whatever the tokens' size, the cookie stays under 200 bytes")
    func cookieSize() async throws {
        try await Self.withApp { app in
            app.provider.register(TestProvider.User(
                username: TestProvider.Demo.username, password: TestProvider.Demo.password, subject: TestProvider.Demo.subject,
                claims: ["name": .string(String(repeating: "n", count: 6000)), "email": "demo@example.com"]))
            let browser = Browser()
            let callback = try await app.signIn(browser)
            let user = try #require(Self.user(await app.user(browser)))
            #expect(try await user.tokenSession.freshTokens().idToken?.utf8.count ?? 0 > 6000)
            // The header the app sends, and the same cookie with Secure (an HTTPS app's).
            let setCookie = try #require(callback.headerFields[values: .setCookie].first { $0.hasPrefix("oauth2-session=") })
            #expect(setCookie.utf8.count < 200, "\(setCookie.utf8.count) bytes")
            #expect((setCookie + "; Secure").utf8.count < 200)
            let cookie = try #require(browser.cookies["oauth2-session"])
            #expect(WebCookies.isWellFormedID(cookie))
        }
    }

    /// Behind a proxy the `Host` header is whatever the client sent: the redirect URI and
    /// where the browser lands after sign-in come from the configured public URL only.
    @Test("A hostile Host header changes neither the redirect URI nor where sign-in lands")
    func hostileHost() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            var login = browser.request(.get, "/auth/login?returnTo=%2Forders")
            login.authority = "evil.example"  // what HTTP/1.1 calls Host
            let start = await app.send(browser, login)
            let authorize = try #require(start.headerFields[.location].flatMap(URL.init(string:)))
            let query = Dictionary(uniqueKeysWithValues: (URLComponents(url: authorize, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            #expect(query["redirect_uri"] == "http://127.0.0.1:8000/auth/callback")
            #expect(!authorize.absoluteString.contains("evil.example"))

            var callback = browser.request(.get, try await app.atProvider(start))
            callback.authority = "evil.example"
            let landed = await app.send(browser, callback)
            #expect(landed.status == .seeOther)
            #expect(landed.headerFields[.location] == "http://127.0.0.1:8000/orders")
        }
    }

    @Test("A callback from another browser is refused, and its state is spent")
    func callbackFromAnotherBrowser() async throws {
        try await Self.withApp { app in
            let victim = Browser()
            let start = await app.send(victim, victim.request(.get, "/auth/login"))
            let callback = try await app.atProvider(start)

            let attacker = Browser()
            let refused = await app.send(attacker, attacker.request(.get, callback))
            #expect(refused.status == .badRequest)
            #expect(refused.error?.reason == .browserMismatch)
            #expect(attacker.cookies["oauth2-session"] == nil)
            #expect(app.sessions.count == 0)

            // The state was used: the right browser cannot complete it now either.
            let late = await app.send(victim, victim.request(.get, callback))
            #expect(late.error?.reason == .unknownSignIn)
        }
    }

    @Test("A callback is used once; an unknown or expired state is refused")
    func callbackReplayAndExpiry() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            let start = await app.send(browser, browser.request(.get, "/auth/login"))
            let callback = try await app.atProvider(start)
            #expect(await app.send(browser, browser.request(.get, callback)).status == .seeOther)
            let again = await app.send(browser, browser.request(.get, callback))
            #expect(again.error?.reason == .unknownSignIn)
            #expect(again.status == .badRequest)
            #expect(await app.send(browser, browser.request(.get, "/auth/callback?code=x&state=unknown")).error?.reason == .unknownSignIn)
            #expect(await app.send(browser, browser.request(.get, "/auth/callback?code=x")).error?.reason == .unknownSignIn)

            let slow = await app.send(browser, browser.request(.get, "/auth/login"))
            let slowCallback = try await app.atProvider(slow)
            app.date.advance(by: 11 * 60)
            #expect(await app.send(browser, browser.request(.get, slowCallback)).error?.reason == .unknownSignIn)
        }
    }

    @Test("The provider's error comes back typed, and no session starts")
    func providerError() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            let start = await app.send(browser, browser.request(.get, "/auth/login"))
            let location = try #require(start.headerFields[.location].flatMap { URLComponents(string: $0) })
            let state = try #require(location.queryItems?.first { $0.name == "state" }?.value)
            let answer = await app.send(browser, browser.request(.get, "/auth/callback?error=access_denied&state=\(state)&iss=\(app.provider.issuer.absoluteString)"))
            #expect(answer.status == .badRequest)
            #expect(answer.error?.reason == .signInFailed)
            #expect(answer.error?.underlyingCode == .accessDenied)
            #expect(app.sessions.count == 0)
        }
    }

    @Test("Several tabs sign in at once, each with its own state and return path")
    func severalTabs() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            let first = await app.send(browser, browser.request(.get, "/auth/login?returnTo=/first"))
            let second = await app.send(browser, browser.request(.get, "/auth/login?returnTo=/second"))
            let firstCallback = try await app.atProvider(first)
            let secondCallback = try await app.atProvider(second)
            // Completed in the other order.
            let secondDone = await app.send(browser, browser.request(.get, secondCallback))
            #expect(secondDone.headerFields[.location] == "http://127.0.0.1:8000/second")
            let firstDone = await app.send(browser, browser.request(.get, firstCallback))
            #expect(firstDone.headerFields[.location] == "http://127.0.0.1:8000/first")
            // One browser, one session: the second sign-in ended the first.
            #expect(app.sessions.count == 1)
            #expect(Self.user(await app.user(browser)) != nil)
        }
    }

    @Test("A protected page: a GET goes to the provider and comes back; another method gets 401")
    func protectedRoute() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            let denied = try #require(Self.denial(await app.signIn.authorize(browser.request(.get, "/orders?page=3"))))
            #expect(denied.status == .seeOther)
            browser.take(denied)
            let back = await app.send(browser, browser.request(.get, try await app.atProvider(denied)))
            #expect(back.headerFields[.location] == "http://127.0.0.1:8000/orders?page=3")
            #expect(Self.user(await app.signIn.authorize(browser.request(.get, "/orders"))) != nil)

            let stranger = Browser()
            let post = try #require(Self.denial(await app.signIn.authorize(stranger.request(.post, "/orders"))))
            #expect(post.status == .unauthorized)
            #expect(post.headerFields[.location] == nil)
        }
    }

    @Test("Step-up: an acr the session lacks sends the user back to the provider with acr_values; a new session replaces the old")
    func stepUpACR() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            try await app.signIn(browser)
            let oldCookie = try #require(browser.cookies["oauth2-session"])
            let requirement = WebAccessRequirement(acrValues: ["mfa"])
            let denied = try #require(Self.denial(await app.user(browser, requiring: requirement)))
            #expect(denied.status == .seeOther)
            #expect(denied.headerFields[.location]?.contains("acr_values=mfa") == true)
            browser.take(denied)
            let back = await app.send(browser, browser.request(.get, try await app.atProvider(denied)))
            #expect(back.status == .seeOther)
            #expect(back.headerFields[.location] == "http://127.0.0.1:8000/orders")
            let user = try #require(Self.user(await app.user(browser, requiring: requirement)))
            #expect(user.claims["acr"] == "mfa")
            #expect(browser.cookies["oauth2-session"] != oldCookie, "rotated at sign-in")
            #expect(app.sessions.count == 1)
            #expect(app.sessions.session(WebSignIn.hash(oldCookie), idleLifetime: 3600, now: app.date.now) == nil)
        }
    }

    @Test("Step-up: a sign-in older than max_age asks the provider for a fresh one")
    func stepUpMaxAge() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            try await app.signIn(browser)
            let requirement = WebAccessRequirement(maxAge: 300)
            #expect(Self.user(await app.user(browser, requiring: requirement)) != nil)
            app.date.advance(by: 400)
            let denied = try #require(Self.denial(await app.user(browser, requiring: requirement)))
            #expect(denied.headerFields[.location]?.contains("max_age=300") == true)
            browser.take(denied)
            // The provider authenticates the user now (auth_time is the provider's clock).
            app.date.advance(by: -400)
            let back = await app.send(browser, browser.request(.get, try await app.atProvider(denied)))
            #expect(back.status == .seeOther)
            #expect(Self.user(await app.user(browser, requiring: requirement)) != nil)
        }
    }

    @Test("A provider that does not deliver the step-up gets 403, not a redirect loop")
    func stepUpNotDelivered() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            let requirement = WebAccessRequirement(maxAge: 300)
            let denied = try #require(Self.denial(await app.user(browser, requiring: requirement)))
            browser.take(denied)
            // By the app's clock, the provider's authentication is already too old.
            app.date.advance(by: 400)
            let back = await app.send(browser, browser.request(.get, try await app.atProvider(denied)))
            #expect(back.status == .forbidden)
            #expect(back.error?.reason == .forbidden)
            #expect(back.headerFields[.location] == nil)
            // Signed in all the same: a route with no requirement lets the user in.
            #expect(Self.user(await app.user(browser)) != nil)
        }
    }

    @Test("A claim that does not match is 403 (no new sign-in changes it); scopes step up")
    func claimsAndScopes() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            try await app.signIn(browser)
            let forbidden = try #require(Self.denial(await app.user(browser, requiring: WebAccessRequirement(claims: ["groups": "admins"]))))
            #expect(forbidden.status == .forbidden)
            #expect(Self.user(await app.user(browser, requiring: WebAccessRequirement(claims: ["sub": .string(TestProvider.Demo.subject)]))) != nil)

            let more = try #require(Self.denial(await app.user(browser, requiring: WebAccessRequirement(scopes: ["api"]))))
            let query = URLComponents(string: more.headerFields[.location] ?? "")?.percentEncodedQuery ?? ""
            let pairs = try #require(FormURLEncoding.decode(query))
            let scope = pairs.first { $0.0 == "scope" }?.1 ?? ""
            #expect(Set(scope.split(separator: " ")) == ["openid", "profile", "offline_access", "api"])
        }
        #expect(WebAccessRequirement.claim(["a", "admins"], matches: "admins"))
        #expect(!WebAccessRequirement.claim("admin", matches: "admins"))
        #expect(!WebAccessRequirement.claim(nil, matches: "admins"))
    }

    @Test("Sessions end after the idle lifetime without use, and after the absolute lifetime in any case")
    func lifetimes() async throws {
        let configuration = WebSignInConfiguration(publicBaseURL: Self.base, scopes: ["openid"], idleLifetime: 1800, absoluteLifetime: 4 * 3600)
        try await Self.withApp(configuration: configuration) { app in
            let browser = Browser()
            try await app.signIn(browser)
            // Used every 20 minutes: alive past the idle lifetime…
            for _ in 0..<6 {
                app.date.advance(by: 1200)
                #expect(Self.user(await app.user(browser)) != nil)
            }
            // …until the absolute lifetime.
            app.date.advance(by: 1200 * 6)
            #expect(Self.denial(await app.user(browser))?.status == .seeOther)

            let idle = Browser()
            try await app.signIn(idle)
            app.date.advance(by: 1799)
            #expect(Self.user(await app.user(idle)) != nil)
            app.date.advance(by: 1801)
            #expect(Self.denial(await app.user(idle))?.status == .seeOther)
        }
    }

    @Test("Sign-out: a POST with the session's CSRF token ends it here and at the provider")
    func signOut() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            try await app.signIn(browser)
            let user = try #require(Self.user(await app.user(browser)))
            let idToken = try #require(try await user.tokenSession.freshTokens().idToken)
            let refreshToken = try #require(try await user.tokenSession.freshTokens().refreshToken)

            // A GET (a link, an image) signs nobody out.
            #expect(await app.send(browser, browser.request(.get, "/auth/logout")).status == .methodNotAllowed)
            // A form without the token, with another's, or posted from another site.
            #expect(await app.send(browser, browser.request(.post, "/auth/logout"), body: "").error?.reason == .forgedRequest)
            #expect(await app.send(browser, browser.request(.post, "/auth/logout"), body: "csrf=guess").error?.reason == .forgedRequest)
            let crossSite = await app.send(
                browser, browser.request(.post, "/auth/logout", origin: "https://evil.example"), body: "csrf=\(user.csrfToken)")
            #expect(crossSite.error?.reason == .forgedRequest)
            #expect(Self.user(await app.user(browser)) != nil)

            let out = await app.send(browser, browser.request(.post, "/auth/logout", origin: "http://127.0.0.1:8000"), body: "csrf=\(user.csrfToken)")
            #expect(out.status == .seeOther)
            let endSession = try #require(out.headerFields[.location].flatMap { URLComponents(string: $0) })
            #expect(endSession.path.hasSuffix("end_session") || endSession.path.hasSuffix("logout"))
            let items = Dictionary(uniqueKeysWithValues: (endSession.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            #expect(items["id_token_hint"] == idToken)
            #expect(items["post_logout_redirect_uri"] == "http://127.0.0.1:8000/")
            #expect(out.headerFields[values: .setCookie].contains { $0.hasPrefix("oauth2-session=;") && $0.contains("Max-Age=0") })
            #expect(browser.cookies["oauth2-session"] == nil)
            #expect(app.sessions.count == 0)
            #expect(try await app.tokens.load(TokenSession.key(for: app.signIn.client, account: user.record.account)) == nil)
            // The refresh token was revoked at the provider.
            let introspection = try await app.signIn.client.introspect(refreshToken)
            #expect(!introspection.active)
        }
    }

    @Test("Sign-out drops the session's downstream tokens (store and memory); another user's stay")
    func signOutDropsDownstreamTokens() async throws {
        let store = MemoryDownstreamTokenStore()
        let downstream = DownstreamTokens(store: store)
        try await Self.withApp(downstreamTokens: downstream) { app in
            let browser = Browser()
            try await app.signIn(browser)
            let user = try #require(Self.user(await app.user(browser)))
            func key(_ session: String) -> DownstreamTokenKey {
                DownstreamTokenKey(session: session, grant: .tokenExchange, issuer: "https://as.example.com", clientID: "app", audiences: ["orders"])
            }
            let fetch: @Sendable () async throws -> DownstreamToken = {
                DownstreamToken(token: "downstream", tokenType: "Bearer", expiresAt: Date().addingTimeInterval(3600), issuedAt: Date())
            }
            _ = try await downstream.token(for: key(user.record.account), fetch: fetch)
            _ = try await downstream.token(for: key("another-user"), fetch: fetch)
            #expect(store.count == 2)
            let out = await app.send(browser, browser.request(.post, "/auth/logout", origin: "http://127.0.0.1:8000"), body: "csrf=\(user.csrfToken)")
            #expect(out.status == .seeOther)
            #expect(store.count == 1)
            #expect(downstream.memoryCount == 1)
            #expect(try await store.load(key(user.record.account)) == nil)
            #expect(try await store.load(key("another-user")) != nil)
        }
    }

    @Test("Back-channel logout ends the provider session's sign-ins; a replayed token is refused")
    func backChannelLogout() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            try await app.signIn(browser)
            let other = Browser()
            try await app.signIn(other)
            let user = try #require(Self.user(await app.user(browser)))
            let sid = try #require(user.record.providerSessionID)

            let token = try app.provider.logoutToken(clientID: Self.clientID, sessionID: sid)
            var request = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:8000", path: "/auth/backchannel-logout")
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            let answer = await app.send(Browser(), request, body: "logout_token=\(token)")
            #expect(answer.status == .ok)
            #expect(answer.headerFields[.cacheControl] == "no-store")
            #expect(Self.denial(await app.user(browser)) != nil)
            #expect(try await app.tokens.load(TokenSession.key(for: app.signIn.client, account: user.record.account)) == nil)
            // The other browser's sign-in is another provider session.
            #expect(Self.user(await app.user(other)) != nil)

            let replay = await app.send(Browser(), request, body: "logout_token=\(token)")
            #expect(replay.status == .badRequest)

            // By subject: every session of the user.
            let all = try app.provider.logoutToken(clientID: Self.clientID, subject: TestProvider.Demo.subject)
            #expect(await app.send(Browser(), request, body: "logout_token=\(all)").status == .ok)
            #expect(Self.denial(await app.user(other)) != nil)
        }
    }

    /// A token store whose removals fail while ``failing`` is set (a database that went away).
    final class FailingRemovals: TokenStore, @unchecked Sendable {
        let base: MemoryTokenStore
        private let lock = NSLock()
        private var failing = false
        init(_ base: MemoryTokenStore) { self.base = base }
        func fail(_ on: Bool) { lock.withLock { failing = on } }
        struct Down: Error {}
        func load(_ key: TokenSessionKey) async throws -> StoredTokenSession? { try await base.load(key) }
        func save(_ session: StoredTokenSession) async throws { try await base.save(session) }
        func remove(_ key: TokenSessionKey) async throws {
            if lock.withLock({ failing }) { throw Down() }
            try await base.remove(key)
        }
        func list() async throws -> [TokenSessionKey] { try await base.list() }
        func withExclusiveAccess<T: Sendable>(to key: TokenSessionKey, _ body: @Sendable () async throws -> T) async throws -> T {
            try await base.withExclusiveAccess(to: key, body)
        }
    }

    @Test("A back-channel logout whose tokens cannot be removed fails and keeps the session, so the next logout ends it and its tokens")
    func backChannelLogoutFailingHalfWay() async throws {
        var store: FailingRemovals?
        try await Self.withApp(tokenStore: { base in
            let failing = FailingRemovals(base)
            store = failing
            return failing
        }) { app in
            let store = try #require(store)
            let browser = Browser()
            try await app.signIn(browser)
            let user = try #require(Self.user(await app.user(browser)))
            let sid = try #require(user.record.providerSessionID)
            let key = TokenSession.key(for: app.signIn.client, account: user.record.account)
            var request = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:8000", path: "/auth/backchannel-logout")
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"

            store.fail(true)
            let failed = await app.send(Browser(), request, body: "logout_token=\(try app.provider.logoutToken(clientID: Self.clientID, sessionID: sid))")
            #expect(failed.status == .badRequest)
            #expect(app.sessions.sessions(issuer: user.record.issuer, subject: nil, providerSessionID: sid) == [user.record])
            #expect(try await app.tokens.load(key) != nil)

            store.fail(false)
            let again = await app.send(Browser(), request, body: "logout_token=\(try app.provider.logoutToken(clientID: Self.clientID, sessionID: sid))")
            #expect(again.status == .ok)
            #expect(Self.denial(await app.user(browser)) != nil)
            #expect(try await app.tokens.load(key) == nil)
        }
    }

    @Test("Front-channel logout: iss and sid end that provider session; a foreign issuer is refused")
    func frontChannelLogout() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            try await app.signIn(browser)
            let user = try #require(Self.user(await app.user(browser)))
            let sid = try #require(user.record.providerSessionID)
            let issuer = app.provider.issuer.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!

            let foreign = await app.send(Browser(), Browser().request(.get, "/auth/frontchannel-logout?iss=https%3A%2F%2Fevil.example&sid=\(sid)"))
            #expect(foreign.status == .forbidden)
            #expect(await app.send(Browser(), Browser().request(.get, "/auth/frontchannel-logout?sid=\(sid)")).status == .forbidden)
            #expect(Self.user(await app.user(browser)) != nil)

            // From the provider's hidden frame, without the app's cookie (third-party context).
            let answer = await app.send(Browser(), Browser().request(.get, "/auth/frontchannel-logout?iss=\(issuer)&sid=\(sid)"))
            #expect(answer.status == .ok)
            #expect(answer.headerFields[.cacheControl] == "no-store")
            #expect(Self.denial(await app.user(browser)) != nil)
        }
    }

    /// What LemonLDAP::NG's logout page showed in Chromium: the frame of a same-site
    /// provider carries the app's session cookie too. With `iss` and `sid` the route ends
    /// the sessions of that provider session, never the cookie's instead (the sid of a
    /// provider that puts none in its ID tokens matches nothing), and it leaves the cookie
    /// of a session that lives on in place: no half sign-out (cookie gone, session kept).
    @Test("Front-channel logout with iss and sid ends that provider session, not the one of the cookie the frame carries")
    func frontChannelLogoutBySidNotByCookie() async throws {
        let log = CapturedLog()
        try await Self.withApp(log: log) { app in
            let browser = Browser()
            try await app.signIn(browser)
            let cookie = try #require(browser.cookies["oauth2-session"])
            let user = try #require(Self.user(await app.user(browser)))
            let sid = try #require(user.record.providerSessionID)
            let issuer = app.provider.issuer.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!

            // Another provider session's sid, with this browser's cookie: nothing ends, and
            // the cookie stays.
            let other = await app.send(browser, browser.request(.get, "/auth/frontchannel-logout?iss=\(issuer)&sid=not-\(sid)"))
            #expect(other.status == .ok)
            #expect(other.headerFields[.setCookie] == nil, "the cookie of a living session is not cleared")
            #expect(browser.cookies["oauth2-session"] == cookie)
            #expect(Self.user(await app.user(browser)) != nil, "the cookie's session lives on")
            #expect(log.lines.contains { $0.contains("Front-channel logout") && $0.contains("sessions=0") && $0.contains("by=sid") })

            // Its own sid: the session ends and the cookie is cleared.
            let own = await app.send(browser, browser.request(.get, "/auth/frontchannel-logout?iss=\(issuer)&sid=\(sid)"))
            #expect(own.status == .ok)
            #expect(own.headerFields[.setCookie]?.hasPrefix("oauth2-session=;") == true)
            #expect(Self.denial(await app.user(browser)) != nil)
            #expect(log.lines.contains { $0.contains("Front-channel logout") && $0.contains("sessions=1") && $0.contains("by=sid") })
            #expect(!log.text.contains(cookie), "no cookie value in the log")
        }
    }

    @Test("Cookies that are not the app's are ignored; a valid one among them works")
    func hostileCookies() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            try await app.signIn(browser)
            let valid = try #require(browser.cookies["oauth2-session"])
            for header in [
                "oauth2-session=", "oauth2-session=\(String(repeating: "A", count: 43))", "oauth2-session=../../etc/passwd",
                "oauth2-session=\(String(repeating: "x", count: 20_000))", "oauth2-session", ";;;=;", "oauth2-session=\"\(valid.dropLast())\"",
            ] {
                var request = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:8000", path: "/orders")
                request.headerFields[.cookie] = header
                #expect(Self.denial(await app.signIn.authorize(request))?.status == .unauthorized, "\(header.prefix(40))")
            }
            var request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:8000", path: "/orders")
            request.headerFields.append(HTTPField(name: .cookie, value: "oauth2-session=\(String(repeating: "B", count: 43)); theme=dark"))
            request.headerFields.append(HTTPField(name: .cookie, value: "oauth2-session=\"\(valid)\""))
            #expect(Self.user(await app.signIn.authorize(request)) != nil)
        }
    }

    @Test("No token, code, cookie or CSRF value reaches the log")
    func nothingSecretLogged() async throws {
        let log = CapturedLog()
        try await Self.withApp(log: log) { app in
            let browser = Browser()
            let start = await app.send(browser, browser.request(.get, "/auth/login"))
            let callback = try await app.atProvider(start)
            let code = try #require(URLComponents(string: callback)?.queryItems?.first { $0.name == "code" }?.value)
            await app.send(browser, browser.request(.get, callback))
            _ = await app.send(Browser(), browser.request(.get, callback))
            let user = try #require(Self.user(await app.user(browser)))
            let tokens = try await user.tokenSession.freshTokens()
            await app.send(browser, browser.request(.post, "/auth/logout"), body: "csrf=\(user.csrfToken)")
            let text = log.text
            #expect(!text.isEmpty)
            for secret in [code, tokens.accessToken, tokens.refreshToken ?? "-", tokens.idToken ?? "-", user.csrfToken] + browser.cookies.values {
                #expect(!text.contains(secret))
            }
        }
    }
}
