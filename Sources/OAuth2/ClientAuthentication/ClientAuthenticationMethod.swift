import Foundation

/// How the client authenticates to the token, revocation and introspection endpoints
/// (RFC 6749 §2.3, OIDC Core §9). An open set, spelled as the metadata spells it.
public struct ClientAuthenticationMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    /// The registered name (`client_secret_basic`…).
    public let rawValue: String
    /// Creates a method from its registered name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates a method from a string literal.
    public init(stringLiteral value: String) { self.rawValue = value }
    /// The registered name.
    public var description: String { rawValue }

    /// HTTP Basic with the form-urlencoded client id and secret (RFC 6749 §2.3.1).
    public static let clientSecretBasic: Self = "client_secret_basic"
    /// `client_id` and `client_secret` in the request body.
    public static let clientSecretPost: Self = "client_secret_post"
    /// A public client: `client_id` in the body, no secret.
    public static let none: Self = "none"
    /// A JWT signed with the client secret (HMAC), RFC 7523 §2.2 / OIDC Core §9.
    public static let clientSecretJWT: Self = "client_secret_jwt"
    /// A JWT signed with the client's private key (``ClientConfiguration/privateKey``),
    /// RFC 7523 §2.2 / OIDC Core §9.
    public static let privateKeyJWT: Self = "private_key_jwt"
    /// Mutual TLS with a certificate issued by a CA the server trusts (RFC 8705 §2.1):
    /// `client_id` in the body; the transport presents the certificate (for example
    /// `AsyncHTTPClientTransport.TLSOptions.clientCertificatePath`).
    public static let tlsClientAuth: Self = "tls_client_auth"
    /// Mutual TLS with a self-signed certificate registered with the client (RFC 8705
    /// §2.2): `client_id` in the body; the transport presents the certificate.
    public static let selfSignedTLSClientAuth: Self = "self_signed_tls_client_auth"

    /// Whether the client proves who it is with its TLS certificate (RFC 8705 §2).
    public var isMutualTLS: Bool { self == .tlsClientAuth || self == .selfSignedTLSClientAuth }
}
