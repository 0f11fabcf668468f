#if Hummingbird
import Hummingbird
import OAuth2Web

/// A request context that carries the signed-in user of a web app, which
/// ``HummingbirdWebSignInMiddleware`` puts there.
///
/// ```swift
/// struct AppRequestContext: WebSignInRequestContext {
///     var coreContext: CoreRequestContextStorage
///     var webUser: WebUser?
///     init(source: ApplicationRequestContextSource) {
///         coreContext = .init(source: source)
///     }
/// }
/// ```
@available(macOS 14, iOS 17, tvOS 17, *)
public protocol WebSignInRequestContext: RequestContext {
    /// The signed-in user of the request: set by ``HummingbirdWebSignInMiddleware`` when the request's
    /// session cookie names a live session; `nil` before it ran, or when nobody is signed in.
    var webUser: WebUser? { get set }
}
#endif
