import Crypto
import CryptoExtras
import Foundation

/// A public key from a JWK set (RFC 7517): RSA, EC (P-256, P-384, P-521) or OKP (Ed25519).
///
/// The key is decoded once, when the set is parsed, so that verifying a signature costs
/// only the signature check.
public struct JSONWebKey: Sendable, Hashable, CustomStringConvertible {
    /// `kty`: `RSA`, `EC` or `OKP`.
    public var keyType: String { storage.keyType }
    /// `crv` for EC and OKP keys.
    public var curve: String? { storage.curve }
    /// `kid`, if any.
    public var keyID: String? { storage.keyID }
    /// `use`: `sig` or `enc`, if stated. Keys with `use: enc` never verify a signature.
    public var use: String? { storage.use }
    /// `alg`, if stated: the only algorithm this key may be used with.
    public var algorithm: JWSAlgorithm? { storage.algorithm }
    /// `key_ops`, if stated.
    public var keyOperations: [String]? { storage.keyOperations }
    /// The key's public members, as published (private members are dropped).
    public var members: [String: JSONValue] { storage.members }

    package var key: PublicKey { storage.key }

    private let storage: Storage

    /// The key's parts in one object: a copy of the key (each key looked at while a token's
    /// signature is checked is one) costs one reference count, not one per member.
    private final class Storage: Sendable {
        let keyType: String
        let curve: String?
        let keyID: String?
        let use: String?
        let algorithm: JWSAlgorithm?
        let keyOperations: [String]?
        let members: [String: JSONValue]
        let key: PublicKey

        init(
            keyType: String, curve: String?, keyID: String?, use: String?, algorithm: JWSAlgorithm?, keyOperations: [String]?,
            members: [String: JSONValue], key: PublicKey
        ) {
            self.keyType = keyType
            self.curve = curve
            self.keyID = keyID
            self.use = use
            self.algorithm = algorithm
            self.keyOperations = keyOperations
            self.members = members
            self.key = key
        }
    }

    package enum PublicKey: @unchecked Sendable {
        case rsa(_RSA.Signing.PublicKey)
        case p256(P256.Signing.PublicKey)
        case p384(P384.Signing.PublicKey)
        case p521(P521.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)
    }

    private static let publicMembers: Set<String> = [
        "kty", "crv", "kid", "use", "alg", "key_ops", "n", "e", "x", "y", "x5c", "x5t", "x5t#S256", "x5u",
    ]

    /// Decodes a JWK object.
    ///
    /// - Throws: ``JOSEError/Reason/invalidKey`` for a key of an unsupported type or curve,
    ///   an RSA modulus under 2048 bits, a point not on its curve, or malformed members.
    public init(_ object: [String: JSONValue]) throws(JOSEError) {
        guard let kty = object["kty"]?.stringValue else { throw JOSEError(.invalidKey, "The key has no kty.") }
        func bytes(_ name: String) throws(JOSEError) -> Data {
            guard let text = object[name]?.stringValue, let data = Base64URL.decode(text), !data.isEmpty else {
                throw JOSEError(.invalidKey, "The \(kty) key's \(name) is missing or not base64url.")
            }
            return data
        }
        let curve = object["crv"]?.stringValue
        let key: PublicKey
        do {
            switch (kty, curve) {
            case ("RSA", _):
                let rsa = try _RSA.Signing.PublicKey(n: try bytes("n"), e: try bytes("e"))
                guard rsa.keySizeInBits >= 2048 else { throw JOSEError(.invalidKey, "RSA keys under 2048 bits are refused.") }
                key = .rsa(rsa)
            case ("EC", "P-256"):
                key = .p256(try P256.Signing.PublicKey(rawRepresentation: try Self.point(bytes("x"), bytes("y"), size: 32)))
            case ("EC", "P-384"):
                key = .p384(try P384.Signing.PublicKey(rawRepresentation: try Self.point(bytes("x"), bytes("y"), size: 48)))
            case ("EC", "P-521"):
                key = .p521(try P521.Signing.PublicKey(rawRepresentation: try Self.point(bytes("x"), bytes("y"), size: 66)))
            case ("OKP", "Ed25519"):
                key = .ed25519(try Curve25519.Signing.PublicKey(rawRepresentation: try bytes("x")))
            default:
                throw JOSEError(.invalidKey, "Unsupported key type \(kty) \(curve ?? "").")
            }
        } catch let error as JOSEError {
            throw error
        } catch {
            throw JOSEError(.invalidKey, "The \(kty) key cannot be decoded.")
        }
        storage = Storage(
            keyType: kty, curve: curve, keyID: object["kid"]?.stringValue, use: object["use"]?.stringValue,
            algorithm: object["alg"]?.stringValue.map(JWSAlgorithm.init(rawValue:)),
            keyOperations: object["key_ops"]?.arrayValue?.compactMap(\.stringValue),
            members: object.filter { Self.publicMembers.contains($0.key) }, key: key)
    }

