import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

extension Integration {
    /// The web example app (`oauth2-web-example-hummingbird`, `Examples/HummingbirdWebApp`)
    /// as a person uses it, in headless Chromium, against the real providers: sign-in on the
    /// provider's own login page, the app's pages with the session, sign-out through the
    /// provider's end-session page, and the provider ending the session by back-channel
    /// logout (Glewlwyd, and the embedded test provider the app runs when no provider is
    /// configured) or front-channel logout (LemonLDAP::NG).
    /// The app runs as a child process, configured only by its environment, on the port the
    /// provider has its redirect, post-logout and back-channel logout URIs registered for (with
    /// its embedded provider: any free port, registered by the app itself).
    @Suite struct WebAppJourneys {
        @Test("Glewlwyd: sign in on its login page, the profile and UserInfo, sign out through its end-session page")
        func glewlwydSignInAndOut() async throws {
            try await signInAndOut(WebApp(.glewlwyd))
        }

        @Test("django-oauth-toolkit, the Vapor app: sign in on Django's login form and DOT's consent page, sign out through its logout endpoint")
        func dotSignInAndOut() async throws {
            try await signInAndOut(WebApp(.dot, framework: .vapor))
        }

        /// The user ends their session at Glewlwyd (its OIDC session, deleted with the
        /// browser's own cookies, as its login page's "Logout" does): Glewlwyd POSTs a logout
        /// token to the app's back-channel logout URI, and the app's session ends with it.
        @Test("Glewlwyd: the session ended at the provider ends the app's (back-channel logout)")
        func glewlwydBackChannelLogout() async throws {
            let app = WebApp(.glewlwyd)
            try await app.run(name: "back-channel-logout") { chromium in
                let at = try #require(await chromium.journey([.open(app.url("/profile")), .text("profile")], name: "sign-in"))
                #expect(at == [app.url("/profile")])
                let session = try #require(try chromium.cookie(WebApp.sessionCookie), "the app set its session cookie")
                let (page, _) = try await app.profile(session: session)
                #expect(page.status == .ok, "signed in: the app's session works outside the browser too")

                // What Glewlwyd's login page does at "Logout": DELETE its OIDC session with the
                // user's Glewlwyd session cookie.
                let sid = try #require(try chromium.cookie("GLWD_OIDC_SID"), "Glewlwyd's OIDC session cookie")
                let browser = Browser()
                for name in ["GLEWLWYD2_SESSION_ID", "GLWD_OIDC_SID"] {
                    browser.setCookie(name, try #require(try chromium.cookie(name)))
                }
                let (ended, _) = try await browser.send(.delete, app.issuer.appendingPathComponent("session/\(sid)"))
                #expect(ended.status == .ok, "Glewlwyd ended its session")

                // Glewlwyd sends the logout token from a thread of its own: wait for its effect.
                let deadline = ContinuousClock.now + .seconds(30)
                var answer = try await app.profile(session: session).0
                while answer.status == .ok, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                    answer = try await app.profile(session: session).0
                }
                try app.expectSignInRedirect(answer, "the provider's logout token ended the app's session")
            }
        }

        /// The user signs out at LemonLDAP::NG, on its portal (`/?logout=1`), not in the app:
        /// the portal's logout page holds the app's front-channel logout URI (with `iss` and
        /// `sid`) in a frame, Chromium loads it, and the app's session ends with the portal's.
        @Test("LemonLDAP::NG: sign in on its portal, sign out at the portal; its front-channel logout frame ends the app's session")
        func lemonldapFrontChannelLogout() async throws {
            let app = WebApp(.lemonldap)
            try await app.run(name: "front-channel-logout") { chromium in
                let signedIn = try #require(await chromium.journey([
                    .open(app.url("/profile")), .text("profile"),
                    .open(app.url("/api/userinfo")), .text("userinfo"),
                ], name: "sign-in"))
                #expect(signedIn == [app.url("/profile"), app.url("/api/userinfo")], "back on the app after LemonLDAP's login page")
                let userInfo = try JSONSerialization.jsonObject(with: Data(try chromium.text("userinfo").utf8)) as? [String: Any]
                let subject = try #require(userInfo?["sub"] as? String, "UserInfo's claims: \(String(describing: userInfo))")
                #expect(try chromium.text("profile").components(separatedBy: "\n").contains(subject), "the profile page shows the subject")
                let session = try #require(try chromium.cookie(WebApp.sessionCookie), "the app set its session cookie")
                #expect(try await app.profile(session: session).0.status == .ok, "signed in: the app's session works outside the browser too")

