import Crypto
import CryptoExtras
import Foundation

/// A private key that decrypts JWEs sent to this client: encrypted ID tokens, UserInfo and
/// introspection answers. RSA (`RSA-OAEP-256`, `RSA-OAEP`) or EC on P-256/384/521 (`ECDH-ES`
/// and its key-wrap variants).
///
/// Its public half (``publicKey``, `use: enc`) is what the client publishes in its JWK set
/// or registers, beside its signing keys. Keep several during a rotation: a JWE names the
/// key it was made for (`kid`), and one without a `kid` is tried with each key that fits.
public struct JWEDecryptionKey: Sendable, CustomStringConvertible {
    /// The only key management algorithm this key is used with, if stated; `nil` accepts
    /// every algorithm that fits the key's type.
    public let algorithm: JWEKeyAlgorithm?
    /// The key's `kid`.
    public let keyID: String?
    /// The public half as a JWK with `use: enc`, this key's `kid` and, when stated, `alg`:
    /// what the client publishes or registers so that the server can encrypt to it.
    public let publicKey: JSONWebKey
    package let key: PrivateKey

    package enum PrivateKey: @unchecked Sendable {
        case rsa(_RSA.Encryption.PrivateKey)
        case p256(P256.KeyAgreement.PrivateKey)
        case p384(P384.KeyAgreement.PrivateKey)
        case p521(P521.KeyAgreement.PrivateKey)
    }

    package init(key: PrivateKey, algorithm: JWEKeyAlgorithm?, keyID: String?) throws(JOSEError) {
        self.key = key
        self.algorithm = algorithm
        self.keyID = keyID
        var members: [String: JSONValue]
        func ec(_ curve: String, _ raw: Data) -> [String: JSONValue] {
            let half = raw.count / 2
            return ["kty": "EC", "crv": .string(curve), "x": .string(Base64URL.encode(raw.prefix(half))), "y": .string(Base64URL.encode(raw.suffix(half)))]
        }
        switch key {
        case .rsa(let rsa):
            guard let numbers = try? rsa.publicKey.getKeyPrimitives() else { throw JOSEError(.invalidKey, "The RSA key's public numbers cannot be read.") }
            members = ["kty": "RSA", "n": .string(Base64URL.encode(numbers.modulus)), "e": .string(Base64URL.encode(numbers.publicExponent))]
        case .p256(let key): members = ec("P-256", key.publicKey.rawRepresentation)
        case .p384(let key): members = ec("P-384", key.publicKey.rawRepresentation)
        case .p521(let key): members = ec("P-521", key.publicKey.rawRepresentation)
        }
        members["use"] = "enc"
        members["kid"] = keyID.map(JSONValue.string)
        members["alg"] = algorithm.map { .string($0.rawValue) }
        publicKey = try JSONWebKey(members)
    }

    /// A new random key: RSA 2048 bits for the RSA algorithms, else EC on `curve`.
    ///
    /// - Parameters:
    ///   - algorithm: the algorithm the key is for (stated in its public JWK).
    ///   - curve: `P-256` (default), `P-384` or `P-521`, for the ECDH-ES algorithms.
    ///   - keyID: the key's `kid`.
    /// - Throws: ``JOSEError/Reason/algorithmNotAllowed`` for an unsupported algorithm;
    ///   ``JOSEError/Reason/invalidKey`` for an unsupported curve or a failed generation.
    public static func generate(_ algorithm: JWEKeyAlgorithm, curve: String = "P-256", keyID: String? = nil) throws(JOSEError) -> JWEDecryptionKey {
        guard JWEKeyAlgorithm.supported.contains(algorithm) else {
            throw JOSEError(.algorithmNotAllowed, "\(algorithm) is not a supported key management algorithm.")
        }
        if algorithm.isRSA {
            do {
                let rsa = try _RSA.Encryption.PrivateKey(keySize: .bits2048)
                return try JWEDecryptionKey(key: .rsa(rsa), algorithm: algorithm, keyID: keyID)
            } catch let error as JOSEError {
                throw error
            } catch {
                throw JOSEError(.invalidKey, "RSA key generation failed.")
            }
        }
        switch curve {
        case "P-256": return try JWEDecryptionKey(key: .p256(P256.KeyAgreement.PrivateKey()), algorithm: algorithm, keyID: keyID)
        case "P-384": return try JWEDecryptionKey(key: .p384(P384.KeyAgreement.PrivateKey()), algorithm: algorithm, keyID: keyID)
        case "P-521": return try JWEDecryptionKey(key: .p521(P521.KeyAgreement.PrivateKey()), algorithm: algorithm, keyID: keyID)
        default: throw JOSEError(.invalidKey, "Unsupported curve \(curve) for \(algorithm).")
        }
    }

