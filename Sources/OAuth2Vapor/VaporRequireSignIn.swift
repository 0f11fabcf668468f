#if Vapor
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web
import Vapor

/// Requires a signed-in user who meets a requirement, for the routes it guards: otherwise
/// answers as `WebSignIn.authorize(_:requiring:)` says (a redirect to the provider, a
/// step-up, 401 or 403).
public struct VaporRequireSignIn: AsyncMiddleware {
    /// The web app's sign-in.
    public let signIn: WebSignIn
    /// What the guarded routes require.
    public let requirement: WebAccessRequirement

    /// Guards routes with `requirement` (by default: any signed-in user).
    public init(_ signIn: WebSignIn, requiring requirement: WebAccessRequirement = WebAccessRequirement()) {
        self.signIn = signIn
        self.requirement = requirement
    }

    /// Lets the request through with its user, or answers instead.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        switch await signIn.authorize(request.httpRequest, requiring: requirement) {
        case .granted(let user):
            request.webUser = user
            return try await next.respond(to: request)
        case .denied(let answer):
            return Response(answer)
        }
    }
}
#endif
