#if Hummingbird
import HTTPTypes
import Hummingbird
import NIOCore
import OAuth2Web

/// OpenID Connect sign-in for a Hummingbird app: answers `WebSignIn`'s own
/// routes and puts the signed-in user in the request context.
///
/// It only translates: every decision (cookies, CSRF, redirects, step-up, logout tokens) is
/// `WebSignIn`'s.
///
/// ```swift
/// let router = Router(context: AppRequestContext.self)
/// // The sign-in routes (login, callback, logout, back- and front-channel logout), and
/// // `context.webUser` for every route when someone is signed in:
/// router.add(middleware: HummingbirdWebSignInMiddleware(signIn))
/// router.get("/") { _, context in context.webUser?.subject ?? "Not signed in" }
///
/// // Routes that need a signed-in user: a group with its requirement.
/// router.group("account")
///     .add(middleware: HummingbirdWebSignInMiddleware(signIn, requiring: WebAccessRequirement()))
///     .get("profile") { _, context in context.webUser!.subject }
/// ```
///
/// For each request it:
/// 1. answers a request to one of the sign-in routes with `WebSignIn.handle(_:body:)`,
///    collecting the body (at most 32 KB, else 413) only for the routes that read it (the
///    logout form and the back-channel logout token);
/// 2. with a requirement, checks it with `WebSignIn.authorize(_:requiring:)`:
///    the user goes into ``WebSignInRequestContext/webUser``, or the request is answered
///    with WebSignIn's refusal (a redirect to the provider, 401 or 403);
/// 3. without one, puts the user, if any, in ``WebSignInRequestContext/webUser`` and never
///    refuses (a public page that greets a signed-in user).
///
/// A middleware added to a route group runs only for the group's routes: add one without a
/// requirement to the router itself, so that the sign-in routes are answered.
@available(macOS 14, iOS 17, tvOS 17, *)
public struct HummingbirdWebSignInMiddleware<Context: WebSignInRequestContext>: RouterMiddleware {
    /// The sign-in whose routes and sessions this middleware serves.
    public let signIn: WebSignIn
    /// What the routes behind this middleware require of the user; `nil`: nothing (the user
    /// is looked up, not required).
    public let requirement: WebAccessRequirement?

    /// Creates the middleware.
    ///
    /// - Parameters:
    ///   - signIn: the app's sign-in.
    ///   - requirement: what the routes behind it require (`WebAccessRequirement()`: a
    ///     signed-in user); `nil` to require nothing and only look the user up.
    public init(_ signIn: WebSignIn, requiring requirement: WebAccessRequirement? = nil) {
        self.signIn = signIn
        self.requirement = requirement
    }

    /// Answers the sign-in routes, checks the requirement, and calls `next` with the user
    /// in the context.
    ///
    /// - Throws: `NIOTooManyBytesError` (answered 413) for a body over 32 KB on a route
    ///   that reads it; `HTTPError(.serviceUnavailable)` when the session store cannot be
    ///   read to look the user up; whatever `next` throws.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var request = request
        // The path is matched once: most requests are for none of the sign-in routes.
        if signIn.route(of: request.head) != nil {
            var body: [UInt8] = []
            if signIn.readsBody(request.head) {
                body = Array(buffer: try await request.collectBody(upTo: WebSignIn.maximumBodySize))
            }
            if let answer = await signIn.handle(request.head, body: body) {
                return Response(answer)
            }
        }
        var context = context
        if let requirement {
            switch await signIn.authorize(request.head, requiring: requirement) {
            case .granted(let user): context.webUser = user
            case .denied(let answer): return Response(answer)
            }
        } else if context.webUser == nil {
            do {
                context.webUser = try await signIn.user(for: request.head)
            } catch {
                context.logger.debug("Web sign-in: the session store could not be read", metadata: ["error": "\(type(of: error))"])
                throw HTTPError(.serviceUnavailable)
            }
        }
        return try await next(request, context)
    }
}
#endif