    /// A key from a private JWK: RSA (`n`, `e`, `d`, and `p`, `q` when present) or EC on
    /// P-256/384/521 (`x`, `y`, `d`).
    ///
    /// - Parameters:
    ///   - jwk: the JWK's members. A `use` other than `enc` is refused: a key is for
    ///     signatures or for encryption, never both.
    ///   - algorithm: the one algorithm to accept; `nil` takes the JWK's `alg`, else
    ///     accepts every algorithm that fits the key.
    ///   - keyID: the `kid`; `nil` takes the JWK's.
    /// - Throws: ``JOSEError/Reason/invalidKey`` when a member is missing or malformed, the
    ///   public members are not the private key's, or the key is not for encryption;
    ///   ``JOSEError/Reason/algorithmNotAllowed`` when the algorithm does not fit the key.
    ///   The message never contains key material.
    public init(jwk: [String: JSONValue], algorithm: JWEKeyAlgorithm? = nil, keyID: String? = nil) throws(JOSEError) {
        if let use = jwk["use"]?.stringValue, use != "enc" {
            throw JOSEError(.invalidKey, "The JWK's use is \(use), not enc.")
        }
        let stated = jwk["alg"]?.stringValue.map(JWEKeyAlgorithm.init(rawValue:))
        if let algorithm, let stated, algorithm != stated {
            throw JOSEError(.algorithmNotAllowed, "The JWK is for \(stated), not \(algorithm).")
        }
        // The signing key loader decodes and checks the members (the public ones must be the
        // private key's); the key then changes role without changing bits.
        var members = jwk
        members["alg"] = nil
        members["use"] = nil
        members["key_ops"] = nil
        let loaded = try JWSSigningKey(jwk: members, keyID: keyID ?? jwk["kid"]?.stringValue)
        try self.init(converting: loaded, algorithm: algorithm ?? stated)
    }

    /// A key from a PEM private key (PKCS#8, PKCS#1 for RSA, SEC1 for EC).
    ///
    /// - Throws: as ``init(jwk:algorithm:keyID:)``.
    public init(pem: String, algorithm: JWEKeyAlgorithm? = nil, keyID: String? = nil) throws(JOSEError) {
        try self.init(converting: try JWSSigningKey(pem: pem, keyID: keyID), algorithm: algorithm)
    }

    /// A key from a file holding a private JWK (JSON) or a PEM private key.
    ///
    /// - Throws: ``JOSEError/Reason/invalidKey`` when the file cannot be read or holds no
    ///   usable key; otherwise as ``init(jwk:algorithm:keyID:)``.
    public init(contentsOf url: URL, algorithm: JWEKeyAlgorithm? = nil, keyID: String? = nil) throws(JOSEError) {
        let data: Data
        do { data = try Data(contentsOf: url) } catch { throw JOSEError(.invalidKey, "The key file cannot be read.") }
        if let object = try? JOSEJSON.object(data, what: "JWK") {
            try self.init(jwk: object, algorithm: algorithm, keyID: keyID)
        } else {
            try self.init(pem: String(decoding: data, as: UTF8.self), algorithm: algorithm, keyID: keyID)
        }
    }

    /// The decryption keys of a private JWK set (RFC 7517 §5), such as the file a client
    /// keeps its keys in, signing keys beside them: during a rotation, the new key and the
    /// old one, both accepted until the old one is dropped from the file.
    ///
    /// Takes every key marked `use: enc`, and every key without `use` whose `alg` is a key
    /// management algorithm (`RSA-OAEP-256`, `ECDH-ES+A128KW`…); skips the others (signing
    /// keys, marked `use: sig` or with a signature `alg`). Each key keeps its `kid` and
    /// `alg`, in document order.
    ///
    /// - Parameter data: the JWK set document, with private members.
    /// - Returns: at least one key.
    /// - Throws: ``JOSEError/Reason/malformed`` when the document is not a JWK set (or is
    ///   larger than `JSONWebKeySet.maximumSize`, or has more than
    ///   `JSONWebKeySet.maximumKeys` keys); ``JOSEError/Reason/invalidKey`` when it holds no
    ///   decryption key or a decryption key cannot be read (the message names its position
    ///   and `kid`, never key material); as ``init(jwk:algorithm:keyID:)``.
    public static func keys(jwkSet data: Data) throws(JOSEError) -> [JWEDecryptionKey] {
        guard data.count <= JSONWebKeySet.maximumSize else { throw JOSEError(.malformed, "The JWK set is too large.") }
        let object = try JOSEJSON.object(data, what: "JWK set")
        guard let entries = object["keys"]?.arrayValue else { throw JOSEError(.malformed, "The JWK set has no keys array.") }
        guard entries.count <= JSONWebKeySet.maximumKeys else { throw JOSEError(.malformed, "The JWK set has too many keys.") }
        var keys: [JWEDecryptionKey] = []
        for (index, entry) in entries.enumerated() {
            guard let members = entry.objectValue else { throw JOSEError(.malformed, "Key \(index + 1) of the JWK set is not an object.") }
            switch members["use"]?.stringValue {
            case "enc"?: break
            case nil where members["alg"]?.stringValue.map({ JWEKeyAlgorithm.supported.contains(JWEKeyAlgorithm(rawValue: $0)) }) == true: break
            default: continue
            }
            do {
                keys.append(try JWEDecryptionKey(jwk: members))
            } catch {
                let kid = members["kid"]?.stringValue.map { " (kid \($0))" } ?? ""
                throw JOSEError(error.reason, "Decryption key \(index + 1) of the JWK set\(kid) cannot be used: \(error.message)")
            }
        }
        guard !keys.isEmpty else {
            throw JOSEError(.invalidKey, "The JWK set holds no decryption key (use: enc, or an alg such as RSA-OAEP-256 or ECDH-ES).")
        }
        return keys
    }