                // What a person does at the portal: its logout link. Its page loads each
                // signed-in relying party's front-channel logout URI in a frame.
                let portalLogout = URL(string: app.issuer.absoluteString + "/?logout=1")!
                let walk = try #require(await chromium.walk([.visit(portalLogout), .text("portal-logout")], name: "portal-logout"))
                let frontChannel = walk.frames.filter { $0.url.port == app.base.port && $0.url.path == "/auth/frontchannel-logout" }
                try #require(frontChannel.count == 1, "the portal's logout page framed the app's front-channel logout URI once: \(walk.frames.map(\.url))")
                #expect(frontChannel[0].status == 200, "the app answered the frame")
                let query = URLComponents(url: frontChannel[0].url, resolvingAgainstBaseURL: false)?.queryItems ?? []
                #expect(query.first { $0.name == "iss" }?.value == app.issuer.absoluteString, "the frame names the issuer")
                #expect(query.first { $0.name == "sid" }?.value?.isEmpty == false, "the frame names the provider's session")

                // The frame is same-site (127.0.0.1, another port): its answer reached the
                // browser's cookie jar and cleared the app's cookie there.
                #expect(try chromium.cookie(WebApp.sessionCookie) == nil, "the frame's answer cleared the app's cookie in Chromium")
                // The frame ended the app's session (from iss and sid): the old cookie is refused.
                try app.expectSignInRedirect(try await app.profile(session: session).0, "the old session cookie after the portal's logout")
            }
        }

        /// The app run without a provider starts the embedded test provider (OAuth2Testing) in
        /// its own process and registers itself there, back-channel logout URI included. The
        /// provider signs its demo user in without a page, and keeps its session in a cookie of
        /// its own; the user signs out **at the provider** (its end-session page, opened in the
        /// browser with that cookie, no ID token): the provider POSTs a logout token to the
        /// app, waits for its answer, shows "signed out", and the app's session is over.
        /// Each example's bearer-protected API (`/api/bearer/whoami`), with the app's embedded
        /// provider: a token of the provider's demo confidential client (client credentials)
        /// is introspected by the app and accepted; none, one the provider never issued, or one
        /// it issued to another client, gets a 401 Bearer challenge. No browser: another program
        /// calls an API.
        @Test("Each example's bearer API accepts its provider's token and refuses others", arguments: [WebApp.Framework.hummingbird, .vapor])
        func bearerAPI(framework: WebApp.Framework) async throws {
            try await WebApp(.embedded, framework: framework).run(name: "bearer-api") { _, app in
                let client = try await OAuth2Client(
                    server: .issuer(app.issuer),
                    configuration: ClientConfiguration(clientID: "oauth2-demo-confidential", clientSecret: "oauth2-demo-secret"))
                let tokens = try await client.clientCredentials()
                let transport = TransportKind.urlSession.transport
                func whoami(_ authorization: String?) async throws -> (HTTPResponse, Data) {
                    var request = HTTPRequest(
                        method: .get, scheme: app.base.scheme, authority: "\(app.base.host ?? ""):\(app.base.port ?? 0)", path: "/api/bearer/whoami")
                    if let authorization { request.headerFields[.authorization] = authorization }
                    return try await transport.send(request, body: nil)
                }
                let (accepted, body) = try await whoami("Bearer \(tokens.accessToken)")
                #expect(accepted.status == .ok)
                let claims = try JSONSerialization.jsonObject(with: body) as? [String: Any]
                #expect(claims?["client_id"] as? String == "oauth2-demo-confidential", "\(String(decoding: body, as: UTF8.self))")
                #expect(!String(decoding: body, as: UTF8.self).contains(tokens.accessToken), "the answer never repeats the token")
                let (missing, _) = try await whoami(nil)
                #expect(missing.status == .unauthorized)
                #expect(missing.headerFields[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
                let (forged, _) = try await whoami("Bearer not-a-token-the-provider-issued")
                #expect(forged.status == .unauthorized)
                #expect(forged.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)

                // An active token the provider issued to another client (the demo public client,
                // through the device flow its demo user approves by opening the page): the API
                // serves the demo confidential client only, and refuses it.
                let publicClient = try await OAuth2Client(server: .issuer(app.issuer), configuration: ClientConfiguration(clientID: "oauth2-demo"))
                let device = try await publicClient.startDeviceAuthorization(scopes: ["openid", "api"])
                let (approval, _) = try await transport.send(HTTPRequest(method: .get, url: device.preferredVerificationURI), body: nil)
                #expect(approval.status == .ok, "the provider approved the device for its demo user")
                let foreign = try await publicClient.requestToken(.deviceCode(device.deviceCode))
                let (refused, _) = try await whoami("Bearer \(foreign.accessToken)")
                #expect(refused.status == .unauthorized, "a token issued to another client")
                #expect(refused.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
            }
        }

        @Test("The embedded test provider: sign in, sign out at its end-session page; its logout token ends the app's session (back-channel logout)")
        func embeddedProviderBackChannelLogout() async throws {
            try await WebApp(.embedded).run(name: "back-channel-logout") { chromium, app in
                let at = try #require(await chromium.journey([.open(app.url("/profile")), .text("profile")], name: "sign-in"))
                #expect(at == [app.url("/profile")])
                // TestProvider.Demo's user (this target does not link OAuth2Testing).
                #expect(try chromium.text("profile").components(separatedBy: "\n").contains("demo-user-0001"), "the profile page shows the demo user")
                let session = try #require(try chromium.cookie(WebApp.sessionCookie), "the app set its session cookie")
                #expect(try await app.profile(session: session).0.status == .ok, "signed in: the app's session works outside the browser too")
                #expect(try chromium.cookie(WebApp.embeddedProviderCookie) != nil, "the provider keeps its session in the browser")

                // What a person does at the provider: its end-session page, with the browser's cookies only.
                let endSession = app.issuer.appendingPathComponent("end_session")
                let walk = try #require(await chromium.walk([.visit(endSession), .text("provider-signed-out")], name: "provider-sign-out"))
                #expect(walk.at == [endSession], "the provider shows its own page")
                #expect(try chromium.text("provider-signed-out").contains("You are signed out."))
                #expect(try chromium.cookie(WebApp.embeddedProviderCookie) == nil, "the provider removed its session cookie")

                // The provider answered the page after the app answered its logout token: the
                // session is over now, although the browser still holds the app's cookie.
                #expect(try chromium.cookie(WebApp.sessionCookie) == session, "the back channel does not touch the browser")
                try app.expectSignInRedirect(try await app.profile(session: session).0, "the provider's logout token ended the app's session")
            }
        }

        /// Sign-in, the app's pages, UserInfo, sign-out, and the old session cookie refused.
        func signInAndOut(_ app: WebApp) async throws {
            try await app.run(name: "sign-in-and-out") { chromium in
                let signedIn = try #require(await chromium.journey([
                    .open(app.url("/profile")), .text("profile"),
                    .open(app.url("/api/userinfo")), .text("userinfo"),
                    .open(app.url("/")), .text("home"),
                ], name: "sign-in", user: app.user))
                #expect(signedIn == [app.url("/profile"), app.url("/api/userinfo"), app.url("/")], "back on the app after the provider's pages")

                // UserInfo, fetched by the app with the user's access token, names the user the
                // app's pages show.
                let userInfo = try JSONSerialization.jsonObject(with: Data(try chromium.text("userinfo").utf8)) as? [String: Any]
                let subject = try #require(userInfo?["sub"] as? String, "UserInfo's claims: \(String(describing: userInfo))")
                #expect(!subject.isEmpty)
                #expect(try chromium.text("profile").components(separatedBy: "\n").contains(subject), "the profile page shows the subject")
                #expect(try chromium.text("home").contains("Signed in as \(subject)"))

                // The session cookie works outside the browser: the session lives in the app.
                let session = try #require(try chromium.cookie(WebApp.sessionCookie), "the app set its session cookie")
                let (page, body) = try await app.profile(session: session)
                #expect(page.status == .ok)
                #expect(String(decoding: body, as: UTF8.self).contains(subject))

                let signedOut = try #require(await chromium.journey([
                    .open(app.url("/profile")), .click("#signout-button"), .text("signed-out"),
                ], name: "sign-out", user: app.user))
                #expect(signedOut.count == 2)
                let home = try #require(signedOut.last)
                #expect(home.path == "/" && home.port == app.base.port, "the provider sent the browser back to the app's home page: \(home)")
                #expect(try chromium.text("signed-out").contains("Not signed in"))

                // The session cookie the browser held is dead at the app, not merely forgotten.
                try app.expectSignInRedirect(try await app.profile(session: session).0, "the old session cookie after sign-out")
            }
        }
    }
}

