#if Vapor
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web
import Vapor

/// Answers OAuth2Web's sign-in routes (login, callback, logout, back- and front-channel
/// logout) and puts the signed-in user, if any, in every other request
/// (``Vapor/Request/webUser``).
///
/// ```swift
/// let signIn = WebSignIn(client: client, configuration: WebSignInConfiguration(publicBaseURL: baseURL))
/// app.middleware.use(VaporWebSignInMiddleware(signIn))
/// app.grouped(VaporRequireSignIn(signIn)).get("profile") { request in
///     "Hello, \(try request.requireWebUser().subject)"
/// }
/// ```
///
/// Every rule (cookies, `state`, CSRF, lifetimes, logout tokens) is OAuth2Web's: this type
/// only translates Vapor's requests and responses.
public struct VaporWebSignInMiddleware: AsyncMiddleware {
    /// The web app's sign-in.
    public let signIn: WebSignIn

    /// Creates the middleware of `signIn`.
    public init(_ signIn: WebSignIn) {
        self.signIn = signIn
    }

    /// Answers a sign-in route, or looks up the request's user and passes it on.
    ///
    /// - Throws: `Abort(.serviceUnavailable)` when the session store cannot be read; a body
    ///   over `WebSignIn.maximumBodySize` on a route that reads it: `Abort(.payloadTooLarge)`;
    ///   whatever `next` throws.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let head = request.httpRequest
        if signIn.route(of: head) != nil {
            let body = signIn.readsBody(head) ? try await request.bodyBytes() : nil
            // A route always answers; `nil` would mean another path, which `route(of:)` ruled out.
            guard let answer = await signIn.handle(head, body: body ?? []) else { return try await next.respond(to: request) }
            return Response(answer)
        }
        if request.webUser == nil {
            do {
                request.webUser = try await signIn.user(for: head)
            } catch {
                // Not "signed out": the session store could not answer.
                request.logger.debug("Web sign-in: the session store could not be read", metadata: ["error": "\(type(of: error))"])
                throw Abort(.serviceUnavailable)
            }
        }
        return try await next.respond(to: request)
    }
}
#endif
