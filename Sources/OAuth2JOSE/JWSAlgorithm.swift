import Crypto
import Foundation
import OAuth2Internals

/// A JWS signature algorithm (RFC 7518 §3, RFC 8037).
///
/// `none` exists only so that it can be named and refused: no API of this library accepts
/// an unsigned token.
public struct JWSAlgorithm: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The registered name (`RS256`, `ES256`, `EdDSA`…).
    public let rawValue: String
    /// Creates an algorithm from its name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates an algorithm from a literal.
    public init(stringLiteral value: String) { self.rawValue = value }
    /// The name.
    public var description: String { rawValue }

    /// RSASSA-PKCS1-v1_5 with SHA-256.
    public static let rs256: Self = "RS256"
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    public static let rs384: Self = "RS384"
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    public static let rs512: Self = "RS512"
    /// RSASSA-PSS with SHA-256.
    public static let ps256: Self = "PS256"
    /// RSASSA-PSS with SHA-384.
    public static let ps384: Self = "PS384"
    /// RSASSA-PSS with SHA-512.
    public static let ps512: Self = "PS512"
    /// ECDSA on P-256 with SHA-256.
    public static let es256: Self = "ES256"
    /// ECDSA on P-384 with SHA-384.
    public static let es384: Self = "ES384"
    /// ECDSA on P-521 with SHA-512.
    public static let es512: Self = "ES512"
    /// Ed25519 (RFC 8037).
    public static let edDSA: Self = "EdDSA"
    /// HMAC with SHA-256, keyed by the client secret.
    public static let hs256: Self = "HS256"
    /// HMAC with SHA-384, keyed by the client secret.
    public static let hs384: Self = "HS384"
    /// HMAC with SHA-512, keyed by the client secret.
    public static let hs512: Self = "HS512"
    /// No signature. Always refused.
    public static let none: Self = "none"

    /// The asymmetric algorithms this library verifies and signs.
    public static let asymmetric: [JWSAlgorithm] = [.rs256, .rs384, .rs512, .ps256, .ps384, .ps512, .es256, .es384, .es512, .edDSA]
    /// The HMAC algorithms.
    public static let hmac: [JWSAlgorithm] = [.hs256, .hs384, .hs512]

    /// `true` for HS256/384/512.
    public var isHMAC: Bool { Self.hmac.contains(self) }
    /// `true` for every algorithm this library can verify.
    public var isSupported: Bool { Self.asymmetric.contains(self) || isHMAC }

    /// The JWK key type and curve a key needs for this algorithm.
    package var keyRequirement: (kty: String, crv: String?)? {
        switch self {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: return ("RSA", nil)
        case .es256: return ("EC", "P-256")
        case .es384: return ("EC", "P-384")
        case .es512: return ("EC", "P-521")
        case .edDSA: return ("OKP", "Ed25519")
        case .hs256, .hs384, .hs512: return ("oct", nil)
        default: return nil
        }
    }

    /// The left half of the hash OIDC uses for `at_hash` and `c_hash` (OIDC Core
    /// §3.1.3.6): SHA-256/384/512 by the algorithm's size; SHA-512 for Ed25519.
    package func halfHash(of text: String) -> String? {
        let data = Data(text.utf8)
        let digest: [UInt8]
        switch self {
        case .rs256, .ps256, .es256, .hs256: digest = Array(SHA256.hash(data: data))
        case .rs384, .ps384, .es384, .hs384: digest = Array(SHA384.hash(data: data))
        case .rs512, .ps512, .es512, .hs512, .edDSA: digest = Array(SHA512.hash(data: data))
        default: return nil
        }
        return Base64URL.encode(digest.prefix(digest.count / 2))
    }

    /// Whether `claim` is ``halfHash(of:)`` of `text`, compared in constant time, without
    /// allocating (the digest and its encoding stay on the stack); `nil` for an algorithm
    /// without such a hash.
    package func halfHashMatches(_ claim: String, of text: String) -> Bool? {
        func matches(_ digest: some Digest) -> Bool {
            digest.withUnsafeBytes { digest in
                // The largest half (SHA-512) is 32 bytes: 43 characters.
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 44) { encoded in
                    let count = Base64URL.encode(UnsafeRawBufferPointer(rebasing: digest[..<(digest.count / 2)]), into: encoded)
                    var claimText = claim
                    return claimText.withUTF8 { claimBytes in
                        constantTimeEquals(UnsafeRawBufferPointer(claimBytes), UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: encoded[..<count])))
                    }
                }
            }
        }
        var text = text
        return text.withUTF8 { utf8 -> Bool? in
            let bytes = UnsafeRawBufferPointer(utf8)
            switch self {
            case .rs256, .ps256, .es256, .hs256: return matches(SHA256.hash(data: bytes))
            case .rs384, .ps384, .es384, .hs384: return matches(SHA384.hash(data: bytes))
            case .rs512, .ps512, .es512, .hs512, .edDSA: return matches(SHA512.hash(data: bytes))
            default: return nil
            }
        }
    }
}