    package init(key: PublicKey, keyID: String?, algorithm: JWSAlgorithm?) {
        var members: [String: JSONValue] = [:]
        switch key {
        case .rsa(let rsa):
            let components = try? rsa.getKeyPrimitives()
            members = [
                "kty": "RSA", "n": .string(Base64URL.encode(components?.modulus ?? Data())),
                "e": .string(Base64URL.encode(components?.publicExponent ?? Data())),
            ]
        case .p256(let ec): members = Self.ecMembers("P-256", ec.rawRepresentation)
        case .p384(let ec): members = Self.ecMembers("P-384", ec.rawRepresentation)
        case .p521(let ec): members = Self.ecMembers("P-521", ec.rawRepresentation)
        case .ed25519(let ed): members = ["kty": "OKP", "crv": "Ed25519", "x": .string(Base64URL.encode(ed.rawRepresentation))]
        }
        if let keyID { members["kid"] = .string(keyID) }
        if let algorithm { members["alg"] = .string(algorithm.rawValue) }
        members["use"] = "sig"
        storage = Storage(
            keyType: members["kty"]?.stringValue ?? "", curve: members["crv"]?.stringValue, keyID: keyID, use: "sig",
            algorithm: algorithm, keyOperations: nil, members: members, key: key)
    }

    private static func ecMembers(_ curve: String, _ raw: Data) -> [String: JSONValue] {
        let half = raw.count / 2
        return ["kty": "EC", "crv": .string(curve), "x": .string(Base64URL.encode(raw.prefix(half))), "y": .string(Base64URL.encode(raw.suffix(half)))]
    }

    private static func point(_ x: Data, _ y: Data, size: Int) throws(JOSEError) -> Data {
        guard x.count == size, y.count == size else { throw JOSEError(.invalidKey, "The EC key's coordinates have the wrong length.") }
        return x + y
    }

    /// `true` when this key may verify a signature made with `algorithm`: its type and
    /// curve fit, its `use` is not `enc`, its `key_ops` (if any) allow `verify`, and its
    /// `alg` (if any) is that algorithm.
    public func canVerify(_ algorithm: JWSAlgorithm) -> Bool {
        guard let requirement = algorithm.keyRequirement, requirement.kty == keyType else { return false }
        if let crv = requirement.crv, crv != curve { return false }
        if use == "enc" { return false }
        if let keyOperations, !keyOperations.contains("verify") { return false }
        if let own = self.algorithm, own != algorithm { return false }
        return true
    }

    /// Checks `signature` over `input` with `algorithm` (which must fit this key).
    public func isValidSignature(_ signature: some DataProtocol, for input: some DataProtocol, algorithm: JWSAlgorithm) -> Bool {
        guard canVerify(algorithm) else { return false }
        switch (key, algorithm) {
        case (.rsa(let key), .rs256): return key.isValidSignature(.init(rawRepresentation: signature), for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5)
        case (.rsa(let key), .rs384): return key.isValidSignature(.init(rawRepresentation: signature), for: SHA384.hash(data: input), padding: .insecurePKCS1v1_5)
        case (.rsa(let key), .rs512): return key.isValidSignature(.init(rawRepresentation: signature), for: SHA512.hash(data: input), padding: .insecurePKCS1v1_5)
        case (.rsa(let key), .ps256): return key.isValidSignature(.init(rawRepresentation: signature), for: SHA256.hash(data: input), padding: .PSS)
        case (.rsa(let key), .ps384): return key.isValidSignature(.init(rawRepresentation: signature), for: SHA384.hash(data: input), padding: .PSS)
        case (.rsa(let key), .ps512): return key.isValidSignature(.init(rawRepresentation: signature), for: SHA512.hash(data: input), padding: .PSS)
        case (.p256(let key), .es256):
            guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(signature, for: SHA256.hash(data: input))
        case (.p384(let key), .es384):
            guard let signature = try? P384.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(signature, for: SHA384.hash(data: input))
        case (.p521(let key), .es512):
            guard let signature = try? P521.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(signature, for: SHA512.hash(data: input))
        case (.ed25519(let key), .edDSA):
            return key.isValidSignature(Data(signature), for: Data(input))
        default:
            return false
        }
    }

