import Crypto
import CryptoExtras
import Foundation
import SwiftASN1

// Loading and exporting private keys: JWK objects (RFC 7517/7518 §6, RFC 8037), PEM files of
// any supported type, and files holding either. Used for private_key_jwt keys, request-object
// keys and persisted DPoP keys.

extension JWSSigningKey {
    /// A key from a private JWK: RSA (`n`, `e`, `d`, and `p`, `q` when present), EC on
    /// P-256/384/521 (`x`, `y`, `d`) or OKP Ed25519 (`x`, `d`).
    ///
    /// - Parameters:
    ///   - jwk: the JWK's members.
    ///   - algorithm: the algorithm to sign with; `nil` takes the JWK's `alg`, else the
    ///     key type's usual one (RS256, ES256/384/512, EdDSA).
    ///   - keyID: the `kid` to put in headers; `nil` takes the JWK's `kid`.
    /// - Throws: ``JOSEError/Reason/invalidKey`` when a private member is missing or
    ///   malformed, the public members do not belong to the private key, or an RSA key has
    ///   fewer than 2048 bits; ``JOSEError/Reason/algorithmNotAllowed`` when `algorithm`
    ///   (or the JWK's `alg`) does not fit the key. The message never contains key material.
    public init(jwk: [String: JSONValue], algorithm: JWSAlgorithm? = nil, keyID: String? = nil) throws(JOSEError) {
        guard let kty = jwk["kty"]?.stringValue else { throw JOSEError(.invalidKey, "The JWK has no kty.") }
        func bytes(_ name: String) throws(JOSEError) -> Data {
            guard let text = jwk[name]?.stringValue, let data = Base64URL.decode(text), !data.isEmpty else {
                throw JOSEError(.invalidKey, "The \(kty) JWK's \(name) is missing or not base64url.")
            }
            return data
        }
        let curve = jwk["crv"]?.stringValue
        let key: PrivateKey
        do {
            switch (kty, curve) {
            case ("RSA", _):
                let n = try bytes("n"), e = try bytes("e"), d = try bytes("d")
                let rsa: _RSA.Signing.PrivateKey
                if jwk["p"] != nil || jwk["q"] != nil {
                    rsa = try _RSA.Signing.PrivateKey(n: n, e: e, d: d, p: try bytes("p"), q: try bytes("q"))
                } else {
                    rsa = try _RSA.Signing.PrivateKey._createFromNumbers(n: n, e: e, d: d)
                }
                key = .rsa(rsa)
            case ("EC", "P-256"): key = .p256(try P256.Signing.PrivateKey(rawRepresentation: try Self.scalar(bytes("d"), size: 32)))
            case ("EC", "P-384"): key = .p384(try P384.Signing.PrivateKey(rawRepresentation: try Self.scalar(bytes("d"), size: 48)))
            case ("EC", "P-521"): key = .p521(try P521.Signing.PrivateKey(rawRepresentation: try Self.scalar(bytes("d"), size: 66)))
            case ("OKP", "Ed25519"): key = .ed25519(try Curve25519.Signing.PrivateKey(rawRepresentation: try bytes("d")))
            case ("oct", _):
                throw JOSEError(.invalidKey, "A symmetric JWK is not a private key; use init(secret:algorithm:keyID:).")
            default:
                throw JOSEError(.invalidKey, "Unsupported private key type \(kty) \(curve ?? "").")
            }
        } catch let error as JOSEError {
            throw error
        } catch {
            throw JOSEError(.invalidKey, "The \(kty) private JWK cannot be decoded.")
        }
        let stated = jwk["alg"]?.stringValue.map(JWSAlgorithm.init(rawValue:))
        if let algorithm, let stated, algorithm != stated {
            throw JOSEError(.algorithmNotAllowed, "The JWK is for \(stated), not \(algorithm).")
        }
        try self.init(checking: key, algorithm: algorithm ?? stated, keyID: keyID ?? jwk["kid"]?.stringValue)
        // The public members, when given, must be this private key's.
        if let publicKey {
            for name in ["n", "e", "x", "y"] {
                if let given = jwk[name]?.stringValue, let derived = publicKey.members[name]?.stringValue,
                    Base64URL.decode(given).map(Self.stripLeadingZeros) != Base64URL.decode(derived).map(Self.stripLeadingZeros)
                {
                    throw JOSEError(.invalidKey, "The JWK's public member \(name) does not belong to its private key.")
                }
            }
        }
    }

