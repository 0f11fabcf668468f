import Crypto
import CryptoExtras
import Foundation

/// A JWS in compact serialization (RFC 7515 §7.1), parsed strictly but not yet verified.
///
/// Parsing refuses: anything but three base64url parts (strict alphabet, no padding,
/// canonical trailing bits); a header or payload over the size limit; a header that is not
/// a JSON object, names a member twice, lacks `alg`, or lists any `crit` extension (none is
/// understood, so RFC 7515 §4.1.11 requires refusing them).
public struct JWS: Sendable {
    /// The protected header, decoded from its checked bytes each time it is read (the
    /// parser reads `alg`, `kid`, `typ` and `crit` without building it).
    public var header: [String: JSONValue] {
        switch headerSource {
        case .object(let object): return object
        case .checked:
            // The bytes passed the same parser when the token was read, so this cannot fail.
            let parsed = try? StrictJSON.parseObject(headerBytes)
            assert(parsed != nil, "bytes the strict parser refuses reached JWS.header")
            return parsed ?? [:]
        }
    }
    /// `alg`.
    public let algorithm: JWSAlgorithm
    /// `kid`, if any.
    public let keyID: String?
    /// `typ`, if any.
    public let type: String?
    /// The payload bytes (for a JWT, the claims JSON).
    public var payload: Data { Data(payloadBytes) }
    /// The signature bytes.
    public let signature: Data
    /// The header, checked by the strict parser and decoded when asked for (a new lazy
    /// object each time: a holder that reads the header more than once keeps it).
    package var headerObject: LazyJSONObject {
        switch headerSource {
        case .object(let object): return LazyJSONObject.make(object)
        case .checked: return LazyJSONObject.make(checkedBytes: headerBytes)
        }
    }
    /// The header as the parser left it: checked and still encoded in ``compact`` (decoded
    /// again only if someone reads it), or the object when the one-pass reader handed the
    /// document to the full parser.
    private let headerSource: HeaderSource
    private enum HeaderSource: Sendable {
        case checked
        case object([String: JSONValue])
    }
    /// The header's bytes, decoded again from the compact form (which the parser checked).
    private var headerBytes: [UInt8] {
        var text = compact
        return text.withUTF8 { Base64URL.decodeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer($0)[..<headerCount])) } ?? []
    }
    /// The length of the header's part in ``compact``.
    private let headerCount: Int
    /// The payload bytes.
    package let payloadBytes: [UInt8]
    /// The compact serialization (native UTF-8); its first ``signingInputCount`` bytes,
    /// `base64url(header) "." base64url(payload)`, are what was signed.
    private let compact: String
    private let signingInputCount: Int

    /// The longest compact serialization accepted, in bytes.
    public static let maximumSize = 64 * 1024

    /// Parses a compact JWS.
    ///
    /// - Throws: ``JOSEError/Reason/malformed``, ``JOSEError/Reason/duplicateMember`` or
    ///   ``JOSEError/Reason/unsupportedCritical``.
    public init(compact: String) throws(JOSEError) {
        var text = compact
        let parsed: Result<JWS, JOSEError> = text.withUTF8 { utf8 in
            do throws(JOSEError) { return .success(try JWS(bytes: UnsafeRawBufferPointer(utf8), compact: compact)) } catch { return .failure(error) }
        }
        self = try parsed.get()
    }

    private init(bytes: UnsafeRawBufferPointer, compact: String) throws(JOSEError) {
        guard bytes.count <= Self.maximumSize else { throw JOSEError(.malformed, "The token is too large.") }
        // memchr, not the generic firstIndex(of:): see BENCHMARKS.md, "Figures behind choices in the code".
        func dot(after start: Int) -> Int? {
            guard start < bytes.count, let found = memchr(bytes.baseAddress! + start, Int32(UInt8(ascii: ".")), bytes.count - start) else { return nil }
            return UnsafeRawPointer(found) - bytes.baseAddress!
        }
        guard let first = dot(after: 0), let second = dot(after: first + 1)
        else { throw JOSEError(.malformed, "The token is not a compact JWS (three parts).") }
        guard dot(after: second + 1) == nil else {
            throw JOSEError(.malformed, "The token has more than three parts (an encrypted JWT is not supported).")
        }
        let malformed = JOSEError(.malformed, "A part of the token is not strict base64url.")
        guard let payloadBytes = Base64URL.decodeBytes(UnsafeRawBufferPointer(rebasing: bytes[(first + 1)..<second])),
            let signature = Base64URL.decodeData(UnsafeRawBufferPointer(rebasing: bytes[(second + 1)...]))
        else { throw malformed }
        // One pass reads alg, kid, typ and crit and checks the whole header (strict JSON, no
        // duplicate member), from a temporary buffer; the dictionary is built only if someone
        // asks for `header`.
        var alg: JSONValue?, kid: JSONValue?, typ: JSONValue?, crit: JSONValue?
        let scanned: Result<[String: JSONValue]?, JOSEError>? = Base64URL.withDecoded(UnsafeRawBufferPointer(rebasing: bytes[..<first])) { header in
            do throws(JOSEError) {
                return .success(try JOSEJSON.members(header, named: Self.headerMembers, what: "JOSE header") { slot, value in
                    switch slot {
                    case 0: alg = value
                    case 1: kid = value
                    case 2: typ = value
                    default: crit = value
                    }
                })
            } catch {
                return .failure(error)
            }
        }
        guard let scanned else { throw malformed }
        let parsed = try scanned.get()
        guard let alg = alg?.stringValue else { throw JOSEError(.malformed, "The JOSE header has no alg.") }
        if crit != nil {
            throw JOSEError(.unsupportedCritical, "The JOSE header lists critical extensions this client does not understand.")
        }
        if let kid, kid.stringValue == nil { throw JOSEError(.malformed, "The JOSE header's kid is not a string.") }
        headerSource = parsed.map { .object($0) } ?? .checked
        algorithm = JWSAlgorithm(rawValue: alg)
        keyID = kid?.stringValue
        type = typ?.stringValue
        self.payloadBytes = payloadBytes
        self.signature = signature
        self.compact = compact
        signingInputCount = second
        headerCount = first
    }

    /// The header members the parser reads: `alg`, `kid`, `typ`, `crit`.
    private static let headerMembers: JSONMemberNames = ["alg", "kid", "typ", "crit"]

    /// The payload as a JSON object (a JWT claims set), parsed strictly.
    ///
    /// - Throws: ``JOSEError/Reason/malformed`` or ``JOSEError/Reason/duplicateMember``.
    public func claims() throws(JOSEError) -> [String: JSONValue] {
        try JOSEJSON.object(payloadBytes, what: "claims set")
    }

    /// Calls `body` with the signing input's bytes.
    private func withSigningInput<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        var text = compact
        return text.withUTF8 { utf8 in body(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(utf8)[..<signingInputCount])) }
    }

    /// Checks the signature with `key`. The algorithm must fit the key (see
    /// ``JSONWebKey/canVerify(_:)``); `none` and HMAC never verify with a public key.
    public func isSigned(by key: JSONWebKey) -> Bool {
        withSigningInput { input in key.isValidSignature(signature, for: input, algorithm: algorithm) }
    }

    /// Checks an HMAC signature (HS256/384/512) keyed by a shared secret, in constant time.
    public func isSigned(bySecret secret: String) -> Bool {
        let key = SymmetricKey(data: Data(secret.utf8))
        return withSigningInput { input in
            switch algorithm {
            case .hs256: return HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: input, using: key)
            case .hs384: return HMAC<SHA384>.isValidAuthenticationCode(signature, authenticating: input, using: key)
            case .hs512: return HMAC<SHA512>.isValidAuthenticationCode(signature, authenticating: input, using: key)
            default: return false
            }
        }
    }
}

