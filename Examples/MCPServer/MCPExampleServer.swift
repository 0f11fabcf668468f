#if MCP && Hummingbird
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2Hummingbird
import OAuth2Testing
import OAuth2Web

/// The example MCP server: its authorization server, its resource server, its routes.
enum MCPExampleServer {
    /// The public client an MCP client signs in with at the embedded provider (authorization
    /// code with PKCE, any loopback port, path `/callback`).
    static let embeddedMCPClientID = "oauth2-mcp-example-client"
    /// The server's own client at the embedded provider: it introspects tokens with it.
    static let embeddedServerClientID = "oauth2-mcp-example-server"

    /// Runs the server until it is stopped (a signal when `handlesSignals`, else the task's
    /// cancellation).
    ///
    /// - Parameters:
    ///   - settings: where to listen and which authorization server to trust.
    ///   - embeddedProvider: the provider to use when `settings.issuer` is `nil` (tests pass
    ///     theirs); `nil`: start one with the demo configuration, for as long as the server runs.
    ///   - onProvider: called with the embedded provider's issuer and the MCP client's id.
    ///   - onListening: called with the resource identifier and the port listened on once the
    ///     server accepts connections.
    static func run(
        settings: MCPExampleSettings, embeddedProvider: TestProvider? = nil, logger: Logger, handlesSignals: Bool,
        onProvider: @escaping @Sendable (_ issuer: URL, _ clientID: String) async -> Void = { _, _ in },
        onListening: @escaping @Sendable (_ resource: URL, _ port: Int) async -> Void
    ) async throws {
        var startedProvider: TestProvider?
        do {
            try await serve(settings: settings, embeddedProvider: embeddedProvider, startedProvider: &startedProvider, logger: logger,
                            handlesSignals: handlesSignals, onProvider: onProvider, onListening: onListening)
        } catch {
            await startedProvider?.shutdown()
            throw error
        }
        await startedProvider?.shutdown()
    }

