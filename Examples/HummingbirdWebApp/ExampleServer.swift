#if Hummingbird
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2Hummingbird
import OAuth2JOSE
import OAuth2Testing
import OAuth2Web
import ServiceLifecycle
#if Postgres
import OAuth2Postgres
#endif

/// The example app: its provider, its client, its routes and its server.
enum ExampleServer {
    /// The client id the app registers at the embedded provider.
    static let embeddedClientID = "oauth2-web-example"

    /// Runs the app until it is stopped (a signal when `handlesSignals`, else the task's
    /// cancellation).
    ///
    /// - Parameters:
    ///   - settings: where to listen and which provider to use.
    ///   - embeddedProvider: the provider to use when `settings.issuer` is `nil` (tests pass
    ///     theirs); `nil`: start one with the demo configuration, for as long as the app runs.
    ///   - onListening: called with the public URL and the port listened on once the server
    ///     accepts connections.
    static func run(
        settings: ExampleSettings, embeddedProvider: TestProvider? = nil, logger: Logger, handlesSignals: Bool,
        onListening: @escaping @Sendable (_ publicURL: URL, _ port: Int) async -> Void
    ) async throws {
        let transport = AsyncHTTPClientTransport(tls: .init(caBundlePath: settings.caFile))
        // The single-page app's API calls go through the backend's proxy on a transport of
        // their own: bodies streamed, nothing decompressed, no redirect followed.
        let proxyTransport = AsyncHTTPClientProxyTransport(tls: .init(caBundlePath: settings.caFile))
        // A metadata cache of its own: the app has one client, and an embedded provider of a
        // test may reuse the port, and so the issuer, of an earlier one.
        let environment = HTTPEnvironment(transport: transport, logger: logger, metadataCache: MetadataCache())
        var startedProvider: TestProvider?
        do {
            let provider: TestProvider?
            let issuer: URL
            let clientID: String
            let clientSecret: String?
            if let configured = settings.issuer {
                provider = nil
                issuer = configured
                clientID = settings.clientID ?? ""
                clientSecret = settings.clientSecret
            } else {
                if let embeddedProvider {
                    provider = embeddedProvider
                } else {
                    startedProvider = try await TestProvider.start(configuration: .demo)
                    provider = startedProvider
                }
                issuer = provider!.issuer
                clientID = embeddedClientID
                clientSecret = settings.clientSecret ?? randomSecret()  // replicas of one app share theirs
                logger.info("Using the embedded test provider at \(issuer.absoluteString) (user \(TestProvider.Demo.username))")
            }
            // The redirect URI is WebSignIn's (from the public URL), set in every request.
            let client = try await OAuth2Client(
                server: .issuer(issuer),
                configuration: ClientConfiguration(clientID: clientID, clientSecret: clientSecret, scopes: settings.scopes),
                environment: environment)
            // The bearer-protected API checks the provider's (opaque) access tokens at its
            // introspection endpoint, with the app's own client credentials, and accepts only
            // those that name it: the provider answers "active" for a token of any client.
            let accepted = acceptedTokens(settings, embedded: provider != nil, appClientID: clientID, logger: logger)
            let resourceServer = ResourceServer(introspection: TokenIntrospector(client: client, accepting: accepted, logger: logger), logger: logger)

            let stores = try ExampleStores(settings, logger: logger)
            let responder = DeferredResponder<AppRequestContext>()
            let app = Application(
                responder: responder,
                configuration: ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: nil),
                onServerRunning: { channel in
                    // Only now is the port known (0 asks for any free one), and with it the
                    // public URL, the redirect URI and the logout URIs.
                    let port = channel.localAddress?.port ?? settings.port
                    let publicURL = settings.publicURL ?? settings.defaultPublicURL(port: port)
                    let configuration = WebSignInConfiguration(publicBaseURL: publicURL, scopes: settings.scopes)
                    if let provider {
                        var base = publicURL.absoluteString
                        while base.hasSuffix("/") { base.removeLast() }
                        provider.register(
                            TestProvider.Client(
                                id: clientID, secret: clientSecret, redirectURIs: [configuration.redirectURI],
                                postLogoutRedirectURIs: [URL(string: base + configuration.postLogoutPath)!],
                                grantTypes: [.authorizationCode, .refreshToken], allowedScopes: TestProvider.Demo.scopes.union(settings.scopes),
                                backChannelLogoutURI: URL(string: base + configuration.backChannelLogoutPath)!))
                    }
                    let signIn = stores.webSignIn(client: client, configuration: configuration, logger: logger)
                    // The single-page app's API: this app's own bearer API, reached through
                    // the proxy with the user's token.
                    let backend = SinglePageAppBackend(
                        signIn: signIn,
                        configuration: SinglePageAppBackend.Configuration(apis: [
                            SinglePageAppBackend.ProxiedAPI(pathPrefix: "/bff/api", destination: configuration.url("/api/bearer"))
                        ]),
                        transport: proxyTransport, logger: logger)
                    responder.set(router(signIn: signIn, backend: backend, resourceServer: resourceServer).buildResponder())
                    logger.info("Listening on \(settings.host):\(port), public URL \(publicURL.absoluteString)")
                    await onListening(publicURL, port)
                },
                logger: logger)
            // Beside the app, the PostgreSQL store's connection pool, until the app stops (on
            // SIGTERM or SIGINT when `handlesSignals`, else when the task is cancelled).
            try await withThrowingTaskGroup(of: Void.self) { group in
                for service in stores.services {
                    group.addTask {
                        do { try await service.run() } catch is CancellationError {} catch {
                            logger.error("The token store stopped: \(type(of: error))")
                        }
                    }
                }
                if handlesSignals {
                    try await app.runService()
                } else {
                    try await app.run()
                }
                group.cancelAll()
            }
        } catch {
            await startedProvider?.shutdown()
            try? await transport.shutdown()
            try? await proxyTransport.shutdown()
            throw error
        }
        await startedProvider?.shutdown()
        try? await transport.shutdown()
        try? await proxyTransport.shutdown()
    }

    /// The tokens the bearer API accepts: the settings' audiences and client ids; with the
    /// embedded provider and none set, those of the demo confidential client (the provider
    /// names a client in the `aud` of its users' tokens, and gives a client's own tokens —
    /// client credentials — no `aud`, only its `client_id`). With another provider and none
    /// set, no token: accepting any token the provider issued is never a default. With the
    /// embedded provider the app's own client is accepted too: its single-page app calls the
    /// API with the signed-in user's token, issued to the app.
    static func acceptedTokens(_ settings: ExampleSettings, embedded: Bool, appClientID: String, logger: Logger) -> TokenIntrospector.AcceptedTokens {
        if !settings.apiAudiences.isEmpty || !settings.apiClientIDs.isEmpty {
            return TokenIntrospector.AcceptedTokens(audiences: settings.apiAudiences, clientIDs: settings.apiClientIDs)
        }
        if embedded {
            let demo = TestProvider.Demo.confidentialClientID
            return TokenIntrospector.AcceptedTokens(audiences: [demo, appClientID], clientIDs: [demo, appClientID])
        }
        logger.notice("The bearer API accepts no token: set OAUTH2_EXAMPLE_API_AUDIENCES or OAUTH2_EXAMPLE_API_CLIENT_IDS")
        return TokenIntrospector.AcceptedTokens()
    }

    /// The app's routes.
    static func router(signIn: WebSignIn, backend: SinglePageAppBackend, resourceServer: ResourceServer) -> Router<AppRequestContext> {
        let router = Router(context: AppRequestContext.self)
        // The single-page app's backend first: /bff/user and the proxy under /bff/api (each
        // call must carry X-CSRF: 1; bodies are streamed, never read here).
        router.add(middleware: HummingbirdSinglePageAppMiddleware(backend))
        // The sign-in routes under /auth, and the user (if any) in every request's context.
        router.add(middleware: HummingbirdWebSignInMiddleware(signIn))
        router.get("/healthz") { _, _ in "ok" }
        router.get("/") { _, context in Pages.home(context.webUser) }
        // The single-page app: a static page and its script (no token ever reaches them).
        router.get("/spa/") { _, _ in SinglePageApp.response(SinglePageApp.page, contentType: "text/html; charset=utf-8") }
        router.get("/spa/app.js") { _, _ in SinglePageApp.response(SinglePageApp.script, contentType: "text/javascript; charset=utf-8") }

        // Pages that need a signed-in user: a browser that has none is sent to sign in.
        let signedIn = router.group().add(middleware: HummingbirdWebSignInMiddleware(signIn, requiring: WebAccessRequirement()))
        signedIn.get("/profile") { _, context in Pages.profile(context.webUser!) }
        signedIn.get("/api/userinfo") { _, context in try await userInfo(context.webUser!, client: signIn.client, logger: context.logger) }

        // An API for other clients: the provider's access token as a bearer token.
        router.group("/api/bearer")
            .add(middleware: HummingbirdResourceServerMiddleware(resourceServer))
            .get("whoami") { _, context in try tokenInfo(context.accessToken!) }
        return router
    }

    /// The provider's UserInfo for the user, with their access token (refreshed when needed
    /// by their token session), as JSON.
    static func userInfo(_ user: WebUser, client: OAuth2Client, logger: Logger) async throws -> Response {
        do {
            let tokens = try await user.tokenSession.freshTokens()
            let info = try await client.userInfo(accessToken: tokens.accessToken, tokenType: tokens.tokenType, expectedSubject: user.subject)
            return try json(.ok, info.claims)
        } catch let error as OAuth2Error {
            logger.warning("UserInfo failed: \(error.code)")
            return try json(.badGateway, ["error": .string("userinfo_failed"), "code": .string(error.code.rawValue)])
        }
    }

    /// What the API knows of a verified access token.
    static func tokenInfo(_ token: VerifiedAccessToken) throws -> Response {
        var claims: [String: JSONValue] = ["scope": .string(token.scopes.sorted().joined(separator: " "))]
        if let subject = token.subject { claims["sub"] = .string(subject) }
        if let clientID = token.clientID { claims["client_id"] = .string(clientID) }
        return try json(.ok, claims)
    }

    static func json(_ status: HTTPResponse.Status, _ value: [String: JSONValue]) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Response(
            status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }

    /// 32 random bytes, hex: the secret of the client registered at the embedded provider.
    static func randomSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// Where the app keeps browser sessions, sign-ins in progress, tokens and logout tokens'