    /// A key from a JWK document (a JSON object), as ``init(jwk:algorithm:keyID:)`` reads it.
    ///
    /// - Throws: ``JOSEError/Reason/malformed`` when the data is not a JSON object; otherwise
    ///   as ``init(jwk:algorithm:keyID:)``.
    public init(jwkData: Data, algorithm: JWSAlgorithm? = nil, keyID: String? = nil) throws(JOSEError) {
        try self.init(jwk: try JOSEJSON.object(jwkData, what: "JWK"), algorithm: algorithm, keyID: keyID)
    }

    /// A key from a PEM private key whose type is read from the PEM itself: PKCS#8
    /// (`PRIVATE KEY`) of any supported type, PKCS#1 (`RSA PRIVATE KEY`) or SEC1
    /// (`EC PRIVATE KEY`).
    ///
    /// - Parameters:
    ///   - pem: the PEM text of the private key.
    ///   - algorithm: the algorithm to sign with; `nil` takes the key type's usual one
    ///     (RS256, ES256/384/512 by curve, EdDSA).
    ///   - keyID: the `kid` to put in headers. Servers that hold several keys of a client
    ///     (Glewlwyd) need it to match the registered key's `kid`.
    /// - Throws: ``JOSEError/Reason/invalidKey`` when the PEM holds no supported private key
    ///   (an encrypted PEM is refused: decrypt it first), or an RSA key of fewer than 2048
    ///   bits; ``JOSEError/Reason/algorithmNotAllowed`` when `algorithm` does not fit the key.
    public init(pem: String, algorithm: JWSAlgorithm? = nil, keyID: String? = nil) throws(JOSEError) {
        if let algorithm {
            let loaded = try JWSSigningKey(pemRepresentation: pem, algorithm: algorithm, keyID: keyID)
            try self.init(checking: loaded.key, algorithm: algorithm, keyID: keyID)
            return
        }
        if pem.contains("ENCRYPTED PRIVATE KEY") || pem.contains("Proc-Type: 4,ENCRYPTED") {
            throw JOSEError(.invalidKey, "The PEM private key is encrypted; decrypt it first.")
        }
        let candidates: [(String) throws -> PrivateKey] = [
            { .p256(try P256.Signing.PrivateKey(pemRepresentation: $0)) },
            { .p384(try P384.Signing.PrivateKey(pemRepresentation: $0)) },
            { .p521(try P521.Signing.PrivateKey(pemRepresentation: $0)) },
            { .ed25519(try Curve25519.Signing.PrivateKey(pemRepresentation: $0)) },
            { .rsa(try _RSA.Signing.PrivateKey(pemRepresentation: $0)) },
        ]
        for candidate in candidates {
            if let key = try? candidate(pem) {
                try self.init(checking: key, algorithm: nil, keyID: keyID)
                return
            }
        }
        throw JOSEError(.invalidKey, "The PEM does not hold a supported private key (RSA, EC P-256/384/521, Ed25519).")
    }

