import Crypto
import CryptoExtras
import Foundation
import OAuth2Internals

/// A JWE in compact serialization (RFC 7516 §7.1), parsed strictly but not yet decrypted:
/// what a server sends when a client registered encrypted ID tokens, UserInfo or
/// introspection answers.
///
/// Parsing refuses: anything but five base64url parts (strict alphabet, no padding); a
/// document over ``maximumSize``; a protected header that is not a JSON object, names a
/// member twice, lacks `alg` or `enc`, lists any `crit` extension, or asks for compression
/// (`zip`: refused, so that a small token cannot expand without bound).
///
/// Decrypting checks the algorithms against a ``JWEPolicy`` before any key is used, and
/// fails the same way whatever went wrong inside (a wrong key, a forged tag, bad padding):
/// ``JOSEError/Reason/decryptionFailed``.
public struct JWE: Sendable {
    /// The protected header.
    public let header: [String: JSONValue]
    /// `alg`: how the content encryption key was sent.
    public let keyAlgorithm: JWEKeyAlgorithm
    /// `enc`: how the content was encrypted.
    public let contentEncryption: JWEContentEncryption
    /// `kid`, if any: the recipient's key it was made for.
    public let keyID: String?
    /// `cty`, if any: `JWT` when the plaintext is a signed JWT (a nested JWT).
    public let contentType: String?
    /// `typ`, if any.
    public let type: String?

    private let encodedHeader: [UInt8]
    private let encryptedKey: Data
    private let initializationVector: Data
    private let ciphertext: Data
    private let tag: Data

    /// The longest compact serialization accepted, in bytes.
    public static let maximumSize = 256 * 1024

    /// `true` when `text` has the shape of a compact JWE (five parts) rather than a JWS
    /// (three): how a client tells an encrypted answer from a signed one.
    public static func isCompact(_ text: some StringProtocol) -> Bool {
        text.utf8.count <= maximumSize && text.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 4
    }

    /// Parses a compact JWE.
    ///
    /// - Throws: ``JOSEError/Reason/malformed``, ``JOSEError/Reason/duplicateMember`` or
    ///   ``JOSEError/Reason/unsupportedCritical``.
    public init(compact: String) throws(JOSEError) {
        let utf8 = Array(compact.utf8)
        guard utf8.count <= Self.maximumSize else { throw JOSEError(.malformed, "The JWE is too large.") }
        let parts = utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 5 else { throw JOSEError(.malformed, "The token is not a compact JWE (five parts).") }
        let malformed = JOSEError(.malformed, "A part of the JWE is not strict base64url.")
        func decode(_ part: ArraySlice<UInt8>) throws(JOSEError) -> Data {
            guard let data = part.withUnsafeBytes({ Base64URL.decodeData($0) }) else { throw malformed }
            return data
        }
        let headerBytes = try decode(parts[0])
        let object = try JOSEJSON.object(headerBytes, what: "JWE header")
        guard let alg = object["alg"]?.stringValue, let enc = object["enc"]?.stringValue else {
            throw JOSEError(.malformed, "The JWE header lacks alg or enc.")
        }
        if object["crit"] != nil {
            throw JOSEError(.unsupportedCritical, "The JWE header lists critical extensions this client does not understand.")
        }
        if object["zip"] != nil { throw JOSEError(.malformed, "Compressed JWEs (zip) are refused.") }
        if let kid = object["kid"], kid.stringValue == nil { throw JOSEError(.malformed, "The JWE header's kid is not a string.") }
        header = object
        keyAlgorithm = JWEKeyAlgorithm(rawValue: alg)
        contentEncryption = JWEContentEncryption(rawValue: enc)
        keyID = object["kid"]?.stringValue
        contentType = object["cty"]?.stringValue
        type = object["typ"]?.stringValue
        encodedHeader = Array(parts[0])
        encryptedKey = try decode(parts[1])
        initializationVector = try decode(parts[2])
        ciphertext = try decode(parts[3])
        tag = try decode(parts[4])
    }

