#if Vapor
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web
import Vapor

/// Serves a protected resource's metadata (RFC 9728) for a Vapor API: answers `GET`/`HEAD`
/// of `ResourceServer.metadataResponse(for:)`'s path — the resource identifier's path under
/// `/.well-known/oauth-protected-resource`, e.g. `/.well-known/oauth-protected-resource/mcp`
/// for `https://mcp.example.com/mcp` — and lets every other request through.
///
/// ```swift
/// let resourceServer = try ResourceServer(
///     resource: ProtectedResource(identifier: URL(string: "https://mcp.example.com/mcp")!, scopesSupported: ["tools:call"]),
///     accessTokens: AccessTokenVerifier(issuers: [issuer]))
/// app.middleware.use(VaporProtectedResourceMetadataMiddleware(resourceServer))
/// app.grouped(VaporResourceServerMiddleware(resourceServer, requiredScopes: ["tools:call"])).post("mcp") { request in … }
/// ```
///
/// Use it as an application middleware (`app.middleware.use`): the metadata's path is no
/// route of the app. The document was built when the resource server was made: answering
/// costs no store lookup, and nothing of the request goes into it. It only translates: the
/// answer is `ResourceServer`'s.
public struct VaporProtectedResourceMetadataMiddleware: AsyncMiddleware {
    /// The resource server whose `resource` is published.
    public let resourceServer: ResourceServer

    /// Publishes `resourceServer`'s metadata (made with a `ProtectedResource`; without one,
    /// the middleware answers nothing).
    public init(_ resourceServer: ResourceServer) {
        self.resourceServer = resourceServer
    }

    /// Answers a request for the metadata, or passes it on.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        // Most requests are for other paths: the request is converted only for this one.
        if request.url.path.hasPrefix(ProtectedResourceMetadata.wellKnownPath), let answer = resourceServer.metadataResponse(for: request.httpRequest) {
            return Response(answer)
        }
        return try await next.respond(to: request)
    }
}
#endif
