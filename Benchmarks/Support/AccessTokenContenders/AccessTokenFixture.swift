import Crypto
import CryptoExtras
import Foundation
import OAuth2

/// RFC 9068 JWT access tokens and the JWK set that verifies them: a file written by
/// `Compare/python/accesstokens.py make` (the same tokens for every contender), or tokens
/// made here with the same shape when no file is given.
public struct AccessTokenFixture: Sendable {
    public let issuer: String
    public let audience: String
    public let algorithm: JWSAlgorithm
    /// The JWK set as JSON (several keys; each token names its key by `kid`).
    public let keySetJSON: Data
    public let keys: JSONWebKeySet
    /// The signing key's public key (SubjectPublicKeyInfo PEM), for the raw check.
    public let publicKeyPEM: String
    /// Compact JWS strings, each with a different `sub`, `jti` and `client_id`.
    public let tokens: [String]

    /// The clock tolerance every contender gives `exp`, `nbf` and `iat`, in seconds.
    public static let leeway: TimeInterval = 60
    /// The scope every contender requires.
    public static let requiredScope = "read"

    /// Reads a file of `accesstokens.py make`.
    public init(file: String) throws {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as! [String: Any]
        issuer = object["issuer"] as! String
        audience = object["audience"] as! String
        algorithm = JWSAlgorithm(rawValue: object["alg"] as! String)
        keySetJSON = try JSONSerialization.data(withJSONObject: object["jwks"]!)
        keys = try JSONWebKeySet(data: keySetJSON)
        publicKeyPEM = object["public_pem"] as! String
        tokens = object["tokens"] as! [String]
    }

    /// Makes `count` tokens like `accesstokens.py make` does (for `swift package benchmark`
    /// run without a file): a new signing key, kid `es-1` or `rs-1`, in a set with another
    /// key of each type.
    public init(making algorithm: JWSAlgorithm, count: Int = 2_000) throws {
        let issuer = "https://as.example", audience = "https://api.example"
        self.issuer = issuer
        self.audience = audience
        self.algorithm = algorithm
        let signing: JWSSigningKey
        let other: JWSSigningKey
        let pem: String
        if algorithm == .es256 {
            let key = P256.Signing.PrivateKey()
            signing = try JWSSigningKey(pemRepresentation: key.pemRepresentation, algorithm: .es256, keyID: "es-1")
            other = try JWSSigningKey(pemRepresentation: try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation, algorithm: .rs256, keyID: "rs-1")
            pem = key.publicKey.pemRepresentation
        } else {
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            signing = try JWSSigningKey(pemRepresentation: key.pemRepresentation, algorithm: .rs256, keyID: "rs-1")
            other = try JWSSigningKey(pemRepresentation: P256.Signing.PrivateKey().pemRepresentation, algorithm: .es256, keyID: "es-1")
            pem = key.publicKey.pemRepresentation
        }
        let old = try JWSSigningKey(pemRepresentation: P256.Signing.PrivateKey().pemRepresentation, algorithm: .es256, keyID: "es-0")
        keys = JSONWebKeySet(keys: [old.publicKey!, other.publicKey!, signing.publicKey!])
        keySetJSON = keys.jsonData
        publicKeyPEM = pem
        let now = Int64(Date().timeIntervalSince1970)
        tokens = try (0..<count).map { index in
            try signing.sign(
                claims: [
                    "iss": .string(issuer), "sub": .string("user-\(index)"), "aud": .string(audience),
                    "exp": .integer(now + 86_400), "iat": .integer(now), "nbf": .integer(now - 5),
                    "jti": .string(UUID().uuidString), "client_id": .string("client-\(index % 10)"),
                    "scope": "read write", "auth_time": .integer(now - 10),
                ], header: ["typ": "at+jwt"])
        }
    }

    /// The file named by `OAUTH2_BENCH_ACCESS_TOKENS` with `ALG` in it replaced by the
    /// algorithm (scripts/bench-compare sets it), else tokens made here.
    public static func load(_ algorithm: JWSAlgorithm) throws -> AccessTokenFixture {
        if let pattern = ProcessInfo.processInfo.environment["OAUTH2_BENCH_ACCESS_TOKENS"], !pattern.isEmpty {
            return try AccessTokenFixture(file: pattern.replacingOccurrences(of: "ALG", with: algorithm.rawValue))
        }
        return try AccessTokenFixture(making: algorithm)
    }
}
