import Foundation
import OAuth2Internals

/// A JWT that authenticates a client (RFC 7523 §2.2, OIDC Core §9): `client_secret_jwt`
/// signs it with the client secret (HMAC), `private_key_jwt` with the client's private key.
///
/// Claims: `iss` and `sub` are the client id, `aud` the authorization server (its issuer,
/// or an endpoint for servers that want one), `iat`, a short `exp`, and a unique `jti`.
public struct ClientAssertion: Sendable, Hashable {
    /// `client_assertion_type` for a JWT.
    public static let type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

    /// `iss` and `sub`: the client id.
    public var clientID: String
    /// `aud`.
    public var audience: String
    /// `iat`.
    public var issuedAt: Date
    /// `exp`.
    public var expiresAt: Date
    /// `jti`: unique per assertion (128 random bits by default), so a server can refuse a
    /// replayed one.
    public var id: String

    /// An assertion for `clientID`, addressed to `audience`, valid for `lifetime` seconds.
    ///
    /// - Parameters:
    ///   - clientID: `iss` and `sub`: the client id.
    ///   - audience: `aud`: the authorization server's issuer, or an endpoint.
    ///   - issuedAt: `iat`; now by default.
    ///   - lifetime: seconds from `issuedAt` to `exp` (60 by default).
    ///   - id: the `jti`; a fresh random one by default.
    public init(clientID: String, audience: String, issuedAt: Date = Date(), lifetime: TimeInterval = 60, id: String? = nil) {
        self.clientID = clientID
        self.audience = audience
        self.issuedAt = issuedAt
        expiresAt = issuedAt.addingTimeInterval(lifetime)
        self.id = id ?? SecureRandom.token(byteCount: 16)
    }

    /// The claims set.
    public var claims: [String: JSONValue] {
        [
            "iss": .string(clientID), "sub": .string(clientID), "aud": .string(audience), "jti": .string(id),
            "iat": .integer(Int64(issuedAt.timeIntervalSince1970.rounded(.down))),
            "exp": .integer(Int64(expiresAt.timeIntervalSince1970.rounded(.down))),
        ]
    }

    /// The signed assertion, in compact form; its header holds `alg` and the key's `kid`.
    ///
    /// - Throws: `JOSEError.Reason.invalidKey` when signing fails.
    public func signed(with key: JWSSigningKey) throws(JOSEError) -> String {
        try key.sign(claims: claims)
    }
}

/// How client assertions (`client_secret_jwt`, `private_key_jwt`) are made.
public struct ClientAssertionOptions: Sendable, Hashable {
    /// What an assertion's `aud` names.
    public enum Audience: Sendable, Hashable {
        /// The authorization server's issuer identifier (RFC 7523bis, FAPI 2.0), or its token
        /// endpoint when the metadata names no issuer. The default.
        case issuer
        /// The token endpoint URL, whatever the request (RFC 7523 §3's classic reading).
        case tokenEndpoint
        /// The URL of the endpoint the request goes to: the token endpoint for token
        /// requests, the PAR endpoint for pushed requests, and so on. Glewlwyd wants this.
        case requestEndpoint
        /// A fixed value.
        case custom(String)
    }

    /// What `aud` names; ``Audience/issuer`` by default.
    public var audience: Audience
    /// How long an assertion is valid: 60 seconds by default.
    public var lifetime: TimeInterval
    /// The HMAC algorithm of `client_secret_jwt`: HS256 by default.
    public var secretAlgorithm: JWSAlgorithm

    /// Creates options.
    public init(audience: Audience = .issuer, lifetime: TimeInterval = 60, secretAlgorithm: JWSAlgorithm = .hs256) {
        self.audience = audience
        self.lifetime = lifetime
        self.secretAlgorithm = secretAlgorithm
    }

    /// The `aud` for a request to `endpoint` of the server described by `metadata`.
    func audience(for endpoint: URL, metadata: ServerMetadata) -> String {
        switch audience {
        case .issuer: return metadata.issuer ?? metadata.tokenEndpoint?.absoluteString ?? endpoint.absoluteString
        case .tokenEndpoint: return (metadata.tokenEndpoint ?? endpoint).absoluteString
        case .requestEndpoint: return endpoint.absoluteString
        case .custom(let value): return value
        }
    }
}

/// Signed request objects (JAR, RFC 9101): the authorization parameters sent as one signed
/// JWT, by value (`request`) or through a pushed authorization request; signed, then
/// encrypted to the server with ``encryption``.
public struct RequestObjectOptions: Sendable {
    /// The key that signs the object: `nil` uses the configuration's
    /// ``ClientConfiguration/privateKey``, else HMAC (HS256) with the client secret.
    public var signingKey: JWSSigningKey?
    /// How long the object is valid: 5 minutes by default.
    public var lifetime: TimeInterval
    /// Encrypt the signed object to the server (RFC 9101 §6.1): the registered
    /// `request_object_encryption_alg` and `_enc`. `nil` (the default) sends it signed only.
    public var encryption: RequestObjectEncryption?

    /// Creates options.
    ///
    /// - Parameters:
    ///   - signingKey: the key that signs the object; `nil` uses the private key, else the
    ///     client secret.
    ///   - lifetime: how long the object is valid, in seconds (300 by default).
    ///   - encryption: how the signed object is encrypted to the server; `nil` (the default)
    ///     sends it signed only.
    public init(signingKey: JWSSigningKey? = nil, lifetime: TimeInterval = 300, encryption: RequestObjectEncryption? = nil) {
        self.signingKey = signingKey
        self.lifetime = lifetime
        self.encryption = encryption
    }
}