    /// Decrypts with the first of `keys` that fits the header (its `kid`, else every key
    /// that fits the algorithm, in order).
    ///
    /// - Parameters:
    ///   - keys: the recipient's decryption keys.
    ///   - policy: the algorithms accepted; checked before any key is used.
    /// - Returns: the plaintext (for a nested JWT, a compact JWS to verify next).
    /// - Throws: ``JOSEError/Reason/algorithmNotAllowed`` for an `alg` or `enc` outside
    ///   `policy`; ``JOSEError/Reason/keyNotFound`` when no key fits;
    ///   ``JOSEError/Reason/malformed`` for a header whose members are not what `alg` needs;
    ///   ``JOSEError/Reason/decryptionFailed`` when no fitting key decrypts it.
    public func decrypt(with keys: [JWEDecryptionKey], policy: JWEPolicy = .default) throws(JOSEError) -> Data {
        guard policy.keyAlgorithms.contains(keyAlgorithm) else {
            throw JOSEError(.algorithmNotAllowed, "The JWE's key algorithm \(keyAlgorithm) is not accepted.")
        }
        guard policy.contentEncryptions.contains(contentEncryption), let keyLength = contentEncryption.keyLength else {
            throw JOSEError(.algorithmNotAllowed, "The JWE's content encryption \(contentEncryption) is not accepted.")
        }
        let candidates = keys.filter { key in key.fits(keyAlgorithm) && (keyID == nil || key.keyID == keyID) }
        guard !candidates.isEmpty else { throw JOSEError(.keyNotFound, "No decryption key fits the JWE's kid and alg.") }
        let ephemeral = keyAlgorithm.isECDH ? try EphemeralKey(header["epk"]) : nil
        for key in candidates {
            guard let contentKey = contentEncryptionKey(with: key, ephemeral: ephemeral, keyLength: keyLength) else { continue }
            if let plaintext = Self.open(
                ciphertext, tag: tag, iv: initializationVector, aad: encodedHeader, key: contentKey, encryption: contentEncryption)
            {
                return plaintext
            }
        }
        throw JOSEError(.decryptionFailed, "The JWE cannot be decrypted with this client's keys.")
    }

    /// The content encryption key `key` recovers, or, when RSA decryption fails, a random one
    /// of the right length so that a failure shows only at the tag (RFC 7516 §11.5); `nil`
    /// when the key cannot be used at all (another curve, say).
    private func contentEncryptionKey(with key: JWEDecryptionKey, ephemeral: EphemeralKey?, keyLength: Int) -> SymmetricKey? {
        switch (key.key, keyAlgorithm) {
        case (.rsa(let rsa), .rsaOAEP256), (.rsa(let rsa), .rsaOAEP):
            let padding: _RSA.Encryption.Padding = keyAlgorithm == .rsaOAEP256 ? .PKCS1_OAEP_SHA256 : .PKCS1_OAEP
            if let bytes = try? rsa.decrypt(encryptedKey, padding: padding), bytes.count == keyLength {
                return SymmetricKey(data: bytes)
            }
            return SymmetricKey(data: SecureRandom.bytes(keyLength))
        default:
            guard let ephemeral, let shared = ephemeral.agree(with: key.key) else { return nil }
            if let wrapLength = keyAlgorithm.keyWrapLength {
                let wrapping = SymmetricKey(data: Self.concatKDF(shared, length: wrapLength, algorithmID: keyAlgorithm.rawValue, header: header))
                guard let unwrapped = try? AES.KeyWrap.unwrap(encryptedKey, using: wrapping), unwrapped.bitCount == keyLength * 8 else { return nil }
                return unwrapped
            }
            guard encryptedKey.isEmpty else { return nil }   // ECDH-ES: the agreement is the key
            return SymmetricKey(data: Self.concatKDF(shared, length: keyLength, algorithmID: contentEncryption.rawValue, header: header))
        }
    }