/// The web example app for one provider's journeys: its public URL (the port the provider's
/// client registration names), its client, and the user who signs in.
struct WebApp {
    /// The name of the app's session cookie.
    static let sessionCookie = "oauth2-session"
    /// The name of the embedded test provider's session cookie (OAuth2Testing).
    static let embeddedProviderCookie = "oauth2-test-provider-sid"

    /// The providers where the app is registered (client `webapp`), or the embedded one.
    enum Provider: String {
        case glewlwyd
        case dot
        case lemonldap
        /// No provider configured: the app starts the embedded test provider (OAuth2Testing)
        /// on a free port and registers itself there; its issuer is known once the app runs.
        case embedded

        /// The issuer; `nil` for the embedded provider.
        var issuer: URL? {
            switch self {
            case .glewlwyd: JourneyServer.glewlwyd.issuer
            case .dot: JourneyServer.dot.issuer
            case .lemonldap: JourneyServer.lemonldap.issuer
            case .embedded: nil
            }
        }
    }

    /// The example app of each framework adapter; both have the same routes and settings.
    enum Framework: String {
        /// `oauth2-web-example-hummingbird`, `$OAUTH2_TEST_WEB_EXAMPLE`.
        case hummingbird
        /// `oauth2-web-example-vapor`, `$OAUTH2_TEST_WEB_EXAMPLE_VAPOR`.
        case vapor

