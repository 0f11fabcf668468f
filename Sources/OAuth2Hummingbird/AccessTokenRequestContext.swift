#if Hummingbird
import Hummingbird
import OAuth2Web

/// A request context that carries the verified access token of an API request, which
/// ``HummingbirdResourceServerMiddleware`` puts there.
///
/// ```swift
/// struct APIRequestContext: AccessTokenRequestContext {
///     var coreContext: CoreRequestContextStorage
///     var accessToken: VerifiedAccessToken?
///     init(source: ApplicationRequestContextSource) {
///         coreContext = .init(source: source)
///     }
/// }
/// ```
@available(macOS 14, iOS 17, tvOS 17, *)
public protocol AccessTokenRequestContext: RequestContext {
    /// The request's access token, after every check of `ResourceServer`
    /// (signature or introspection, issuer, audience, lifetime, scopes, DPoP binding); `nil`
    /// before ``HummingbirdResourceServerMiddleware`` ran.
    var accessToken: VerifiedAccessToken? { get set }
}
#endif