    /// Decrypts and authenticates; `nil` on any failure.
    private static func open(
        _ ciphertext: Data, tag: Data, iv: Data, aad: [UInt8], key: SymmetricKey, encryption: JWEContentEncryption
    ) -> Data? {
        if encryption.isGCM {
            guard iv.count == 12, tag.count == 16, let nonce = try? AES.GCM.Nonce(data: iv),
                let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
            else { return nil }
            return try? AES.GCM.open(box, using: key, authenticating: aad)
        }
        let (macKey, encryptionKey) = key.withUnsafeBytes { bytes in
            (SymmetricKey(data: bytes.prefix(bytes.count / 2)), SymmetricKey(data: bytes.suffix(bytes.count / 2)))
        }
        guard iv.count == 16, tag.count == macKey.bitCount / 8, ciphertext.count % 16 == 0, !ciphertext.isEmpty else { return nil }
        let expected = cbcTag(aad: aad, iv: iv, ciphertext: ciphertext, macKey: macKey, encryption: encryption)
        guard expected.count == tag.count, expected.withUnsafeBytes({ a in tag.withUnsafeBytes { b in constantTimeEquals(a, b) } }) else { return nil }
        guard let cbcIV = try? AES._CBC.IV(ivBytes: iv) else { return nil }
        return try? AES._CBC.decrypt(ciphertext, using: encryptionKey, iv: cbcIV)
    }

    /// The CBC-HMAC tag (RFC 7518 §5.2.2.1): HMAC over AAD ‖ IV ‖ ciphertext ‖ AL (the AAD's
    /// length in bits, 64-bit big-endian), its first half.
    private static func cbcTag(aad: [UInt8], iv: Data, ciphertext: Data, macKey: SymmetricKey, encryption: JWEContentEncryption) -> Data {
        var input = Data(aad)
        input.append(iv)
        input.append(ciphertext)
        withUnsafeBytes(of: (UInt64(aad.count) * 8).bigEndian) { input.append(contentsOf: $0) }
        let mac: Data
        switch encryption {
        case .a192CBCHS384: mac = Data(HMAC<SHA384>.authenticationCode(for: input, using: macKey))
        case .a256CBCHS512: mac = Data(HMAC<SHA512>.authenticationCode(for: input, using: macKey))
        default: mac = Data(HMAC<SHA256>.authenticationCode(for: input, using: macKey))
        }
        return mac.prefix(macKey.bitCount / 8)
    }

    /// The Concat KDF of NIST SP 800-56A §5.8.1 with SHA-256, as RFC 7518 §4.6.2 uses it:
    /// AlgorithmID, PartyUInfo (`apu`) and PartyVInfo (`apv`), each length-prefixed, then the
    /// key length in bits.
    static func concatKDF(_ shared: SharedSecret, length: Int, algorithmID: String, header: [String: JSONValue]) -> Data {
        func prefixed(_ bytes: Data) -> Data {
            var out = Data()
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { out.append(contentsOf: $0) }
            out.append(bytes)
            return out
        }
        var otherInfo = prefixed(Data(algorithmID.utf8))
        otherInfo.append(prefixed(header["apu"]?.stringValue.flatMap { Base64URL.decode($0) } ?? Data()))
        otherInfo.append(prefixed(header["apv"]?.stringValue.flatMap { Base64URL.decode($0) } ?? Data()))
        withUnsafeBytes(of: UInt32(length * 8).bigEndian) { otherInfo.append(contentsOf: $0) }
        var derived = Data()
        var counter: UInt32 = 1
        while derived.count < length {
            var hash = SHA256()
            withUnsafeBytes(of: counter.bigEndian) { hash.update(bufferPointer: $0) }
            shared.withUnsafeBytes { hash.update(bufferPointer: $0) }
            hash.update(data: otherInfo)
            derived.append(contentsOf: hash.finalize())
            counter += 1
        }
        return derived.prefix(length)
    }

    /// The sender's ephemeral public key (`epk`), on a curve this library supports.
    private enum EphemeralKey {
        case p256(P256.KeyAgreement.PublicKey)
        case p384(P384.KeyAgreement.PublicKey)
        case p521(P521.KeyAgreement.PublicKey)