    /// A key from a file holding a private JWK (JSON) or a PEM private key.
    ///
    /// - Parameters:
    ///   - url: the file.
    ///   - algorithm: as in ``init(pem:algorithm:keyID:)`` and ``init(jwk:algorithm:keyID:)``.
    ///   - keyID: the `kid` to put in headers; `nil` keeps a JWK's own `kid`.
    /// - Throws: ``JOSEError/Reason/invalidKey`` when the file cannot be read or holds no
    ///   usable private key (the message names neither the key nor the file's contents);
    ///   otherwise as the initializer for the file's format.
    public init(contentsOf url: URL, algorithm: JWSAlgorithm? = nil, keyID: String? = nil) throws(JOSEError) {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw JOSEError(.invalidKey, "The key file \(url.lastPathComponent) cannot be read.")
        }
        guard data.count <= 64 * 1024 else { throw JOSEError(.invalidKey, "The key file \(url.lastPathComponent) is too large.") }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("{") {
            try self.init(jwkData: Data(text.utf8), algorithm: algorithm, keyID: keyID)
        } else {
            try self.init(pem: text, algorithm: algorithm, keyID: keyID)
        }
    }

    /// The private key as a JWK (public members, `d` and, for RSA, the CRT members), with
    /// `kid` and `alg`: the format to persist a key in (a DPoP key in a stored session) and
    /// to load it back with ``init(jwk:algorithm:keyID:)``. `nil` for an HMAC key.
    ///
    /// Keep it as secret as the tokens it protects.
    public var privateJWK: [String: JSONValue]? {
        guard var members = publicKey?.members else { return nil }
        members["use"] = nil
        switch key {
        case .rsa(let rsa):
            guard let numbers = RSAPrivateKeyNumbers.of(rsa.derRepresentation) else { return nil }
            for (name, value) in zip(["n", "e", "d", "p", "q", "dp", "dq", "qi"], numbers) {
                members[name] = .string(Base64URL.encode(value))
            }
        case .p256(let ec): members["d"] = .string(Base64URL.encode(ec.rawRepresentation))
        case .p384(let ec): members["d"] = .string(Base64URL.encode(ec.rawRepresentation))
        case .p521(let ec): members["d"] = .string(Base64URL.encode(ec.rawRepresentation))
        case .ed25519(let ed): members["d"] = .string(Base64URL.encode(ed.rawRepresentation))
        case .hmac: return nil
        }
        return members
    }

    /// The algorithm a key of this type signs with when none is named.
    package static func defaultAlgorithm(for key: PrivateKey) -> JWSAlgorithm? {
        switch key {
        case .rsa: return .rs256
        case .p256: return .es256
        case .p384: return .es384
        case .p521: return .es512
        case .ed25519: return .edDSA
        case .hmac: return nil
        }
    }

    /// `key` for `algorithm` (or its default), after checking that they fit.
    package init(checking key: PrivateKey, algorithm: JWSAlgorithm?, keyID: String?) throws(JOSEError) {
        guard let algorithm = algorithm ?? Self.defaultAlgorithm(for: key) else {
            throw JOSEError(.algorithmNotAllowed, "No algorithm for this key.")
        }
        let fits: Bool
        switch key {
        case .rsa(let rsa):
            guard rsa.keySizeInBits >= 2048 else { throw JOSEError(.invalidKey, "RSA keys under 2048 bits are refused.") }
            fits = [.rs256, .rs384, .rs512, .ps256, .ps384, .ps512].contains(algorithm)
        case .p256: fits = algorithm == .es256
        case .p384: fits = algorithm == .es384
        case .p521: fits = algorithm == .es512
        case .ed25519: fits = algorithm == .edDSA
        case .hmac: fits = algorithm.isHMAC
        }
        guard fits else { throw JOSEError(.algorithmNotAllowed, "The key cannot sign with \(algorithm).") }
        self.init(algorithm: algorithm, keyID: keyID, key: key)
    }

    private static func scalar(_ data: Data, size: Int) throws(JOSEError) -> Data {
        guard data.count == size else { throw JOSEError(.invalidKey, "The EC private key has the wrong length.") }
        return data
    }

    private static func stripLeadingZeros(_ data: Data) -> Data { Data(data.drop(while: { $0 == 0 })) }
}

/// The numbers of a PKCS#1 `RSAPrivateKey` (RFC 8017 A.1.2), read with SwiftASN1.
package enum RSAPrivateKeyNumbers {
    /// The integers n, e, d, p, q, dp, dq, qi, unsigned and without leading zeros; `nil`
    /// when the DER is not a two-prime `RSAPrivateKey`.
    package static func of(_ der: Data) -> [Data]? {
        guard let root = try? DER.parse([UInt8](der)), root.identifier == .sequence, case .constructed(let children) = root.content else {
            return nil
        }
        var integers: [Data] = []
        for child in children {
            guard let value = try? ArraySlice<UInt8>(derEncoded: child) else { return nil }
            integers.append(Data(value.drop(while: { $0 == 0 })))
        }
        // version 0, then the eight numbers (a multi-prime key has more: refused).
        guard integers.count == 9, integers[0].isEmpty else { return nil }
        return Array(integers.dropFirst())
    }
}