    /// The RFC 7638 thumbprint (SHA-256 over the required members in lexical order),
    /// base64url-encoded: what DPoP's `jkt` and `cnf.jkt` carry.
    public var thumbprint: String {
        let required: [String]
        switch keyType {
        case "RSA": required = ["e", "kty", "n"]
        case "EC": required = ["crv", "kty", "x", "y"]
        default: required = ["crv", "kty", "x"]
        }
        let json = "{" + required.map { name in "\"\(name)\":\"\(members[name]?.stringValue ?? "")\"" }.joined(separator: ",") + "}"
        return Base64URL.encode(Array(SHA256.hash(data: Data(json.utf8))))
    }

    /// The JWK as a JSON object (public members only).
    public var jsonObject: [String: JSONValue] { members }

    /// Two keys are equal when their public members are.
    public static func == (lhs: JSONWebKey, rhs: JSONWebKey) -> Bool { lhs.members == rhs.members }

    /// Hashes the public members.
    public func hash(into hasher: inout Hasher) { hasher.combine(members) }

    /// Type, curve and id; never key material.
    public var description: String {
        "JSONWebKey(\(keyType)\(curve.map { " \($0)" } ?? "")\(keyID.map { ", kid: \($0)" } ?? ""))"
    }
}

/// A JWK set (RFC 7517 §5), as a `jwks_uri` serves it.
public struct JSONWebKeySet: Sendable {
    /// The usable keys, in document order.
    public let keys: [JSONWebKey]
    /// How many keys of the document were skipped (unsupported type or curve, malformed).
    public let skippedCount: Int

    /// The largest document accepted.
    public static let maximumSize = 512 * 1024
    /// The most keys accepted.
    public static let maximumKeys = 100

    /// Creates a set from keys.
    public init(keys: [JSONWebKey]) {
        self.keys = keys
        skippedCount = 0
    }

    /// Parses a JWK set document. Keys this library cannot use (an encryption key of an
    /// unsupported type, say) are skipped, not fatal.
    ///
    /// - Throws: ``JOSEError/Reason/malformed`` when the document is not a JSON object with
    ///   a `keys` array, is larger than ``maximumSize`` or has more than ``maximumKeys`` keys;
    ///   ``JOSEError/Reason/duplicateMember`` when an object names a member twice.
    public init(data: Data) throws(JOSEError) {
        guard data.count <= Self.maximumSize else { throw JOSEError(.malformed, "The JWK set is too large.") }
        let object = try JOSEJSON.object(data, what: "JWK set")
        guard let entries = object["keys"]?.arrayValue else { throw JOSEError(.malformed, "The JWK set has no keys array.") }
        guard entries.count <= Self.maximumKeys else { throw JOSEError(.malformed, "The JWK set has too many keys.") }
        var keys: [JSONWebKey] = []
        var skipped = 0
        for entry in entries {
            if let object = entry.objectValue, let key = try? JSONWebKey(object) {
                keys.append(key)
            } else {
                skipped += 1
            }
        }
        self.keys = keys
        skippedCount = skipped
    }

    /// The keys that may verify a token signed with `algorithm` and naming `keyID`: with a
    /// `kid`, the keys with that id; without, every key that fits.
    public func candidates(for algorithm: JWSAlgorithm, keyID: String?) -> [JSONWebKey] {
        keys.filter { key in Self.isCandidate(key, for: algorithm, keyID: keyID) }
    }

