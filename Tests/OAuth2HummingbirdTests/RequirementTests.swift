#if Hummingbird
import Foundation
import HTTPTypes
import Hummingbird
@testable import HummingbirdWebApp
import Logging
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2Hummingbird
import OAuth2Testing
import OAuth2Web
import Testing

/// HummingbirdWebSignInMiddleware's per-group requirements, on a router of the test's own: step-up for
/// a scope, 403 for a claim, 401 for a POST without a session.
@Suite("Hummingbird: per-route requirements", .timeLimit(.minutes(2)))
struct RequirementTests {
    /// A Hummingbird server on a free port with `routes` over a sign-in at `provider`
    /// (client `requirements-app`, registered with the server's redirect URI).
    static func withServer(
        _ provider: TestProvider, routes: @escaping @Sendable (WebSignIn, Router<AppRequestContext>) -> Void,
        _ body: (URL) async throws -> Void
    ) async throws {
        let client = try await OAuth2Client(
            server: .issuer(provider.issuer),
            configuration: ClientConfiguration(clientID: "requirements-app", clientSecret: "requirements-secret"),
            environment: HTTPEnvironment(transport: WebAppFixture.transport, metadataCache: MetadataCache()))
        let responder = DeferredResponder<AppRequestContext>()
        let (listening, continuation) = AsyncStream.makeStream(of: URL.self)
        let app = Application(
            responder: responder, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                let base = URL(string: "http://127.0.0.1:\(channel.localAddress?.port ?? 0)")!
                let signIn = WebSignIn(client: client, configuration: WebSignInConfiguration(publicBaseURL: base, scopes: ["openid", "profile"]))
                provider.register(
                    TestProvider.Client(
                        id: "requirements-app", secret: "requirements-secret", redirectURIs: [signIn.configuration.redirectURI],
                        allowedScopes: TestProvider.Demo.scopes))
                let router = Router(context: AppRequestContext.self)
                router.add(middleware: HummingbirdWebSignInMiddleware(signIn))
                routes(signIn, router)
                responder.set(router.buildResponder())
                continuation.yield(base)
            },
            logger: WebAppFixture.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { continuation.finish() }
                try await app.run()
            }
            defer { group.cancelAll() }
            var urls = listening.makeAsyncIterator()
            guard let base = await urls.next() else {
                try await group.next()
                Issue.record("The server stopped before it listened")
                return
            }
            try await body(base)
        }
    }

    static func routes(_ signIn: WebSignIn, _ router: Router<AppRequestContext>) {
        router.group("/orders")
            .add(middleware: HummingbirdWebSignInMiddleware(signIn, requiring: WebAccessRequirement(scopes: ["api"])))
            .get { _, context in "orders of \(context.webUser!.subject): \(context.webUser!.scopes.sorted().joined(separator: " "))" }
            .post { _, context in "posted by \(context.webUser!.subject)" }
        router.group("/admin")
            .add(middleware: HummingbirdWebSignInMiddleware(signIn, requiring: WebAccessRequirement(claims: ["groups": "admins"])))
            .get { _, _ in "admin" }
        router.get("/whoami") { _, context in context.webUser?.subject ?? "nobody" }
    }

    @Test("A route that needs a scope the session lacks sends the browser back to the provider for it, then serves it")
    func stepUpForAScope() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            try await Self.withServer(provider, routes: Self.routes) { base in
                var browser = Browser()
                _ = try await browser.signIn(app: base, provider: provider, path: "/auth/login?returnTo=/whoami")
                let (whoami, whoamiBody) = try await browser.get(base.at("/whoami"))
                #expect(whoami.status == .ok)
                #expect(whoamiBody.text == TestProvider.Demo.subject)

                let (first, _) = try await browser.get(base.at("/orders"))
                #expect(first.status == .seeOther)
                let authorization = try #require(first.headerFields[.location].flatMap(URLComponents.init(string:)))
                // Form-encoded: `+` for each space.
                let scope = authorization.queryItems?.first { $0.name == "scope" }?.value?.split(whereSeparator: { $0 == "+" || $0 == " " }).map(String.init) ?? []
                #expect(Set(scope) == ["openid", "profile", "api"])
                let callback = try await provider.followRedirect(from: try #require(authorization.url))
                let (back, _) = try await browser.get(callback)
                #expect(back.status == .seeOther)
                #expect(back.headerFields[.location] == base.at("/orders").absoluteString)
                let (orders, ordersBody) = try await browser.get(base.at("/orders"))
                #expect(orders.status == .ok)
                #expect(ordersBody.text == "orders of \(TestProvider.Demo.subject): api openid profile")
            }
        }
    }

    @Test("A claim the user does not have is 403, and no redirect; a POST without a session is 401")
    func forbiddenAndUnauthorized() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            try await Self.withServer(provider, routes: Self.routes) { base in
                var browser = Browser()
                let (post, _) = try await browser.send(.post, base.at("/orders"), form: [("item", "1")])
                #expect(post.status == .unauthorized)
                #expect(post.headerFields[.location] == nil)

                _ = try await browser.signIn(app: base, provider: provider, path: "/auth/login?returnTo=/whoami")
                let (admin, _) = try await browser.get(base.at("/admin"))
                #expect(admin.status == .forbidden)
                #expect(admin.headerFields[.location] == nil)
            }
        }
    }
}
#endif
