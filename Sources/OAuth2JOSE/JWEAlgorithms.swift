import Foundation

/// A JWE key management algorithm (RFC 7518 §4): how the content encryption key reaches the
/// recipient.
///
/// Supported: `RSA-OAEP-256`, `RSA-OAEP`, `ECDH-ES` and `ECDH-ES+A128KW`/`A192KW`/`A256KW`
/// (P-256, P-384, P-521). `RSA1_5` exists only so that it can be named and refused: its
/// padding oracle (RFC 7518 §4.2, §8.3) makes it unsafe to accept.
public struct JWEKeyAlgorithm: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The registered name (`RSA-OAEP-256`, `ECDH-ES+A128KW`…).
    public let rawValue: String
    /// Creates an algorithm from its name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates an algorithm from a literal.
    public init(stringLiteral value: String) { self.rawValue = value }
    /// The name.
    public var description: String { rawValue }

    /// RSAES-OAEP with SHA-256 and MGF1 with SHA-256.
    public static let rsaOAEP256: Self = "RSA-OAEP-256"
    /// RSAES-OAEP with SHA-1 and MGF1 with SHA-1 (RFC 7518's default OAEP).
    public static let rsaOAEP: Self = "RSA-OAEP"
    /// RSAES-PKCS1-v1_5: never accepted, never produced.
    public static let rsa1_5: Self = "RSA1_5"
    /// Elliptic-curve Diffie-Hellman ephemeral-static, the agreed key used directly as the
    /// content encryption key.
    public static let ecdhES: Self = "ECDH-ES"
    /// ECDH-ES, the agreed key wrapping the content encryption key with AES-128 key wrap.
    public static let ecdhESA128KW: Self = "ECDH-ES+A128KW"
    /// ECDH-ES, the agreed key wrapping the content encryption key with AES-192 key wrap.
    public static let ecdhESA192KW: Self = "ECDH-ES+A192KW"
    /// ECDH-ES, the agreed key wrapping the content encryption key with AES-256 key wrap.
    public static let ecdhESA256KW: Self = "ECDH-ES+A256KW"

    /// Every algorithm this library can decrypt and encrypt with.
    public static let supported: Set<Self> = [.rsaOAEP256, .rsaOAEP, .ecdhES, .ecdhESA128KW, .ecdhESA192KW, .ecdhESA256KW]

    /// `true` for the RSA algorithms.
    public var isRSA: Bool { self == .rsaOAEP256 || self == .rsaOAEP }
    /// `true` for the ECDH-ES algorithms.
    public var isECDH: Bool { rawValue == "ECDH-ES" || rawValue.hasPrefix("ECDH-ES+") }

    /// The AES key wrap key length in bytes of an `ECDH-ES+A…KW` algorithm.
    var keyWrapLength: Int? {
        switch self {
        case .ecdhESA128KW: return 16
        case .ecdhESA192KW: return 24
        case .ecdhESA256KW: return 32
        default: return nil
        }
    }
}

/// A JWE content encryption algorithm (RFC 7518 §5): how the payload itself is encrypted and
/// authenticated.
public struct JWEContentEncryption: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The registered name (`A128GCM`, `A128CBC-HS256`…).
    public let rawValue: String
    /// Creates an algorithm from its name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates an algorithm from a literal.
    public init(stringLiteral value: String) { self.rawValue = value }
    /// The name.
    public var description: String { rawValue }

    /// AES-GCM with a 128-bit key.
    public static let a128GCM: Self = "A128GCM"
    /// AES-GCM with a 192-bit key.
    public static let a192GCM: Self = "A192GCM"
    /// AES-GCM with a 256-bit key.
    public static let a256GCM: Self = "A256GCM"
    /// AES-128 in CBC mode with HMAC SHA-256 truncated to 128 bits (RFC 7518 §5.2.3).
    public static let a128CBCHS256: Self = "A128CBC-HS256"
    /// AES-192 in CBC mode with HMAC SHA-384 truncated to 192 bits.
    public static let a192CBCHS384: Self = "A192CBC-HS384"
    /// AES-256 in CBC mode with HMAC SHA-512 truncated to 256 bits.
    public static let a256CBCHS512: Self = "A256CBC-HS512"

    /// Every content encryption this library supports.
    public static let supported: Set<Self> = [.a128GCM, .a192GCM, .a256GCM, .a128CBCHS256, .a192CBCHS384, .a256CBCHS512]

    /// The content encryption key's length in bytes (for CBC-HMAC, both halves), or `nil`
    /// for an unsupported algorithm.
    public var keyLength: Int? {
        switch self {
        case .a128GCM: return 16
        case .a192GCM: return 24
        case .a256GCM: return 32
        case .a128CBCHS256: return 32
        case .a192CBCHS384: return 48
        case .a256CBCHS512: return 64
        default: return nil
        }
    }

    /// `true` for the AES-GCM algorithms.
    var isGCM: Bool { self == .a128GCM || self == .a192GCM || self == .a256GCM }
}

/// The algorithms a recipient accepts in a JWE: the ones it registered with the server
/// (`id_token_encrypted_response_alg`/`enc` and their UserInfo and introspection
/// counterparts). Anything else is refused before any key is used.
public struct JWEPolicy: Sendable, Hashable {
    /// The key management algorithms accepted.
    public var keyAlgorithms: Set<JWEKeyAlgorithm>
    /// The content encryptions accepted.
    public var contentEncryptions: Set<JWEContentEncryption>

    /// A policy; `RSA1_5` and unsupported names are dropped.
    public init(keyAlgorithms: Set<JWEKeyAlgorithm>, contentEncryptions: Set<JWEContentEncryption>) {
        self.keyAlgorithms = keyAlgorithms.intersection(JWEKeyAlgorithm.supported)
        self.contentEncryptions = contentEncryptions.intersection(JWEContentEncryption.supported)
    }

    /// What a client accepts when it names nothing: `RSA-OAEP-256`, `ECDH-ES`,
    /// `ECDH-ES+A128KW` and `ECDH-ES+A256KW`; `A128GCM`, `A256GCM` and `A128CBC-HS256`
    /// (OpenID Connect's default `enc`).
    public static let `default` = JWEPolicy(
        keyAlgorithms: [.rsaOAEP256, .ecdhES, .ecdhESA128KW, .ecdhESA256KW],
        contentEncryptions: [.a128GCM, .a256GCM, .a128CBCHS256])

    /// One registered pair, as a client states it at registration: `alg` and `enc`
    /// (`A128CBC-HS256` when `enc` is not given, as OpenID Connect Registration says).
    public static func registered(_ algorithm: JWEKeyAlgorithm, _ encryption: JWEContentEncryption = .a128CBCHS256) -> JWEPolicy {
        JWEPolicy(keyAlgorithms: [algorithm], contentEncryptions: [encryption])
    }
}