        init(_ value: JSONValue?) throws(JOSEError) {
            guard let object = value?.objectValue, object["kty"]?.stringValue == "EC" else {
                throw JOSEError(.malformed, "The JWE header's epk is missing or not an EC key.")
            }
            // JSONWebKey checks the point is on its curve.
            let members = object.filter { ["kty", "crv", "x", "y"].contains($0.key) }
            let key: JSONWebKey
            do { key = try JSONWebKey(members) } catch { throw JOSEError(.malformed, "The JWE header's epk is not a valid EC public key.") }
            do {
                switch key.key {
                case .p256(let k): self = .p256(try P256.KeyAgreement.PublicKey(rawRepresentation: k.rawRepresentation))
                case .p384(let k): self = .p384(try P384.KeyAgreement.PublicKey(rawRepresentation: k.rawRepresentation))
                case .p521(let k): self = .p521(try P521.KeyAgreement.PublicKey(rawRepresentation: k.rawRepresentation))
                default: throw JOSEError(.malformed, "The JWE header's epk is on an unsupported curve.")
                }
            } catch let error as JOSEError {
                throw error
            } catch {
                throw JOSEError(.malformed, "The JWE header's epk is not a valid EC public key.")
            }
        }

        /// The shared secret with `key`, or `nil` when the curves differ.
        func agree(with key: JWEDecryptionKey.PrivateKey) -> SharedSecret? {
            switch (self, key) {
            case (.p256(let epk), .p256(let own)): return try? own.sharedSecretFromKeyAgreement(with: epk)
            case (.p384(let epk), .p384(let own)): return try? own.sharedSecretFromKeyAgreement(with: epk)
            case (.p521(let epk), .p521(let own)): return try? own.sharedSecretFromKeyAgreement(with: epk)
            default: return nil
            }
        }
    }
}

