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
    /// `{"version": 2, "encrypted": {"alg": "A256GCM", "kid": "…", "binding": "record", "data": "…"}}`
    /// — whose `data` is the base64 of nonce, ciphertext and tag of the plain document; `kid`
    /// names the key (a hash of it), so that a document sealed with another key is told
    /// apart from a damaged one. The ciphertext is bound to its record: the associated data
    /// holds the key's id and the document's file name (which the session key determines),
    /// so a ciphertext copied over another record, or into another store, does not open.
    /// Documents sealed before that binding existed (no `binding` member) still open, and
    /// are rewritten bound once they have loaded.
    ///
    /// A store that encrypts never reads a plain document: it throws
    /// ``TokenStoreError/Code/unencrypted`` and leaves the file alone (someone who can write
    /// to the directory could otherwise plant tokens of their choosing). To encrypt the
    /// documents of a store that was plain until now, call
    /// ``FileTokenStore/encryptPlainDocuments()`` once.
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
    /// The associated data of documents sealed before ciphertexts were bound to their record.
    private static let unboundAssociatedData = Data("swift-oauth2 token document".utf8)
    /// The `binding` member of a ciphertext bound to its record.
    static let recordBinding = "record"

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

    /// What a ciphertext of the record named `record` (a document's file name) authenticates.
    private func associatedData(record: String) -> Data {
        Data("swift-oauth2 token document\nkid=\(keyID)\nrecord=\(record)".utf8)
    }

    /// The `encrypted` member for `plaintext`, bound to the record named `record`.
    func seal(_ plaintext: Data, record: String) throws -> JSONValue {
        let box: AES.GCM.SealedBox
        do {
            box = try AES.GCM.seal(plaintext, using: key, authenticating: associatedData(record: record))
        } catch {
            throw TokenStoreError(.io, "encryption failed")
        }
        guard let combined = box.combined else { throw TokenStoreError(.io, "encryption failed") }
        return .object([
            "alg": .string(Self.algorithm),
            "kid": .string(keyID),
            "binding": .string(Self.recordBinding),
            "data": .string(combined.base64EncodedString()),
        ])
    }

    /// The plain document inside an `encrypted` member of the record named `record`, and
    /// whether it was sealed before binding (and should be sealed again).
    ///
    /// - Throws: ``TokenStoreError/Code/wrongKey`` when another key sealed it,
    ///   ``TokenStoreError/Code/unsupportedVersion`` for an unknown algorithm or binding, and
    ///   ``TokenStoreError/Code/corrupt`` when it is malformed or fails authentication (as a
    ///   ciphertext of another record does).
    func open(_ member: JSONValue, record: String) throws -> (plaintext: Data, unbound: Bool) {
        guard let object = member.objectValue, let algorithm = object["alg"]?.stringValue,
            let kid = object["kid"]?.stringValue, let text = object["data"]?.stringValue
        else { throw TokenStoreError.corrupt("\"encrypted\" lacks alg, kid or data") }
        let binding = object["binding"]?.stringValue
        if let binding, binding != Self.recordBinding {
            throw TokenStoreError(.unsupportedVersion, "bound as \"\(binding.prefix(20))\", which this version cannot open")
        }
        guard algorithm == Self.algorithm else {
            throw TokenStoreError(.unsupportedVersion, "encrypted with \"\(algorithm.prefix(20))\", which this version cannot open")
        }
        guard kid == keyID else {
            throw TokenStoreError(.wrongKey, "encrypted with another key (kid \(kid.prefix(16)), this store's is \(keyID))")
        }
        guard let combined = Data(base64Encoded: text), let box = try? AES.GCM.SealedBox(combined: combined) else {
            throw TokenStoreError.corrupt("\"encrypted.data\" is not a sealed box")
        }
        let associatedData = binding == nil ? Self.unboundAssociatedData : associatedData(record: record)
        guard let plaintext = try? AES.GCM.open(box, using: key, authenticating: associatedData) else {
            throw TokenStoreError.corrupt("authentication failed: the ciphertext was altered, or belongs to another record")
        }
        return (plaintext, binding == nil)
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
