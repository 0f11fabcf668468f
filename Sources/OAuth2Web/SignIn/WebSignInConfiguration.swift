import Crypto
import Foundation
import OAuth2JOSE

/// The settings of a web app's sign-in (``WebSignIn``): where the app is, its routes, its
/// cookie and its session lifetimes.
public struct WebSignInConfiguration: Sendable {
    /// The app's public address, as browsers reach it (behind a reverse proxy: the proxy's
    /// `https://` address). Redirect URIs and every `Location` the app sends are built from
    /// it, never from the request's `Host` header.
    public var publicBaseURL: URL
    /// The route that starts a sign-in (GET; `?returnTo=/path`).
    public var loginPath: String
    /// The redirect URI's path: the route the provider sends the browser back to.
    public var callbackPath: String
    /// The route that signs out (POST, with the session's CSRF token in `csrf`).
    public var logoutPath: String
    /// The route the provider posts logout tokens to (OpenID Connect Back-Channel Logout):
    /// register `publicBaseURL` + this path as the client's `backchannel_logout_uri`.
    public var backChannelLogoutPath: String
    /// The route the provider loads in a hidden frame at sign-out (OpenID Connect
    /// Front-Channel Logout): register it as the client's `frontchannel_logout_uri`.
    public var frontChannelLogoutPath: String
    /// Where the provider sends the browser after a sign-out (its `post_logout_redirect_uri`,
    /// which must be registered), and where the app goes after one when the provider has no
    /// end-session endpoint: a path of the app.
    public var postLogoutPath: String
    /// The scopes of every sign-in; routes may ask for more (``WebAccessRequirement``).
    public var scopes: [String]
    /// The session cookie's name. With an `https` base URL it always starts with `__Host-`
    /// (added to a name that lacks it): browsers then insist on `Secure`, `Path=/` and no
    /// `Domain`, so a sibling subdomain cannot plant or overwrite the cookie. The default is
    /// `__Host-oauth2-session` on `https`, `oauth2-session` on plain-HTTP loopback.
    public var cookieName: String {
        get { storedCookieName }
        set { storedCookieName = Self.prefixed(newValue, for: publicBaseURL) }
    }
    private var storedCookieName: String
    /// The longest time between two requests of a session.
    public var idleLifetime: TimeInterval
    /// The longest time a session lasts, however much it is used.
    public var absoluteLifetime: TimeInterval
    /// How long a sign-in may take at the provider before its callback is refused.
    public var signInLifetime: TimeInterval
    /// Absolute URLs (other than the app's own origin) that `returnTo` may name: the origin
    /// (scheme, host, port) of each is allowed. Relative paths of the app are always allowed.
    public var allowedReturnOrigins: [URL]
    /// Revoke the refresh token (or, without one, the access token) at sign-out, when the
    /// provider has a revocation endpoint.
    public var revokesTokensAtSignOut: Bool
    /// Whether a front-channel logout request without `iss` and `sid` ends the session of the
    /// cookie it carries. Off by default: such a request can come from any site (a top-level
    /// GET carries a `SameSite=Lax` cookie), so any page could sign the app's users out. Turn
    /// it on only for a provider that sends neither, and accept that risk.
    public var acceptsFrontChannelLogoutWithoutSessionID: Bool

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - publicBaseURL: the app's address as browsers reach it.
    ///   - scopes: the scopes of every sign-in (`openid` is needed: the session's user comes
    ///     from the ID token).
    ///   - loginPath: the route that starts a sign-in.
    ///   - callbackPath: the redirect URI's path.
    ///   - logoutPath: the sign-out route (POST).
    ///   - backChannelLogoutPath: the back-channel logout route (the provider's POSTs).
    ///   - frontChannelLogoutPath: the front-channel logout route (the provider's frame).
    ///   - postLogoutPath: where the browser lands after a sign-out.
    ///   - cookieName: the session cookie's name, `oauth2-session` by default; with an
    ///     `https` base URL it gets the `__Host-` prefix when it lacks it.
    ///   - idleLifetime: 1 day by default (express-openid-connect's rolling duration).
    ///   - absoluteLifetime: 7 days by default.
    ///   - signInLifetime: how long a sign-in may take at the provider (10 minutes).
    ///   - allowedReturnOrigins: other origins `returnTo` may name.
    ///   - revokesTokensAtSignOut: revoke the tokens at sign-out (on by default).
    ///   - acceptsFrontChannelLogoutWithoutSessionID: let a front-channel logout without
    ///     `iss` and `sid` end the cookie's session (off by default; see the property).
    public init(
        publicBaseURL: URL,
        scopes: [String] = ["openid", "profile", "email"],
        loginPath: String = "/auth/login",
        callbackPath: String = "/auth/callback",
        logoutPath: String = "/auth/logout",
        backChannelLogoutPath: String = "/auth/backchannel-logout",
        frontChannelLogoutPath: String = "/auth/frontchannel-logout",
        postLogoutPath: String = "/",
        cookieName: String? = nil,
        idleLifetime: TimeInterval = 24 * 3600,
        absoluteLifetime: TimeInterval = 7 * 24 * 3600,
        signInLifetime: TimeInterval = 10 * 60,
        allowedReturnOrigins: [URL] = [],
        revokesTokensAtSignOut: Bool = true,
        acceptsFrontChannelLogoutWithoutSessionID: Bool = false
    ) {
        self.publicBaseURL = publicBaseURL
        self.scopes = scopes
        self.loginPath = loginPath
        self.callbackPath = callbackPath
        self.logoutPath = logoutPath
        self.backChannelLogoutPath = backChannelLogoutPath
        self.frontChannelLogoutPath = frontChannelLogoutPath
        self.postLogoutPath = postLogoutPath
        self.storedCookieName = Self.prefixed(cookieName ?? "oauth2-session", for: publicBaseURL)
        self.idleLifetime = idleLifetime
        self.absoluteLifetime = absoluteLifetime
        self.signInLifetime = signInLifetime
        self.allowedReturnOrigins = allowedReturnOrigins
        self.revokesTokensAtSignOut = revokesTokensAtSignOut
        self.acceptsFrontChannelLogoutWithoutSessionID = acceptsFrontChannelLogoutWithoutSessionID
    }

