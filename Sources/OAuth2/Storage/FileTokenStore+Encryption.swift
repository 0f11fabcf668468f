import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension FileTokenStore {
    /// How a ``FileTokenStore`` encrypts its documents: AES-256-GCM with a 32-byte key.
    ///
    /// An encrypted document is a small JSON object —
    /// `{"version": 2, "encrypted": {"alg": "A256GCM", "kid": "…", "data": "…"}}` — whose
    /// `data` is the base64 of nonce, ciphertext and tag of the plain document; `kid`
    /// names the key (a hash of it), so that a document sealed with another key is told
    /// apart from a damaged one.
    public struct Encryption: Sendable {
        enum Source: Sendable {
            case keyFile(String)
            case key(Data)
        }

        let source: Source

        /// The key kept in the file at `url`: exactly 32 bytes, readable by its owner only.
        /// When the file does not exist, the store creates it (mode 0600, in a directory it
        /// creates with mode 0700 if needed) with 32 random bytes.
        public static func keyFile(_ url: URL) -> Encryption {
            Encryption(source: .keyFile(url.path))
        }

        /// The given 32-byte key — from a keyring (`SecretServiceTokenStore.encryptionKey`),
        /// a KMS, or an environment secret.
        public static func key(_ bytes: Data) -> Encryption {
            Encryption(source: .key(bytes))
        }
    }
}

/// Seals and opens documents with one key.
struct DocumentCipher: Sendable {
    static let algorithm = "A256GCM"
    /// Binds every ciphertext to its purpose.
    private static let associatedData = Data("swift-oauth2 token document".utf8)

    let key: SymmetricKey
    /// A public name for the key: 16 hex digits of a hash of it.
    let keyID: String

    init(_ encryption: FileTokenStore.Encryption) throws {
        let bytes: Data
        switch encryption.source {
        case .key(let supplied):
            bytes = supplied
        case .keyFile(let path):
            bytes = try Self.loadOrCreateKeyFile(path)
        }
        guard bytes.count == 32 else {
            throw TokenStoreError(.invalidEncryptionKey, "an encryption key must be 32 bytes, not \(bytes.count)")
        }
        self.key = SymmetricKey(data: bytes)
        var hasher = SHA256()
        hasher.update(data: Data("swift-oauth2 key id\n".utf8))
        hasher.update(data: bytes)
        self.keyID = hasher.finalize().prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// The `encrypted` member for `plaintext`.
    func seal(_ plaintext: Data) throws -> JSONValue {
        let box: AES.GCM.SealedBox
        do {
            box = try AES.GCM.seal(plaintext, using: key, authenticating: Self.associatedData)
        } catch {
            throw TokenStoreError(.io, "encryption failed")
        }
        guard let combined = box.combined else { throw TokenStoreError(.io, "encryption failed") }
        return .object([
            "alg": .string(Self.algorithm),
            "kid": .string(keyID),
            "data": .string(combined.base64EncodedString()),
        ])
    }

    /// The plain document inside an `encrypted` member.
    ///
    /// - Throws: ``TokenStoreError/Code/wrongKey`` when another key sealed it,
    ///   ``TokenStoreError/Code/unsupportedVersion`` for an unknown algorithm, and
    ///   ``TokenStoreError/Code/corrupt`` when it is malformed or fails authentication.
    func open(_ member: JSONValue) throws -> Data {
        guard let object = member.objectValue, let algorithm = object["alg"]?.stringValue,
            let kid = object["kid"]?.stringValue, let text = object["data"]?.stringValue
        else { throw TokenStoreError.corrupt("\"encrypted\" lacks alg, kid or data") }
        guard algorithm == Self.algorithm else {
            throw TokenStoreError(.unsupportedVersion, "encrypted with \"\(algorithm.prefix(20))\", which this version cannot open")
        }
        guard kid == keyID else {
            throw TokenStoreError(.wrongKey, "encrypted with another key (kid \(kid.prefix(16)), this store's is \(keyID))")
        }
        guard let combined = Data(base64Encoded: text), let box = try? AES.GCM.SealedBox(combined: combined) else {
            throw TokenStoreError.corrupt("\"encrypted.data\" is not a sealed box")
        }
        guard let plaintext = try? AES.GCM.open(box, using: key, authenticating: Self.associatedData) else {
            throw TokenStoreError.corrupt("authentication failed: the ciphertext was altered")
        }
        return plaintext
    }

    /// Reads the key file at `path`, or creates it with 32 random bytes. Two processes that
    /// create it at once end with the same key: the file appears whole (`link(2)` of a
    /// finished temporary file) or not at all.
    static func loadOrCreateKeyFile(_ path: String) throws -> Data {
        if let existing = try readKeyFile(path) { return existing }
        let directory = (path as NSString).deletingLastPathComponent
        try PosixFile.makeDirectory(directory)
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        let temporary = PosixFile.temporaryPath(for: path)
        try PosixFile.writeNew(temporary, bytes)
        defer { unlink(temporary) }
        if link(temporary, path) != 0 {
            let code = errno
            if code == EEXIST, let existing = try readKeyFile(path) { return existing }
            throw TokenStoreError.io("link", path: path, errno: code)
        }
        try PosixFile.syncDirectory(directory)
        return bytes
    }

    private static func readKeyFile(_ path: String) throws -> Data? {
        guard let mode = try PosixFile.permissions(path) else { return nil }
        guard mode & 0o077 == 0 else {
            throw TokenStoreError(
                .invalidEncryptionKey, "the key file is accessible to other users (mode \(String(mode, radix: 8))); chmod 600 it",
                path: path)
        }
        guard let (bytes, _) = try PosixFile.readPrefix(path, limit: 64) else { return nil }
        guard bytes.count == 32 else {
            throw TokenStoreError(.invalidEncryptionKey, "the key file must hold exactly 32 bytes", path: path)
        }
        return bytes
    }
}
