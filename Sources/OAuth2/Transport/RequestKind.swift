import Foundation

/// The kinds of request the client sends, used to attach extra parameters and headers to
/// one kind only (and to tell interceptors what they are looking at).
public enum RequestKind: String, Sendable, Hashable, CaseIterable {
    /// Metadata discovery (`.well-known` documents).
    case discovery
    /// The front-channel authorization request (a URL, not sent by the client).
    case authorization
    /// Any request to the token endpoint.
    case token
    /// Token revocation (RFC 7009).
    case revocation
    /// Token introspection (RFC 7662).
    case introspection
    /// The OpenID Connect UserInfo endpoint.
    case userInfo
    /// Device authorization (RFC 8628).
    case deviceAuthorization
    /// Backchannel authentication requests (OpenID Connect CIBA Core §7).
    case backchannelAuthentication
    /// Pushed authorization requests (RFC 9126).
    case pushedAuthorization
    /// Dynamic client registration (RFC 7591).
    case registration
    /// The JWKS document.
    case jwks
    /// A request to a resource server (an API), sent by a ``TokenSession`` with the access token.
    case resource
}

extension RequestKind {
    /// Endpoints where a 401/403 means the client's credentials were refused.
    var authenticatesClient: Bool {
        switch self {
        case .token, .revocation, .introspection, .pushedAuthorization, .deviceAuthorization, .backchannelAuthentication: return true
        default: return false
        }
    }
}