/// `jti`s: in memory (one process), or in PostgreSQL, shared by every replica.
struct ExampleStores: Sendable {
    #if Postgres
    /// The PostgreSQL store, when the settings name one.
    let postgres: PostgresTokenStore?
    #endif

    /// - Throws: ``SettingsError`` for a PostgreSQL setting the build cannot use; what
    ///   `PostgresTokenStore` throws for a malformed URL or keys.
    init(_ settings: ExampleSettings, logger: Logger) throws {
        #if Postgres
        if let url = settings.postgresURL {
            postgres = try PostgresTokenStore(
                postgres: PostgresTokenStore.clientConfiguration(url: url),
                configuration: PostgresTokenStore.Configuration(schema: settings.postgresSchema),
                encryptionKeys: PostgresTokenStore.EncryptionKeys(parsing: settings.encryptionKeys ?? ""),
                logger: logger)
            logger.info("Sessions and tokens in PostgreSQL")
        } else {
            postgres = nil
        }
        #else
        if settings.postgresURL != nil {
            throw SettingsError("OAUTH2_EXAMPLE_POSTGRES_URL needs the app built with the trait Postgres (--traits URLSession,Hummingbird,Postgres)")
        }
        #endif
    }

    /// The services to run beside the app (the PostgreSQL store's connection pool).
    var services: [any Service] {
        #if Postgres
        if let postgres { return [postgres] }
        #endif
        return []
    }

    /// The app's sign-in on these stores.
    func webSignIn(client: OAuth2Client, configuration: WebSignInConfiguration, logger: Logger) -> WebSignIn {
        #if Postgres
        if let postgres {
            return WebSignIn(
                client: client, configuration: configuration, webSessions: PostgresWebSessionStore(store: postgres),
                tokenStore: postgres, replayStore: PostgresReplayStore(store: postgres), logger: logger)
        }
        #endif
        return WebSignIn(client: client, configuration: configuration, logger: logger)
    }
}

/// A responder that answers 503 until the real one is set: the router needs the public URL,
/// which needs the port, which is known only once the server listens.
final class DeferredResponder<Context: RequestContext>: HTTPResponder, @unchecked Sendable {
    private let lock = NSLock()
    private var responder: (any HTTPResponder<Context>)?

    func set(_ responder: some HTTPResponder<Context>) {
        lock.withLock { self.responder = responder }
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        guard let responder = lock.withLock({ self.responder }) else {
            return Response(status: .serviceUnavailable, headers: [.retryAfter: "1"])
        }
        return try await responder.respond(to: request, context: context)
    }
}
#endif
