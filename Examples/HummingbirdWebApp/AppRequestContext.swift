#if Hummingbird
import Hummingbird
import OAuth2Hummingbird
import OAuth2Web

/// The context of each request: Hummingbird's, the signed-in user (WebSignInMiddleware) and,
/// on the bearer-protected API, the verified access token (ResourceServerMiddleware).
struct AppRequestContext: WebSignInRequestContext, AccessTokenRequestContext {
    var coreContext: CoreRequestContextStorage
    var webUser: WebUser?
    var accessToken: VerifiedAccessToken?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}
#endif