        var variable: String { self == .hummingbird ? "OAUTH2_TEST_WEB_EXAMPLE" : "OAUTH2_TEST_WEB_EXAMPLE_VAPOR" }
    }

    let server: Provider
    let framework: Framework
    /// The app's public URL (with the embedded provider: port 0 until the app runs).
    private(set) var base: URL
    /// The provider's issuer (with the embedded provider: known once the app runs).
    private(set) var issuer: URL
    private(set) var clientID: String
    private(set) var clientSecret: String
    let user: (name: String, password: String)
    /// Settings of the app beyond the provider's (`OAUTH2_EXAMPLE_*`).
    var settings: [String: String] = [:]
    /// The name of the journeys' browser profiles and log lines (`web-app`, `spa`).
    var variant = "web-app"

    /// The example's single-page app (`/spa/`) at Glewlwyd: a client of its own
    /// (`$OAUTH2_TEST_GLEWLWYD_SPA_ID`) on a port of its own (`$OAUTH2_TEST_GLEWLWYD_SPA_URL`), at
    /// the OIDC instance whose access tokens live 20 s (`$OAUTH2_TEST_GLEWLWYD_SPA_ISSUER`);
    /// the example's bearer API accepts that client's tokens of scope `openid`.
    static func glewlwydSinglePageApp() -> WebApp {
        var app = WebApp(.glewlwyd)
        app.base = URL(string: Server.env("OAUTH2_TEST_GLEWLWYD_SPA_URL", "http://127.0.0.1:8768"))!
        app.issuer = URL(string: Server.env(
            "OAUTH2_TEST_GLEWLWYD_SPA_ISSUER", JourneyServer.glewlwyd.issuer.absoluteString.replacingOccurrences(of: "/api/oidc", with: "/api/oidc-spa")))!
        app.clientID = Server.env("OAUTH2_TEST_GLEWLWYD_SPA_ID", "spa-webapp")
        app.clientSecret = Server.env("OAUTH2_TEST_GLEWLWYD_SPA_SECRET", "spa-webapp-secret")
        // Glewlwyd's access tokens name their scopes as their audience ("openid" alone: one
        // scope, one audience); the bearer API accepts those, issued to this client.
        app.settings = [
            "OAUTH2_EXAMPLE_SCOPES": "openid", "OAUTH2_EXAMPLE_API_AUDIENCES": "openid", "OAUTH2_EXAMPLE_API_CLIENT_IDS": app.clientID,
        ]
        app.variant = "spa"
        return app
    }

