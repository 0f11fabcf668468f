#if Vapor
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web
import Vapor

/// Requires an access token that OAuth2Web's `ResourceServer` accepts (bearer or DPoP, JWT
/// or introspected), with `requiredScopes`; refuses with the RFC 6750 / RFC 9449 challenge.
/// The verified token is ``Vapor/Request/accessToken``.
///
/// Certificate-bound tokens (mutual TLS, RFC 8705 §3) are checked against
/// ``Vapor/Request/clientCertificate`` when the `ResourceServer` is made with
/// `clientCertificates: .connection` and the app serves TLS itself, asking for client
/// certificates with a `customCertificateVerifyCallbackWithMetadata` (Vapor hands a
/// request the certificate it presented only then).
public struct VaporResourceServerMiddleware: AsyncMiddleware {
    /// The checks.
    public let resourceServer: ResourceServer
    /// Scopes every guarded route needs.
    public let requiredScopes: [String]

    /// Guards routes with `resourceServer`'s checks and `requiredScopes`.
    public init(_ resourceServer: ResourceServer, requiredScopes: [String] = []) {
        self.resourceServer = resourceServer
        self.requiredScopes = requiredScopes
    }

    /// Lets the request through with its verified token, or answers with the challenge.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let certificate = resourceServer.clientCertificates == .connection ? request.clientCertificate : nil
        switch await resourceServer.authorize(request.httpRequest, clientCertificate: certificate, requiredScopes: requiredScopes) {
        case .authorized(let authorized):
            request.accessToken = authorized.token
            let response = try await next.respond(to: request)
            for field in authorized.responseHeaderFields { response.headers.add(name: field.name.rawName, value: field.value) }
            return response
        case .refused(let challenge):
            return Response(WebResponse(status: challenge.status, headerFields: challenge.headerFields))
        }
    }
}
#endif