/// A private key that signs JWS: for DPoP proofs, client assertions, request objects and
/// test providers. RSA (RS/PS), EC (ES256/384/512), Ed25519 (EdDSA), or an HMAC secret.
public struct JWSSigningKey: Sendable {
    /// The algorithm this key signs with.
    public let algorithm: JWSAlgorithm
    /// The `kid` put in headers, if any.
    public let keyID: String?
    package let key: PrivateKey

    package enum PrivateKey: @unchecked Sendable {
        case rsa(_RSA.Signing.PrivateKey)
        case p256(P256.Signing.PrivateKey)
        case p384(P384.Signing.PrivateKey)
        case p521(P521.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
        case hmac(SymmetricKey)
    }

    /// A new random key for `algorithm` (RSA keys are 2048 bits).
    ///
    /// - Throws: ``JOSEError/Reason/algorithmNotAllowed`` for `none`, HMAC or an unknown
    ///   algorithm; ``JOSEError/Reason/invalidKey`` if key generation fails.
    public static func generate(_ algorithm: JWSAlgorithm, keyID: String? = nil) throws(JOSEError) -> JWSSigningKey {
        let key: PrivateKey
        switch algorithm {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512:
            do { key = .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048)) } catch {
                throw JOSEError(.invalidKey, "RSA key generation failed.")
            }
        case .es256: key = .p256(P256.Signing.PrivateKey())
        case .es384: key = .p384(P384.Signing.PrivateKey())
        case .es512: key = .p521(P521.Signing.PrivateKey())
        case .edDSA: key = .ed25519(Curve25519.Signing.PrivateKey())
        default: throw JOSEError(.algorithmNotAllowed, "Cannot generate a key for \(algorithm).")
        }
        return JWSSigningKey(algorithm: algorithm, keyID: keyID, key: key)
    }

    /// A key from a PEM private key (PKCS#8, or PKCS#1 for RSA, or SEC1 for EC).
    ///
    /// - Throws: ``JOSEError/Reason/invalidKey`` when the PEM does not hold a key for
    ///   `algorithm`.
    public init(pemRepresentation pem: String, algorithm: JWSAlgorithm, keyID: String? = nil) throws(JOSEError) {
        do {
            switch algorithm {
            case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: key = .rsa(try _RSA.Signing.PrivateKey(pemRepresentation: pem))
            case .es256: key = .p256(try P256.Signing.PrivateKey(pemRepresentation: pem))
            case .es384: key = .p384(try P384.Signing.PrivateKey(pemRepresentation: pem))
            case .es512: key = .p521(try P521.Signing.PrivateKey(pemRepresentation: pem))
            case .edDSA: key = .ed25519(try Curve25519.Signing.PrivateKey(pemRepresentation: pem))
            default: throw JOSEError(.algorithmNotAllowed, "\(algorithm) does not use a private key.")
            }
        } catch let error as JOSEError {
            throw error
        } catch {
            throw JOSEError(.invalidKey, "The PEM does not hold a private key for \(algorithm).")
        }
        self.algorithm = algorithm
        self.keyID = keyID
    }

    /// An HMAC key (HS256/384/512) from a shared secret, as `client_secret_jwt` uses.
    ///
    /// - Throws: ``JOSEError/Reason/algorithmNotAllowed`` unless `algorithm` is HMAC.
    public init(secret: String, algorithm: JWSAlgorithm = .hs256, keyID: String? = nil) throws(JOSEError) {
        guard algorithm.isHMAC else { throw JOSEError(.algorithmNotAllowed, "\(algorithm) is not an HMAC algorithm.") }
        self.init(algorithm: algorithm, keyID: keyID, key: .hmac(SymmetricKey(data: Data(secret.utf8))))
    }

    package init(algorithm: JWSAlgorithm, keyID: String?, key: PrivateKey) {
        self.algorithm = algorithm
        self.keyID = keyID
        self.key = key
    }

    /// The public half as a JWK (with this key's `kid` and `alg`); `nil` for HMAC.
    public var publicKey: JSONWebKey? {
        switch key {
        case .rsa(let key): return JSONWebKey(key: .rsa(key.publicKey), keyID: keyID, algorithm: algorithm)
        case .p256(let key): return JSONWebKey(key: .p256(key.publicKey), keyID: keyID, algorithm: algorithm)
        case .p384(let key): return JSONWebKey(key: .p384(key.publicKey), keyID: keyID, algorithm: algorithm)
        case .p521(let key): return JSONWebKey(key: .p521(key.publicKey), keyID: keyID, algorithm: algorithm)
        case .ed25519(let key): return JSONWebKey(key: .ed25519(key.publicKey), keyID: keyID, algorithm: algorithm)
        case .hmac: return nil
        }
    }

    /// The same key with another `kid`.
    public func withKeyID(_ keyID: String?) -> JWSSigningKey { JWSSigningKey(algorithm: algorithm, keyID: keyID, key: key) }

    /// Signs `payload` into a compact JWS. The header holds `alg`, `kid` (when the key has
    /// one) and `header`'s members, which may not replace `alg`.
    ///
    /// - Throws: ``JOSEError/Reason/invalidKey`` when the signing operation fails.
    public func sign(payload: Data, header: [String: JSONValue] = [:]) throws(JOSEError) -> String {
        var fields = header
        fields["alg"] = .string(algorithm.rawValue)
        if let keyID, fields["kid"] == nil { fields["kid"] = .string(keyID) }
        let input = Base64URL.encode(Data(JSONValue.object(fields).description.utf8)) + "." + Base64URL.encode(payload)
        return input + "." + Base64URL.encode(try signature(for: Data(input.utf8)))
    }

    /// Signs a claims set into a compact JWT.
    ///
    /// - Throws: ``JOSEError/Reason/invalidKey`` when the signing operation fails.
    public func sign(claims: [String: JSONValue], header: [String: JSONValue] = [:]) throws(JOSEError) -> String {
        try sign(payload: Data(JSONValue.object(claims).description.utf8), header: header)
    }

    package func signature(for input: Data) throws(JOSEError) -> Data {
        do {
            switch (key, algorithm) {
            case (.rsa(let key), .rs256): return try key.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation
            case (.rsa(let key), .rs384): return try key.signature(for: SHA384.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation
            case (.rsa(let key), .rs512): return try key.signature(for: SHA512.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation
            case (.rsa(let key), .ps256): return try key.signature(for: SHA256.hash(data: input), padding: .PSS).rawRepresentation
            case (.rsa(let key), .ps384): return try key.signature(for: SHA384.hash(data: input), padding: .PSS).rawRepresentation
            case (.rsa(let key), .ps512): return try key.signature(for: SHA512.hash(data: input), padding: .PSS).rawRepresentation
            case (.p256(let key), _): return try key.signature(for: SHA256.hash(data: input)).rawRepresentation
            case (.p384(let key), _): return try key.signature(for: SHA384.hash(data: input)).rawRepresentation
            case (.p521(let key), _): return try key.signature(for: SHA512.hash(data: input)).rawRepresentation
            case (.ed25519(let key), _): return try key.signature(for: input)
            case (.hmac(let key), .hs256): return Data(HMAC<SHA256>.authenticationCode(for: input, using: key))
            case (.hmac(let key), .hs384): return Data(HMAC<SHA384>.authenticationCode(for: input, using: key))
            case (.hmac(let key), .hs512): return Data(HMAC<SHA512>.authenticationCode(for: input, using: key))
            default: throw JOSEError(.algorithmNotAllowed, "The key cannot sign with \(algorithm).")
            }
        } catch let error as JOSEError {
            throw error
        } catch {
            throw JOSEError(.invalidKey, "Signing failed.")
        }
    }
}