    init(_ server: Provider, framework: Framework = .hummingbird) {
        self.server = server
        self.framework = framework
        switch server {
        case .glewlwyd:
            base = URL(string: Server.env("OAUTH2_TEST_GLEWLWYD_WEBAPP_URL", "http://127.0.0.1:8765"))!
            clientID = Server.env("OAUTH2_TEST_GLEWLWYD_WEBAPP_ID", "webapp")
            clientSecret = Server.env("OAUTH2_TEST_GLEWLWYD_WEBAPP_SECRET", "webapp-secret")
            user = (Server.username, Server.password)
        case .dot:
            base = URL(string: Server.env("OAUTH2_TEST_DOT_WEBAPP_URL", "http://127.0.0.1:8766"))!
            clientID = Server.env("OAUTH2_TEST_DOT_WEBAPP_ID", "webapp")
            clientSecret = Server.env("OAUTH2_TEST_DOT_WEBAPP_SECRET", "webapp-secret")
            // Its own user: DOT's RP-initiated logout revokes every token of the user.
            user = (Server.env("OAUTH2_TEST_DOT_WEBAPP_USER", "carol"), Server.env("OAUTH2_TEST_DOT_WEBAPP_PASSWORD", "carol-pw"))
        case .lemonldap:
            base = URL(string: Server.env("OAUTH2_TEST_LEMONLDAP_WEBAPP_URL", "http://127.0.0.1:8767"))!
            clientID = Server.env("OAUTH2_TEST_LEMONLDAP_WEBAPP_ID", "webapp")
            clientSecret = Server.env("OAUTH2_TEST_LEMONLDAP_WEBAPP_SECRET", "webapp-secret")
            user = (Server.username, Server.password)
        case .embedded:
            // Any free port; the app registers its own client (and secret) at its provider.
            base = URL(string: "http://127.0.0.1:0")!
            clientID = ""
            clientSecret = ""
            // The provider signs its demo user in without a page: nothing is typed.
            user = (Server.username, Server.password)
        }
        issuer = server.issuer ?? base
    }

    func url(_ path: String) -> URL { URL(string: base.absoluteString + path)! }