    /// `publicBaseURL` + `path` (`publicBaseURL` itself if that is no URL).
    package func url(_ path: String) -> URL {
        var base = publicBaseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + (path.hasPrefix("/") ? path : "/" + path)) ?? publicBaseURL
    }

    /// The redirect URI registered at the provider.
    public var redirectURI: URL { url(callbackPath) }

    /// Whether the cookies carry `Secure`: always, but on a plain-HTTP loopback address
    /// (a developer's machine), where a browser would drop a `Secure` cookie.
    var securesCookies: Bool {
        guard publicBaseURL.scheme?.lowercased() == "http" else { return true }
        let host = publicBaseURL.host?.lowercased() ?? ""
        return !(host == "localhost" || host == "127.0.0.1" || host == "::1" || host == "[::1]")
    }

    /// `name` with the `__Host-` prefix when `base` is `https`.
    static func prefixed(_ name: String, for base: URL) -> String {
        base.scheme?.lowercased() == "https" && !name.hasPrefix("__Host-") ? "__Host-" + name : name
    }

    /// The start of the name of every cookie that binds a pending sign-in to its browser
    /// (see ``PendingSignIn``).
    var bindingCookieName: String { cookieName + "-signin" }

    /// The cookie that binds the pending sign-in of `state` to its browser: one cookie per
    /// sign-in, so that tabs signing in at once each keep theirs, and no value the request
    /// brings is ever taken over as a binding.
    package func bindingCookieName(state: String) -> String {
        bindingCookieName + "-" + String(Base64URL.encode(Array(SHA256.hash(data: Array(state.utf8)))).prefix(12))
    }
}
