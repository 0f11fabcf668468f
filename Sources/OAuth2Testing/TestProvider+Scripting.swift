import Foundation

extension TestProvider {
    /// The provider's endpoints, for counting requests and scripting failures.
    public enum Endpoint: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// `/.well-known/openid-configuration` and `/.well-known/oauth-authorization-server`.
        case discovery
        /// `/jwks`: the JWK set.
        case jwks
        /// `/authorize`: the authorization endpoint.
        case authorization
        /// `/token`: the token endpoint.
        case token
        /// `/device_authorization`: the device authorization endpoint (RFC 8628).
        case deviceAuthorization
        /// `/device`: the page a user visits to approve a device.
        case deviceVerification
        /// `/userinfo`.
        case userInfo
        /// `/introspect` (RFC 7662).
        case introspection
        /// `/revoke` (RFC 7009).
        case revocation
        /// `/end_session` (OpenID Connect RP-Initiated Logout).
        case endSession

        /// The endpoint's path below the issuer (discovery: the OpenID document's).
        public var path: String {
            switch self {
            case .discovery: return "/.well-known/openid-configuration"
            case .jwks: return "/jwks"
            case .authorization: return "/authorize"
            case .token: return "/token"
            case .deviceAuthorization: return "/device_authorization"
            case .deviceVerification: return "/device"
            case .userInfo: return "/userinfo"
            case .introspection: return "/introspect"
            case .revocation: return "/revoke"
            case .endSession: return "/end_session"
            }
        }

        /// The case name.
        public var description: String { rawValue }
    }

    /// A failure to answer the next request to an endpoint with, instead of the normal
    /// answer (see ``TestProvider/failNext(_:with:times:)``).
    public enum Failure: Sendable, Hashable {
        /// An OAuth error: `{"error": code, "error_description": description}` with this
        /// status. At the authorization endpoint, a redirect to the client with `error`,
        /// `state` and `iss` (when the client and redirect URI are valid); at UserInfo, also a
        /// `WWW-Authenticate: Bearer error=…` header.
        case error(_ code: String, status: Int = 400, description: String? = nil)
        /// A bare status (503, 500, 429…) with a short text body, and `Retry-After` when given.
        case status(_ code: Int, retryAfter: Int? = nil)
        /// Waits, then answers normally.
        case delay(Duration)
        /// Closes the connection without answering (a reset, as far as the client knows).
        case closeConnection
    }
}
