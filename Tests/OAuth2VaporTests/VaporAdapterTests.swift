#if Vapor
import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import OAuth2
import OAuth2Testing
import OAuth2TestSupport
import OAuth2WebTestSupport
import OAuth2Vapor
import OAuth2Web
import Testing
import Vapor

/// The Vapor adapter on a real Vapor server on loopback, with the embedded provider as the
/// provider (its authorization endpoint signs the demo user in, as a browser would) and
/// AsyncHTTPClient with a cookie jar as the browser.
@Suite("Vapor adapter", .timeLimit(.minutes(2)))
struct VaporAdapterTests {
    /// A browser: a cookie jar, no automatic redirects.
    final class Browser: @unchecked Sendable {
        private let lock = NSLock()
        private var jar: [String: String] = [:]
        static let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))

        var cookies: [String: String] { lock.withLock { jar } }

        func send(
            _ method: NIOHTTP1.HTTPMethod, _ url: String, form: String? = nil, headers extra: [(String, String)] = []
        ) async throws -> (status: Int, headers: NIOHTTP1.HTTPHeaders, body: String) {
            var request = HTTPClientRequest(url: url)
            request.method = method
            let cookies = lock.withLock { jar }
            if !cookies.isEmpty {
                request.headers.add(name: "Cookie", value: cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))
            }
            for (name, value) in extra { request.headers.add(name: name, value: value) }
            if let form {
                request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
                request.body = .bytes(ByteBuffer(string: form))
            }
            let response = try await Self.http.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 20)
            for cookie in response.headers["Set-Cookie"] {
                let pair = cookie.split(separator: ";", maxSplits: 1)[0].split(separator: "=", maxSplits: 1).map(String.init)
                lock.withLock { jar[pair[0]] = cookie.contains("Max-Age=0") ? nil : (pair.count > 1 ? pair[1] : "") }
            }
            return (Int(response.status.code), response.headers, String(buffer: body))
        }
    }

    /// The app: the provider, the sign-in, a Vapor server with a public page, a protected
    /// page, an API route calling UserInfo, and a bearer-protected API.
    struct App {
        let provider: TestProvider
        let signIn: WebSignIn
        let base: String
    }

    static func withApp(_ body: (App) async throws -> Void) async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            // A port no other test can take before the app listens on it (see ReservedPort).
            let reserved = try ReservedPort()
            defer { withExtendedLifetime(reserved) {} }
            let port = reserved.port
            let configuration = WebSignInConfiguration(publicBaseURL: URL(string: "http://127.0.0.1:\(port)")!, scopes: ["openid", "profile", "offline_access"])
            provider.register(TestProvider.Client(
                id: "vapor-app", secret: "vapor-secret", redirectURIs: [configuration.redirectURI],
                postLogoutRedirectURIs: [configuration.url("/")], backChannelLogoutURI: configuration.url(configuration.backChannelLogoutPath)))
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(clientID: "vapor-app", clientSecret: "vapor-secret", redirectURI: configuration.redirectURI),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let signIn = WebSignIn(client: client, configuration: configuration)
            // The API serves the demo confidential client (client-credentials tokens: no `aud`).
            let api = ResourceServer(introspection: TokenIntrospector(client: client, accepting: .clientIDs([TestProvider.Demo.confidentialClientID])))

            let app = try await Application.make(.testing)
            app.middleware.use(VaporWebSignInMiddleware(signIn))
            app.get { request in request.webUser.map { "Signed in as \($0.subject)" } ?? "Not signed in" }
            let signedIn = app.grouped(VaporRequireSignIn(signIn))
            signedIn.get("profile") { request in
                let user = try request.requireWebUser()
                return "subject=\(user.subject) csrf=\(user.csrfToken)"
            }
            signedIn.get("api", "userinfo") { request in
                let user = try request.requireWebUser()
                return try await client.userInfo(for: try await user.tokenSession.freshTokens()).subject
            }
            app.grouped(VaporRequireSignIn(signIn, requiring: WebAccessRequirement(claims: ["groups": "admins"]))).get("admin") { _ in "admin" }
            app.grouped(VaporResourceServerMiddleware(api, requiredScopes: ["profile"])).get("orders") { request in
                "orders of \(request.accessToken?.subject ?? "-")"
            }
            // DPoP-bound tokens (DPoPAPIConformance's issuer), proofs for the public URL.
            app.grouped(VaporResourceServerMiddleware(try DPoPAPIConformance.resourceServer(publicBaseURL: configuration.publicBaseURL)))
                .get("dpop", "orders") { request in request.accessToken?.subject ?? "-" }
            try await app.server.start(address: .hostname("127.0.0.1", port: port))
            do {
                try await body(App(provider: provider, signIn: signIn, base: "http://127.0.0.1:\(port)"))
            } catch {
                await app.server.shutdown()
                try await app.asyncShutdown()
                throw error
            }
            await app.server.shutdown()
            try await app.asyncShutdown()
        }
    }

    /// Signs `browser` in through the provider, starting at `path`; returns the final answer.
    static func signIn(_ browser: Browser, _ app: App, at path: String = "/profile") async throws -> (status: Int, headers: NIOHTTP1.HTTPHeaders, body: String) {
        let start = try await browser.send(.GET, app.base + path)
        #expect(start.status == 303)
        let authorize = try #require(start.headers.first(name: "Location").flatMap(URL.init(string:)))
        let callback = try await app.provider.followRedirect(from: authorize)
        let back = try await browser.send(.GET, callback.absoluteString)
        #expect(back.status == 303)
        #expect(back.headers.first(name: "Location") == app.base + path)
        return try await browser.send(.GET, app.base + path)
    }

    @Test("Sign-in, a protected page, an API call with the user's token, sign-out")
    func journey() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            #expect(try await browser.send(.GET, app.base + "/").body == "Not signed in")
            let profile = try await Self.signIn(browser, app)
            #expect(profile.status == 200)
            #expect(profile.body.hasPrefix("subject=\(TestProvider.Demo.subject) "))
            #expect(try await browser.send(.GET, app.base + "/").body == "Signed in as \(TestProvider.Demo.subject)")
            #expect(try await browser.send(.GET, app.base + "/api/userinfo").body == TestProvider.Demo.subject)
            let csrf = try #require(profile.body.split(separator: "csrf=").last.map(String.init))

            // Refused: no token, and another site's form.
            #expect(try await browser.send(.POST, app.base + "/auth/logout", form: "csrf=wrong").status == 403)
            #expect(try await browser.send(.POST, app.base + "/auth/logout", form: "csrf=\(csrf)", headers: [("Origin", "https://evil.example")]).status == 403)
            #expect(try await browser.send(.GET, app.base + "/profile").status == 200)

            let out = try await browser.send(.POST, app.base + "/auth/logout", form: "csrf=\(csrf)", headers: [("Origin", app.base)])
            #expect(out.status == 303)
            let endSession = try #require(out.headers.first(name: "Location"))
            #expect(endSession.hasPrefix(app.provider.issuer.absoluteString))
            #expect(endSession.contains("id_token_hint="))
            #expect(browser.cookies["oauth2-session"] == nil)
            // Gone on the server, not only in the browser: the old cookie no longer works.
            #expect(try await browser.send(.GET, app.base + "/profile").status == 303)
        }
    }

    @Test("The session cookie: HttpOnly, SameSite=Lax, Path=/, not Secure on http loopback, under 200 bytes")
    func cookie() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            let start = try await browser.send(.GET, app.base + "/profile")
            let callback = try await app.provider.followRedirect(from: try #require(start.headers.first(name: "Location").flatMap(URL.init(string:))))
            let back = try await browser.send(.GET, callback.absoluteString)
            let setCookie = try #require(back.headers["Set-Cookie"].first { $0.hasPrefix("oauth2-session=") })
            #expect(setCookie.contains("HttpOnly"))
            #expect(setCookie.contains("SameSite=Lax"))
            #expect(setCookie.contains("Path=/"))
            #expect(!setCookie.contains("Secure"))
            #expect(setCookie.utf8.count < 200)
        }
    }

    @Test("Signing out at the provider ends the app's session: the provider's logout token reaches the Vapor route")
    func backChannelLogout() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            #expect(try await Self.signIn(browser, app).status == 200)
            let user = try #require(try await app.signIn.user(for: HTTPRequest(
                method: .get, scheme: "http", authority: "x", path: "/", headerFields: [.cookie: "oauth2-session=\(browser.cookies["oauth2-session"] ?? "")"])))
            let tokens = try await user.tokenSession.freshTokens()
            // The user signs out at the provider (its end-session page, in the browser).
            let endSession = try app.signIn.client.endSessionRequest(EndSessionOptions(idTokenHint: tokens.idToken))
            try await app.provider.openInBrowser(endSession.url)
            let delivery = try #require(app.provider.backChannelLogoutDeliveries.last)
            #expect(delivery.statusCode == 200)
            #expect(try await browser.send(.GET, app.base + "/profile").status == 303)
        }
    }

    @Test("Per-route requirements: a claim the user lacks is 403")
    func requirement() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            let profile = try await Self.signIn(browser, app)
            #expect(profile.status == 200)
            let admin = try await browser.send(.GET, app.base + "/admin")
            #expect(admin.status == 403)
        }
    }

    @Test("DPoP-bound tokens: RFC 9449's resource-server rules hold through VaporResourceServerMiddleware")
    func dpop() async throws {
        try await Self.withApp { app in
            let browser = Browser()
            let failures = try await DPoPAPIConformance.run(url: URL(string: app.base + "/dpop/orders")!) { url, fields in
                let answer = try await browser.send(.GET, url.absoluteString, headers: fields.map { ($0.name.rawName, $0.value) })
                var received = HTTPFields()
                for (name, value) in answer.headers { if let name = HTTPField.Name(name) { received.append(HTTPField(name: name, value: value)) } }
                return DPoPAPIConformance.Answer(status: answer.status, headerFields: received, body: answer.body)
            }
            #expect(failures.isEmpty, "\(failures)")
        }
    }

    @Test("A bearer-protected API: the provider's token accepted (introspected), others refused with the RFC 6750 challenge")
    func bearer() async throws {
        try await Self.withApp { app in
            let client = try await OAuth2Client(
                server: .issuer(app.provider.issuer),
                configuration: ClientConfiguration(clientID: TestProvider.Demo.confidentialClientID, clientSecret: TestProvider.Demo.confidentialClientSecret),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let tokens = try await client.clientCredentials(scopes: ["profile"])
            let browser = Browser()
            let accepted = try await browser.send(.GET, app.base + "/orders", headers: [("Authorization", "Bearer \(tokens.accessToken)")])
            #expect(accepted.status == 200)
            #expect(accepted.body.hasPrefix("orders of"))

            let none = try await browser.send(.GET, app.base + "/orders")
            #expect(none.status == 401)
            #expect(none.headers.first(name: "WWW-Authenticate")?.hasPrefix("Bearer") == true)
            let forged = try await browser.send(.GET, app.base + "/orders", headers: [("Authorization", "Bearer not-a-token")])
            #expect(forged.status == 401)
            #expect(forged.headers.first(name: "WWW-Authenticate")?.contains("error=\"invalid_token\"") == true)
            #expect(forged.headers.first(name: "WWW-Authenticate")?.contains("not-a-token") == false)
        }
    }
}
#endif