    /// The decryption keys of a private JWK set file; see ``keys(jwkSet:)``.
    ///
    /// - Throws: ``JOSEError/Reason/invalidKey`` when the file cannot be read; as
    ///   ``keys(jwkSet:)``.
    public static func keys(jwkSetFile url: URL) throws(JOSEError) -> [JWEDecryptionKey] {
        let data: Data
        do { data = try Data(contentsOf: url) } catch { throw JOSEError(.invalidKey, "The JWK set file cannot be read.") }
        return try keys(jwkSet: data)
    }

    private init(converting loaded: JWSSigningKey, algorithm: JWEKeyAlgorithm?) throws(JOSEError) {
        let key: PrivateKey
        do {
            switch loaded.key {
            case .rsa(let rsa): key = .rsa(try _RSA.Encryption.PrivateKey(derRepresentation: rsa.derRepresentation))
            case .p256(let ec): key = .p256(try P256.KeyAgreement.PrivateKey(rawRepresentation: ec.rawRepresentation))
            case .p384(let ec): key = .p384(try P384.KeyAgreement.PrivateKey(rawRepresentation: ec.rawRepresentation))
            case .p521(let ec): key = .p521(try P521.KeyAgreement.PrivateKey(rawRepresentation: ec.rawRepresentation))
            case .ed25519, .hmac: throw JOSEError(.invalidKey, "Only RSA and EC keys decrypt JWEs.")
            }
        } catch let error as JOSEError {
            throw error
        } catch {
            throw JOSEError(.invalidKey, "The key cannot be used for decryption.")
        }
        try self.init(key: key, algorithm: algorithm, keyID: loaded.keyID)
        if let algorithm, !fits(algorithm) {
            throw JOSEError(.algorithmNotAllowed, "The key cannot be used with \(algorithm).")
        }
    }

    /// `true` when this key may decrypt a JWE made with `algorithm`: its type fits, and its
    /// own algorithm, if stated, is that one.
    public func fits(_ algorithm: JWEKeyAlgorithm) -> Bool {
        if let own = self.algorithm, own != algorithm { return false }
        switch key {
        case .rsa: return algorithm.isRSA
        case .p256, .p384, .p521: return algorithm.isECDH && JWEKeyAlgorithm.supported.contains(algorithm)
        }
    }

    /// The curve of an EC key (`P-256`…), `nil` for RSA.
    package var curve: String? {
        switch key {
        case .rsa: return nil
        case .p256: return "P-256"
        case .p384: return "P-384"
        case .p521: return "P-521"
        }
    }

    /// The private key as a JWK (with `use: enc`, `kid` and `alg`), to keep in a file.
    public var privateJWK: [String: JSONValue] {
        var signing: JWSSigningKey?
        switch key {
        case .rsa(let rsa): signing = (try? _RSA.Signing.PrivateKey(derRepresentation: rsa.derRepresentation)).map { JWSSigningKey(algorithm: .rs256, keyID: nil, key: .rsa($0)) }
        case .p256(let ec): signing = (try? P256.Signing.PrivateKey(rawRepresentation: ec.rawRepresentation)).map { JWSSigningKey(algorithm: .es256, keyID: nil, key: .p256($0)) }
        case .p384(let ec): signing = (try? P384.Signing.PrivateKey(rawRepresentation: ec.rawRepresentation)).map { JWSSigningKey(algorithm: .es384, keyID: nil, key: .p384($0)) }
        case .p521(let ec): signing = (try? P521.Signing.PrivateKey(rawRepresentation: ec.rawRepresentation)).map { JWSSigningKey(algorithm: .es512, keyID: nil, key: .p521($0)) }
        }
        var members = signing?.privateJWK ?? [:]
        members["use"] = "enc"
        members["kid"] = keyID.map(JSONValue.string)
        members["alg"] = algorithm.map { .string($0.rawValue) }
        return members
    }

    /// Type, curve and id; never key material.
    public var description: String {
        "JWEDecryptionKey(\(curve ?? "RSA")\(keyID.map { ", kid: \($0)" } ?? "")\(algorithm.map { ", alg: \($0)" } ?? ""))"
    }
}
