#if Hummingbird
import Hummingbird
import OAuth2Hummingbird
import OAuth2Web

/// The context of each request: Hummingbird's, the signed-in user (HummingbirdWebSignInMiddleware) and,
/// on the bearer-protected API, the verified access token (HummingbirdResourceServerMiddleware).
struct AppRequestContext: WebSignInRequestContext, AccessTokenRequestContext {
    var coreContext: CoreRequestContextStorage
    var webUser: WebUser?
    var accessToken: VerifiedAccessToken?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}
#endif
