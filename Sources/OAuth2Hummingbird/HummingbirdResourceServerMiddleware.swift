#if Hummingbird
import HTTPTypes
import Hummingbird
import OAuth2Web

/// The access-token check of a Hummingbird API (an OAuth 2.0 resource server): bearer tokens
/// (RFC 6750) and DPoP-bound tokens (RFC 9449), checked by `ResourceServer`.
///
/// ```swift
/// let resourceServer = ResourceServer(
///     introspection: TokenIntrospector(client: apiClient, accepting: .audiences(["https://api.example.com"])))
/// let router = Router(context: APIRequestContext.self)
/// router.group("api")
///     .add(middleware: HummingbirdResourceServerMiddleware(resourceServer, requiredScopes: ["orders:read"]))
///     .get("orders") { _, context in context.accessToken!.subject ?? "" }
/// ```
///
/// A request whose token passes every check reaches the route with the token in
/// ``AccessTokenRequestContext/accessToken``, and its response gets the resource server's
/// extra header fields (a new `DPoP-Nonce`). Any other request is answered with the
/// challenge: its status (401, 403 for a missing scope, 400, 503 when the introspection
/// endpoint cannot be asked) and its `WWW-Authenticate` fields (RFC 6750 §3, RFC 9449 §7.1).
/// It only translates: every check is `ResourceServer`'s.
///
/// Certificate-bound tokens (mutual TLS, RFC 8705 §3) are checked against the certificate the
/// client presented on the connection when the app serves TLS itself (HummingbirdTLS), asks
/// for client certificates, makes its `ResourceServer` with
/// `clientCertificates: .connection`, and its context is a ``ClientCertificateRequestContext``.
@available(macOS 14, iOS 17, tvOS 17, *)
public struct HummingbirdResourceServerMiddleware<Context: AccessTokenRequestContext>: RouterMiddleware {
    /// The checks.
    public let server: ResourceServer
    /// The scopes every token must grant for the routes behind this middleware.
    public let requiredScopes: [String]

    /// Creates the middleware.
    ///
    /// - Parameters:
    ///   - server: the API's resource server.
    ///   - requiredScopes: the scopes the routes behind it require (none by default).
    public init(_ server: ResourceServer, requiredScopes: [String] = []) {
        self.server = server
        self.requiredScopes = requiredScopes
    }

    /// Checks the request's access token, and calls `next` with it in the context, or
    /// answers with the challenge.
    ///
    /// - Throws: whatever `next` throws.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        switch await server.authorize(request.head, clientCertificate: await clientCertificate(of: context), requiredScopes: requiredScopes) {
        case .authorized(let access):
            var context = context
            context.accessToken = access.token
            var response = try await next(request, context)
            response.headers.append(contentsOf: access.responseHeaderFields)
            return response
        case .refused(let challenge):
            return Response(WebResponse(status: challenge.status, headerFields: challenge.headerFields))
        }
    }

    /// The certificate of the request's TLS connection, read only when the resource server
    /// checks certificate-bound tokens against the connection's certificate.
    func clientCertificate(of context: Context) async -> [UInt8]? {
        guard server.clientCertificates == .connection, let context = context as? any ClientCertificateRequestContext else { return nil }
        return await context.clientCertificate
    }
}
#endif
