import Foundation

extension TokenSession {
    /// How a ``TokenSession`` keeps its tokens fresh and answers a refused token.
    public struct Options: Sendable {
        /// How long before its expiry an access token is renewed. Default 60 s.
        ///
        /// For a token that lives less than twice as long, half its lifetime is used instead,
        /// so that a short-lived token is not renewed on every call.
        public var leeway: TimeInterval
        /// How the session gets new tokens. Default ``Renewal/refreshToken``.
        public var renewal: Renewal
        /// Also renew the token and retry once when a resource server answers 403
        /// (as p2/OAuth2 does). Default `false`: only a 401 does that.
        public var retryOnForbidden: Bool
        /// Signs in again for more scopes (step-up, incremental consent) when a resource
        /// server answers ``perform(_:body:)`` with `403` and a `Bearer`/`DPoP` challenge
        /// `error="insufficient_scope"` naming the scopes it needs (RFC 6750 §3.1; the MCP
        /// authorization specification's scope challenge). It is called with the session's
        /// client and the union of the granted scopes and the named ones, at most once per
        /// request; its tokens become the session's (saved in the store) and the request is
        /// sent once more. Default `nil`: such a 403 is returned as it is.
        public var stepUp: StepUp?

        /// A step-up sign-in: given the session's client and the scopes to ask for, the
        /// tokens of a new sign-in (an authorization-code flow with those scopes, a device
        /// flow…).
        public typealias StepUp = @Sendable (_ client: OAuth2Client, _ scopes: [String]) async throws -> TokenSet

        /// Creates options.
        public init(
            leeway: TimeInterval = 60, renewal: Renewal = .refreshToken, retryOnForbidden: Bool = false, stepUp: StepUp? = nil
        ) {
            self.leeway = leeway
            self.renewal = renewal
            self.retryOnForbidden = retryOnForbidden
            self.stepUp = stepUp
        }
    }

    /// How a ``TokenSession`` gets new tokens when its access token expires or is refused.
    public enum Renewal: Sendable, Hashable {
        /// Present the refresh token (RFC 6749 §6). Without one, or when the server refuses
        /// it, the user has to sign in again.
        case refreshToken
        /// Ask for a new token with the client's own credentials (RFC 6749 §4.4): a service
        /// account's session never needs a sign-in. `nil` scopes means the configuration's.
        case clientCredentials(scopes: [String]? = nil)
    }
}