extension JWE {
    /// Encrypts `plaintext` to a recipient's public key (from its JWK set): for encrypted
    /// request objects, and for servers and tests that encrypt to a client.
    ///
    /// - Parameters:
    ///   - plaintext: what to encrypt (for a nested JWT, the compact JWS; set `contentType`
    ///     to `JWT`).
    ///   - recipient: an RSA or EC key; its `use`, if stated, must be `enc`, and its `alg`,
    ///     if stated, `algorithm`.
    ///   - algorithm: the key management algorithm.
    ///   - encryption: the content encryption.
    ///   - contentType: `cty`, if any.
    ///   - header: further header members (`typ`…); they may not replace `alg`, `enc`,
    ///     `kid` or `epk`.
    /// - Returns: the compact JWE, with the recipient's `kid` when it has one.
    /// - Throws: ``JOSEError/Reason/algorithmNotAllowed`` for an unsupported pair or one
    ///   the key does not fit; ``JOSEError/Reason/invalidKey`` when the key cannot be used.
    public static func encrypt(
        _ plaintext: Data, to recipient: JSONWebKey, algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption,
        contentType: String? = nil, header: [String: JSONValue] = [:]
    ) throws(JOSEError) -> String {
        guard JWEKeyAlgorithm.supported.contains(algorithm), let keyLength = encryption.keyLength else {
            throw JOSEError(.algorithmNotAllowed, "Cannot encrypt with \(algorithm) and \(encryption).")
        }
        if let use = recipient.use, use != "enc" { throw JOSEError(.invalidKey, "The recipient's key is not for encryption.") }
        if let stated = recipient.members["alg"]?.stringValue, stated != algorithm.rawValue {
            throw JOSEError(.algorithmNotAllowed, "The recipient's key is for \(stated), not \(algorithm).")
        }
        var fields = header
        fields["alg"] = .string(algorithm.rawValue)
        fields["enc"] = .string(encryption.rawValue)
        fields["kid"] = recipient.keyID.map(JSONValue.string)
        fields["epk"] = nil
        if let contentType { fields["cty"] = .string(contentType) }
        var contentKey = SymmetricKey(data: SecureRandom.bytes(keyLength))
        var encryptedKey = Data()
        do {
            switch (recipient.key, algorithm) {
            case (.rsa(let rsa), .rsaOAEP256), (.rsa(let rsa), .rsaOAEP):
                let key = try _RSA.Encryption.PublicKey(derRepresentation: rsa.derRepresentation)
                encryptedKey = try contentKey.withUnsafeBytes { bytes in
                    try key.encrypt(Data(bytes), padding: algorithm == .rsaOAEP256 ? .PKCS1_OAEP_SHA256 : .PKCS1_OAEP)
                }
            case (.p256(let k), _) where algorithm.isECDH:
                let ephemeral = P256.KeyAgreement.PrivateKey()
                let shared = try ephemeral.sharedSecretFromKeyAgreement(with: try P256.KeyAgreement.PublicKey(rawRepresentation: k.rawRepresentation))
                fields["epk"] = .object(ephemeralMembers("P-256", ephemeral.publicKey.rawRepresentation))
                (contentKey, encryptedKey) = try agreedKey(shared, algorithm: algorithm, encryption: encryption, fields: fields, contentKey: contentKey)
            case (.p384(let k), _) where algorithm.isECDH:
                let ephemeral = P384.KeyAgreement.PrivateKey()
                let shared = try ephemeral.sharedSecretFromKeyAgreement(with: try P384.KeyAgreement.PublicKey(rawRepresentation: k.rawRepresentation))
                fields["epk"] = .object(ephemeralMembers("P-384", ephemeral.publicKey.rawRepresentation))
                (contentKey, encryptedKey) = try agreedKey(shared, algorithm: algorithm, encryption: encryption, fields: fields, contentKey: contentKey)
            case (.p521(let k), _) where algorithm.isECDH:
                let ephemeral = P521.KeyAgreement.PrivateKey()
                let shared = try ephemeral.sharedSecretFromKeyAgreement(with: try P521.KeyAgreement.PublicKey(rawRepresentation: k.rawRepresentation))
                fields["epk"] = .object(ephemeralMembers("P-521", ephemeral.publicKey.rawRepresentation))
                (contentKey, encryptedKey) = try agreedKey(shared, algorithm: algorithm, encryption: encryption, fields: fields, contentKey: contentKey)
            default:
                throw JOSEError(.algorithmNotAllowed, "The recipient's \(recipient.keyType) key cannot be used with \(algorithm).")
            }
        } catch let error as JOSEError {
            throw error
        } catch {
            throw JOSEError(.invalidKey, "Encrypting to the recipient's key failed.")
        }
        let encodedHeader = Base64URL.encode(Data(JSONValue.object(fields).description.utf8))
        let aad = Array(encodedHeader.utf8)
        let iv: Data, ciphertext: Data, tag: Data
        do {
            if encryption.isGCM {
                let box = try AES.GCM.seal(plaintext, using: contentKey, nonce: AES.GCM.Nonce(), authenticating: aad)
                (iv, ciphertext, tag) = (Data(box.nonce), box.ciphertext, box.tag)
            } else {
                let (macKey, encryptionKey) = contentKey.withUnsafeBytes { bytes in
                    (SymmetricKey(data: bytes.prefix(bytes.count / 2)), SymmetricKey(data: bytes.suffix(bytes.count / 2)))
                }
                let cbcIV = AES._CBC.IV()
                iv = Data(cbcIV)
                ciphertext = try AES._CBC.encrypt(plaintext, using: encryptionKey, iv: cbcIV)
                tag = cbcTag(aad: aad, iv: iv, ciphertext: ciphertext, macKey: macKey, encryption: encryption)
            }
        } catch {
            throw JOSEError(.invalidKey, "Content encryption failed.")
        }
        return [encodedHeader, Base64URL.encode(encryptedKey), Base64URL.encode(iv), Base64URL.encode(ciphertext), Base64URL.encode(tag)]
            .joined(separator: ".")
    }

    /// For ECDH-ES, the agreed key is the content key and nothing is sent; for the key-wrap
    /// variants, it wraps the random content key.
    private static func agreedKey(
        _ shared: SharedSecret, algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption, fields: [String: JSONValue], contentKey: SymmetricKey
    ) throws -> (SymmetricKey, Data) {
        if let wrapLength = algorithm.keyWrapLength {
            let wrapping = SymmetricKey(data: concatKDF(shared, length: wrapLength, algorithmID: algorithm.rawValue, header: fields))
            return (contentKey, try AES.KeyWrap.wrap(contentKey, using: wrapping))
        }
        let length = encryption.keyLength ?? 0
        return (SymmetricKey(data: concatKDF(shared, length: length, algorithmID: encryption.rawValue, header: fields)), Data())
    }

    private static func ephemeralMembers(_ curve: String, _ raw: Data) -> [String: JSONValue] {
        let half = raw.count / 2
        return ["kty": "EC", "crv": .string(curve), "x": .string(Base64URL.encode(raw.prefix(half))), "y": .string(Base64URL.encode(raw.suffix(half)))]
    }
}