    /// The example's binary: `$OAUTH2_TEST_WEB_EXAMPLE` (Hummingbird) or
    /// `$OAUTH2_TEST_WEB_EXAMPLE_VAPOR` (scripts/test builds both with the tests' traits and
    /// sets them). Missing, the journeys fail: they never skip.
    func executable() throws -> URL {
        let variable = framework.variable
        let path = try #require(
            Server.environment[variable].flatMap { $0.isEmpty ? nil : $0 },
            "\(variable) names no binary: build it with `swift build --product oauth2-web-example-\(framework.rawValue) --traits URLSession,Postgres,Vapor,Hummingbird` (scripts/test does)")
        try #require(FileManager.default.isExecutableFile(atPath: path), "\(variable)=\(path) is not an executable file")
        return URL(fileURLWithPath: path)
    }

    /// Starts the app, waits for its `LISTENING` line, runs `body` with a browser profile of
    /// its own (`web-<server>-<name>`), and stops the app (also when `body` throws); the app's
    /// log (debug level) is kept beside the browser's, as `app.log`.
    func run(name: String, _ body: (Chromium) async throws -> Void) async throws {
        try await run(name: name) { chromium, _ in try await body(chromium) }
    }

    /// ``run(name:_:)`` with the running app: with the embedded provider, its address and its
    /// provider's issuer are known only then.
    func run(name: String, _ body: (Chromium, WebApp) async throws -> Void) async throws {
        try await run(name: name) { chromium, app, _ in try await body(chromium, app) }
    }

    /// ``run(name:_:)`` with the app's process too (its log, at debug level, as it grows).
    func run(name: String, _ body: (Chromium, WebApp, RunningWorker) async throws -> Void) async throws {
        let chromium = try Chromium(name: "web-\(server.rawValue)-\(framework.rawValue)-\(variant == "web-app" ? "" : variant + "-")\(name)")
        var environment = ProcessInfo.processInfo.environment
        environment["LOG_LEVEL"] = "debug"
        environment["OAUTH2_EXAMPLE_HOST"] = base.host
        environment["OAUTH2_EXAMPLE_PORT"] = base.port.map(String.init)
        for (name, value) in settings { environment[name] = value }
        if server.issuer != nil {
            environment["OAUTH2_EXAMPLE_ISSUER"] = issuer.absoluteString
            environment["OAUTH2_EXAMPLE_CLIENT_ID"] = clientID
            environment["OAUTH2_EXAMPLE_CLIENT_SECRET"] = clientSecret
            environment["OAUTH2_EXAMPLE_PUBLIC_URL"] = base.absoluteString
        } else {
            for name in ["OAUTH2_EXAMPLE_ISSUER", "OAUTH2_EXAMPLE_CLIENT_ID", "OAUTH2_EXAMPLE_CLIENT_SECRET", "OAUTH2_EXAMPLE_PUBLIC_URL"] {
                environment[name] = nil
            }
        }
        let app = try RunningWorker.start([], environment: environment, executable: try executable())
        if server != .embedded { IntegrationLog.record(server.rawValue, variant: variant) }
        let result: Result<Void, any Error>
        do {
            let line = try await app.waitForLine(startingWith: "LISTENING ", timeout: .seconds(60))
            var running = self
            if server == .embedded {
                running.base = try #require(URL(string: String(line.dropFirst("LISTENING ".count))), "\(line)")
                #expect(running.base.host == base.host && running.base.port != 0, "\(line)")
                running.issuer = try await running.embeddedIssuer()
            } else {
                #expect(line == "LISTENING \(base.absoluteString)")
            }
            try await body(chromium, running, app)
            result = .success(())
        } catch {
            result = .failure(error)
        }
        app.terminate()
        if (try? await app.waitForExit(timeout: .seconds(10))) == nil {
            app.send(SIGKILL)
            _ = try? await app.waitForExit(timeout: .seconds(10))
        }
        try? Data(app.errorOutput.utf8).write(to: chromium.directory.appendingPathComponent("app.log"))
        try result.get()
    }

    /// The embedded provider's issuer: where the app sends a browser without a session to
    /// sign in (`<issuer>/authorize?…`).
    private func embeddedIssuer() async throws -> URL {
        let (answer, _) = try await Browser().get(url("/profile"))
        #expect(answer.status.code == 303)
        let location = try #require(answer.headerFields[.location], "the app sends the browser to sign in")
        let authorize = try #require(location.range(of: "/authorize?"), "to the provider's authorization endpoint: \(location)")
        return try #require(URL(string: String(location[..<authorize.lowerBound])), "\(location)")
    }

    /// A plain GET of the profile page with `session` as the session cookie (no redirect followed).
    func profile(session: String) async throws -> (HTTPResponse, Data) {
        let browser = Browser()
        browser.setCookie(Self.sessionCookie, session)
        return try await browser.get(url("/profile"))
    }

    /// `answer` sends the browser to sign in at the provider: 303 to its authorization endpoint.
    func expectSignInRedirect(_ answer: HTTPResponse, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(answer.status.code == 303, comment, sourceLocation: sourceLocation)
        let location = answer.headerFields[.location] ?? ""
        #expect(location.hasPrefix(issuer.absoluteString + "/"), "to the provider: \(location)", sourceLocation: sourceLocation)
    }
}