    private static func serve(
        settings: MCPExampleSettings, embeddedProvider: TestProvider?, startedProvider: inout TestProvider?, logger: Logger,
        handlesSignals: Bool, onProvider: @escaping @Sendable (_ issuer: URL, _ clientID: String) async -> Void,
        onListening: @escaping @Sendable (_ resource: URL, _ port: Int) async -> Void
    ) async throws {
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
                var configuration = TestProvider.Configuration.demo
                configuration.clientMetadataDocuments = settings.clientMetadataDocuments
                configuration.tls = settings.providerTLS
                startedProvider = try await TestProvider.start(configuration: configuration)
                provider = startedProvider
            }
            issuer = provider!.issuer
            clientID = embeddedServerClientID
            let secret = randomSecret()
            clientSecret = secret
            provider!.register(TestProvider.Client(id: embeddedServerClientID, secret: secret, grantTypes: [.clientCredentials], allowedScopes: []))
            provider!.register(
                TestProvider.Client(
                    id: embeddedMCPClientID, redirectURIs: [TestProvider.Demo.redirectURI, TestProvider.Demo.redirectURIv6],
                    grantTypes: [.authorizationCode, .refreshToken], allowedScopes: Set(ExampleTools.scopes + ["offline_access"])))
            logger.info("Using the embedded test provider at \(issuer.absoluteString) (user \(TestProvider.Demo.username), client \(embeddedMCPClientID))")
            await onProvider(issuer, embeddedMCPClientID)
        }
        // The server's own client: it asks the authorization server whether a token is active
        // (RFC 7662). A metadata cache of its own: a test's embedded provider may reuse the
        // port, and so the issuer, of an earlier one. To an embedded provider on HTTPS it goes
        // through AsyncHTTPClient, which can trust a CA of the run's own (URLSession on Linux
        // trusts only the system's store).
        let tlsTransport = provider != nil && settings.providerTLS != nil
            ? AsyncHTTPClientTransport(tls: .init(caBundlePath: settings.providerTLSRootsPath)) : nil
        do {
            try await serve(settings: settings, issuer: issuer, clientID: clientID, clientSecret: clientSecret, transport: tlsTransport,
                            logger: logger, handlesSignals: handlesSignals, onListening: onListening)
        } catch {
            try? await tlsTransport?.shutdown()
            throw error
        }
        try? await tlsTransport?.shutdown()
    }

    /// Serves with the authorization server at `issuer` (through `transport` if given).
    private static func serve(
        settings: MCPExampleSettings, issuer: URL, clientID: String, clientSecret: String?, transport: (any HTTPTransport)?,
        logger: Logger, handlesSignals: Bool, onListening: @escaping @Sendable (_ resource: URL, _ port: Int) async -> Void
    ) async throws {
        var environment = HTTPEnvironment(logger: logger, metadataCache: MetadataCache())
        if let transport { environment.transport = transport }
        let client = try await OAuth2Client(
            server: .issuer(issuer), configuration: ClientConfiguration(clientID: clientID, clientSecret: clientSecret, scopes: []),
            environment: environment)

        let responder = DeferredResponder<MCPRequestContext>()
        let endpoint = EndpointBox()
        let app = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: nil),
            onServerRunning: { channel in
                // Only now is the port known (0 asks for any free one), and with it the resource
                // identifier: the public URL's /mcp.
                let port = channel.localAddress?.port ?? settings.port
                let resource = settings.resourceIdentifier(port: port)
                do {
                    let resourceServer = try ResourceServer(
                        resource: ProtectedResource(
                            identifier: resource, authorizationServers: [issuer.absoluteString], scopesSupported: ExampleTools.scopes,
                            name: "swift-oauth2 example MCP server"),
                        introspection: TokenIntrospector(client: client, accepting: TokenIntrospector.AcceptedTokens(), logger: logger),
                        logger: logger)
                    let mcp = MCPEndpoint(resourceServer: resourceServer, resource: resource, logger: logger)
                    endpoint.set(mcp)
                    responder.set(router(resourceServer: resourceServer, endpoint: mcp).buildResponder())
                    logger.info("Serving MCP at \(resource.absoluteString)")
                    await onListening(resource, port)
                } catch {
                    logger.critical("The resource server cannot be configured: \(error)")
                }
            },
            logger: logger)
        if handlesSignals {
            try await app.runService()
        } else {
            try await app.run()
        }
        await endpoint.get()?.closeAll()
    }

    /// The server's routes: the metadata (RFC 9728), and /mcp behind the token check. The
    /// endpoint itself needs `mcp:read`; each tool checks its own scope (``MCPEndpoint``).
    static func router(resourceServer: ResourceServer, endpoint: MCPEndpoint) -> Router<MCPRequestContext> {
        let router = Router(context: MCPRequestContext.self)
        router.add(middleware: HummingbirdProtectedResourceMetadataMiddleware(resourceServer))
        router.get("/healthz") { _, _ in "ok" }
        let mcp = router.group("mcp")
            .add(middleware: HummingbirdResourceServerMiddleware(resourceServer, requiredScopes: [ExampleTools.readScope]))
        mcp.post { request, context in try await endpoint.respond(to: request, token: context.accessToken!) }
        mcp.get { request, context in try await endpoint.respond(to: request, token: context.accessToken!) }
        mcp.delete { request, context in try await endpoint.respond(to: request, token: context.accessToken!) }
        return router
    }

    /// 32 random bytes, hex: the secret of the server's client at the embedded provider.
    static func randomSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// The context of each request: Hummingbird's and the verified access token
/// (HummingbirdResourceServerMiddleware).
struct MCPRequestContext: AccessTokenRequestContext {
    var coreContext: CoreRequestContextStorage
    var accessToken: VerifiedAccessToken?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

/// The endpoint, once the server listens.
final class EndpointBox: @unchecked Sendable {
    private let lock = NSLock()
    private var endpoint: MCPEndpoint?

    func set(_ endpoint: MCPEndpoint) { lock.withLock { self.endpoint = endpoint } }
    func get() -> MCPEndpoint? { lock.withLock { endpoint } }
}

/// A responder that answers 503 until the real one is set: the routes need the resource
/// identifier, which needs the port, which is known only once the server listens.
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
