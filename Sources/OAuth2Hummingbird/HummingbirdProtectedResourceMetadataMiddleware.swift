#if Hummingbird
import HTTPTypes
import Hummingbird
import OAuth2Web

/// Serves a protected resource's metadata (RFC 9728) for a Hummingbird API: answers
/// `GET`/`HEAD` of `ResourceServer.metadataResponse(for:)`'s path — the resource
/// identifier's path under `/.well-known/oauth-protected-resource`, e.g.
/// `/.well-known/oauth-protected-resource/mcp` for `https://mcp.example.com/mcp` — and lets
/// every other request through.
///
/// ```swift
/// let resourceServer = try ResourceServer(
///     resource: ProtectedResource(identifier: URL(string: "https://mcp.example.com/mcp")!, scopesSupported: ["tools:call"]),
///     accessTokens: AccessTokenVerifier(issuers: [issuer]))
/// let router = Router(context: APIRequestContext.self)
/// router.add(middleware: HummingbirdProtectedResourceMetadataMiddleware(resourceServer))
/// router.group("mcp")
///     .add(middleware: HummingbirdResourceServerMiddleware(resourceServer, requiredScopes: ["tools:call"]))
///     .post { _, context in … }
/// ```
///
/// Add it to the router itself (not to a group): the metadata's path is outside the API's
/// routes. The document was built when the resource server was made: answering costs no
/// store lookup, and nothing of the request goes into it. It only translates: the answer
/// is `ResourceServer`'s.
@available(macOS 14, iOS 17, tvOS 17, *)
public struct HummingbirdProtectedResourceMetadataMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The resource server whose `ResourceServer.resource` is published.
    public let server: ResourceServer

    /// Creates the middleware.
    ///
    /// - Parameter server: a resource server made with a `ProtectedResource` (without one,
    ///   the middleware answers nothing).
    public init(_ server: ResourceServer) {
        self.server = server
    }

    /// Answers a request for the metadata, or calls `next`.
    ///
    /// - Throws: whatever `next` throws.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let answer = server.metadataResponse(for: request.head) { return Response(answer) }
        return try await next(request, context)
    }
}
#endif