    /// Whether `key` is one of ``candidates(for:keyID:)``.
    package static func isCandidate(_ key: JSONWebKey, for algorithm: JWSAlgorithm, keyID: String?) -> Bool {
        if let keyID, key.keyID != keyID { return false }
        return key.canVerify(algorithm)
    }

    /// The set as a JSON document.
    public var jsonData: Data {
        let document: JSONValue = .object(["keys": .array(keys.map { .object($0.members) })])
        return Data(document.description.utf8)
    }
}

/// Strict JSON for JOSE documents, with ``JOSEError``s.
package enum JOSEJSON {
    /// Checks that `bytes` is a JSON object exactly as ``object(_:what:)`` does (the same
    /// errors for the same input), and hands the members named `names` to `found` by their
    /// index in `names`, in one pass that builds nothing else.
    ///
    /// - Returns: the whole object when the one-pass reader left the document to the full
    ///   parser (an escaped or non-ASCII member name, very many members); `found` has then
    ///   been called with the object's values. `nil` otherwise.
    package static func members(
        _ bytes: some ContiguousBytes, named names: JSONMemberNames, what: String, found: (Int, consuming JSONValue) -> Void
    ) throws(JOSEError) -> [String: JSONValue]? {
        let scanned: Result<Bool, StrictJSON.Failure> = bytes.withUnsafeBytes { document in
            do throws(StrictJSON.Failure) {
                return .success(try StrictJSON.scanObject(document, select: names.slot(of:), found: found))
            } catch {
                return .failure(error)
            }
        }
        switch scanned {
        case .success(true):
            return nil
        case .success(false):
            let object = try Self.object(bytes, what: what)
            for (slot, name) in names.names.enumerated() {
                if let value = object[name.description] { found(slot, value) }
            }
            return object
        case .failure(let failure):
            throw Self.error(failure, what: what)
        }
    }

    private static func error(_ failure: StrictJSON.Failure, what: String) -> JOSEError {
        if case .duplicateMember(let name) = failure {
            return JOSEError(.duplicateMember, "The \(what) names the member \(name) more than once.")
        }
        return JOSEError(.malformed, "The \(what) is not a JSON object.")
    }

    package static func object(_ bytes: some ContiguousBytes, what: String) throws(JOSEError) -> [String: JSONValue] {
        do {
            return try StrictJSON.parseObject(bytes)
        } catch {
            throw Self.error(error, what: what)
        }
    }
}

/// The member names a one-pass read looks for (``JOSEJSON/members(_:named:what:found:)``),
/// kept ready for its lookup, which runs for every member of every token: each name's
/// length and first eight bytes as one integer, so telling names apart is mostly one
/// integer comparison. Made once, as a `static let`.
package struct JSONMemberNames: Sendable, ExpressibleByArrayLiteral {
    /// The names, in slot order.
    package let names: [StaticString]
    private let keys: [(count: Int, prefix: UInt64)]

    /// The names, in slot order (ASCII, as JOSE member names are).
    package init(arrayLiteral names: StaticString...) {
        self.names = names
        keys = names.map { name in
            (name.utf8CodeUnitCount, Self.prefix(UnsafeRawPointer(name.utf8Start), count: name.utf8CodeUnitCount))
        }
    }

    /// The first eight bytes (fewer when shorter, zero-padded) as one integer.
    @inline(__always)
    private static func prefix(_ bytes: UnsafeRawPointer, count: Int) -> UInt64 {
        if count >= 8 { return bytes.loadUnaligned(as: UInt64.self) }
        var value: UInt64 = 0
        for index in 0..<count { value |= UInt64(bytes.load(fromByteOffset: index, as: UInt8.self)) << (8 * index) }
        return value
    }

    /// The slot of the name spelled by `bytes`, if it is one of ``names``.
    package func slot(of bytes: UnsafeRawBufferPointer) -> Int? {
        guard let start = bytes.baseAddress else {
            return keys.firstIndex { $0.count == 0 }
        }
        let count = bytes.count
        let prefix = Self.prefix(start, count: count)
        for (slot, key) in keys.enumerated() where key.count == count && key.prefix == prefix {
            if count <= 8 || StrictJSON.equalBytes(names[slot].utf8Start + 8, start + 8, count: count - 8) { return slot }
        }
        return nil
    }
}
