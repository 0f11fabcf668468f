import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import OAuth2Internals

/// A ``TokenStore`` that keeps one JSON document per session in a private directory, and
/// that several processes can share.
///
/// - **Layout**: the directory is created with mode 0700, each document with mode 0600,
///   named after its key (``fileName(for:)``: a readable slug and a hash); the full key is
///   inside the document. The format is the library's versioned token document (JSON).
///   Client registrations (``RegistrationStore``) are documents of their own kind in the
///   subdirectory `registrations` (mode 0700), written and encrypted the same way.
/// - **Atomic, durable writes**: a document is written to a temporary file that is
///   `fsync`ed and renamed over the old one, then the directory is `fsync`ed. A crash at
///   any moment leaves the previous document or the new one, never a mixture, an empty
///   file or an older one. Temporary files of writers that died are removed when a store
///   opens the directory.
/// - **Shared by processes**: writers of one document take its lock file (`flock`) for the
///   moment of the write, and ``withExclusiveAccess(to:_:)`` holds a second lock file per
///   key for as long as its body runs — across processes and across tasks of one
///   process. Readers need no lock.
/// - **Encryption** (optional): AES-256-GCM with a key from a key file or from the caller
///   (``Encryption``).
/// - **Versions**: documents of the previous schema load and are rewritten in the current
///   one after they loaded; members this version does not know are kept.
/// - **Nothing lost**: a document that cannot be read makes ``load(_:)`` throw
///   ``TokenStoreError/Code/corrupt`` after moving it aside (``TokenStoreError/preservedPath``,
///   `<name>.json.corrupt-<time>`); ``save(_:)`` moves it aside too before writing. A
///   document encrypted with another key or written by a newer, incompatible version is
///   never replaced: ``save(_:)`` throws instead.
public final class FileTokenStore: TokenStore {
    /// The directory that holds the documents.
    public let directory: URL
    let directoryPath: String
    /// The subdirectory of the registration documents (``RegistrationStore``).
    let registrationsPath: String
    let cipher: DocumentCipher?
    let locks = LockTable()

    /// Opens (creating it if needed, mode 0700) the store in `directory`.
    ///
    /// A directory that exists keeps its permissions (make it 0700 if others can read it).
    /// Removes temporary files that writers left when they died. With `encryption`, every
    /// document is encrypted and bound to its record, and a plain document is refused
    /// (``TokenStoreError/Code/unencrypted``) until ``encryptPlainDocuments()`` adopts it.
    ///
    /// - Throws: ``TokenStoreError`` — ``TokenStoreError/Code/io`` when the directory
    ///   cannot be created, ``TokenStoreError/Code/invalidEncryptionKey`` when the key is
    ///   not 32 bytes or the key file is accessible to others.
    public init(directory: URL, encryption: Encryption? = nil) throws {
        self.directory = directory.standardizedFileURL
        self.directoryPath = self.directory.path
        self.registrationsPath = self.directoryPath + "/registrations"
        try PosixFile.makeDirectory(directoryPath)
        self.cipher = try encryption.map(DocumentCipher.init)
        removeAbandonedTemporaryFiles(in: directoryPath)
        removeAbandonedTemporaryFiles(in: registrationsPath)
    }

    /// `true` when the store encrypts what it writes.
    public var isEncrypted: Bool { cipher != nil }

    /// The name of the document that holds `key`: a lowercase slug of account, issuer host
    /// and client ID, and 16 hex digits of a SHA-256 of the full key — for example
    /// `alice-id.example.com-cli-3f9c0d5e2b7a4f18.json`.
    public static func fileName(for key: TokenSessionKey) -> String {
        var hasher = SHA256()
        for part in [key.issuer, key.clientID, key.account] {
            hasher.update(data: Data("\(part.utf8.count):\(part);".utf8))
        }
        let hash = hasher.finalize().prefix(8).map { String(format: "%02x", $0) }.joined()
        let host = URLComponents(string: key.issuer)?.host ?? key.issuer
        let parts = [key.account, host, key.clientID].map(slug).filter { !$0.isEmpty }
        return (parts + [hash]).joined(separator: "-") + ".json"
    }

    /// The file that holds `key`'s document.
    public func fileURL(for key: TokenSessionKey) -> URL {
        directory.appendingPathComponent(Self.fileName(for: key))
    }

    // MARK: - TokenStore

    /// The session stored for `key`, or `nil` when there is none.
    ///
    /// A document in the previous schema version is rewritten in the current one once it
    /// has loaded (if that rewrite fails, the old document stays and loads next time); so
    /// is a document encrypted before ciphertexts were bound to their record.
    ///
    /// - Throws: ``TokenStoreError``: ``TokenStoreError/Code/corrupt`` (the file was moved
    ///   to ``TokenStoreError/preservedPath``; the next load returns `nil`),
    ///   ``TokenStoreError/Code/wrongKey``, ``TokenStoreError/Code/unsupportedVersion``,
    ///   ``TokenStoreError/Code/unencrypted`` (a plain document in a store that encrypts;
    ///   left in place), ``TokenStoreError/Code/conflict`` (the file holds another key), or
    ///   ``TokenStoreError/Code/io``.
    public func load(_ key: TokenSessionKey) async throws -> StoredTokenSession? {
        let path = fileURL(for: key).path
        guard let file = try await readDocument(path), case .document(let document, _) = file.content else { return nil }
        guard document.session.key == key else {
            throw TokenStoreError(.conflict, "the document for \(key) holds \(document.session.key)", path: path)
        }
        if document.isLegacy || file.isUnbound {
            // Only after a successful load; best effort: the old document still loads.
            try? await rewrite(path, ifStill: file.bytes)
        }
        return document.session
    }

    /// Writes `session` under `session.key`, atomically and durably, keeping the members of
    /// the previous document this version does not know.
    ///
    /// - Throws: ``TokenStoreError``: ``TokenStoreError/Code/wrongKey`` or
    ///   ``TokenStoreError/Code/unsupportedVersion`` when the document in place cannot be
    ///   read and must not be lost (remove it first to replace it),
    ///   ``TokenStoreError/Code/unencrypted`` (a plain document where this encrypting store
    ///   would write; left in place),
    ///   ``TokenStoreError/Code/conflict``, or ``TokenStoreError/Code/io`` (the previous
    ///   document is then still in place).
    public func save(_ session: StoredTokenSession) async throws {
        let path = fileURL(for: session.key).path
        try await locks.lock(writeLockPath(path)).withLock {
            try await BlockingIO.run {
                var document = TokenDocument(session: session)
                var envelope: [String: JSONValue] = [:]
                if let file = try self.read(path) {
                    switch file.content {
                    case .corrupt:
                        _ = try self.moveAside(path)
                    case .document(let existing, let outer):
                        guard existing.session.key == session.key else {
                            throw TokenStoreError(
                                .conflict, "the document for \(session.key) holds \(existing.session.key)", path: path)
                        }
                        document = existing
                        document.session = session
                        envelope = outer
                    }
                }
                try PosixFile.replace(path, with: try self.encode(document, envelope: envelope, path: path))
            }
        }
    }

    /// Encrypts, in a store that encrypts, every plain document whose file name matches its
    /// key — the documents of a store that was plain until encryption was turned on,
    /// registration documents (``RegistrationStore``) included. Call it
    /// once, on purpose: until then those documents are refused
    /// (``TokenStoreError/Code/unencrypted``), because a plain file could have been planted.
    ///
    /// - Returns: how many documents were encrypted (0 for a store that does not encrypt).
    /// - Throws: ``TokenStoreError`` as ``load(_:)`` does, for the first document that fails.
    @discardableResult
    public func encryptPlainDocuments() async throws -> Int {
        guard cipher != nil else { return 0 }
        let names = try await BlockingIO.run { [directoryPath] in
            try PosixFile.list(directoryPath).filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
        }
        var count = 0
        for name in names {
            let path = directoryPath + "/" + name
            let encrypted = try await locks.lock(writeLockPath(path)).withLock {
                try await BlockingIO.run { () -> Bool in
                    guard let file = try self.read(path, acceptPlain: true), file.isPlain,
                        case .document(let document, let envelope) = file.content,
                        Self.fileName(for: document.session.key) == name
                    else { return false }
                    try PosixFile.replace(path, with: try self.encode(document, envelope: envelope, path: path))
                    return true
                }
            }
            if encrypted { count += 1 }
        }
        return count + (try await encryptPlainRegistrationDocuments())
    }

    /// Removes the document for `key`, whatever it holds; a missing document is not an error.
    /// Lock files stay: deleting one while another process waits on it would let two
    /// processes in.
    ///
    /// - Throws: ``TokenStoreError/Code/io`` when the file cannot be removed.
    public func remove(_ key: TokenSessionKey) async throws {
        let path = fileURL(for: key).path
        try await locks.lock(writeLockPath(path)).withLock {
            try await BlockingIO.run { try PosixFile.remove(path) }
        }
    }

    /// The keys of every stored session, sorted; read from the documents themselves.
    /// Documents whose name is not the one their key gives are left out.
    ///
    /// - Throws: the first ``TokenStoreError`` a document gives, as ``load(_:)`` does — a
    ///   corrupt document is moved aside first, so the next call lists the others.
    public func list() async throws -> [TokenSessionKey] {
        let names = try await BlockingIO.run { [directoryPath] in
            try PosixFile.list(directoryPath).filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
        }
        var keys: [TokenSessionKey] = []
        for name in names {
            let path = directoryPath + "/" + name
            guard let file = try await readDocument(path), case .document(let document, _) = file.content else { continue }
            if Self.fileName(for: document.session.key) == name { keys.append(document.session.key) }
        }
        return keys.sorted { ($0.issuer, $0.clientID, $0.account) < ($1.issuer, $1.clientID, $1.account) }
    }

    /// Runs `body` holding `key`'s exclusive lock: no other task of this process and no
    /// other process using this directory runs a `withExclusiveAccess` body for the same
    /// key meanwhile. ``load(_:)`` and ``save(_:)`` may be called inside `body`.
    ///
    /// Waiting for another process runs on a dedicated thread; cancelling the task stops
    /// the wait. A process that dies while holding the lock releases it.
    ///
    /// - Throws: ``TokenStoreError/Code/io`` when the lock file cannot be opened,
    ///   `CancellationError`, or what `body` throws.
    public func withExclusiveAccess<T: Sendable>(
        to key: TokenSessionKey, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let path = directoryPath + "/." + Self.fileName(for: key).dropLast(".json".count) + ".access.lock"
        return try await locks.lock(path).withLock(body)
    }

    // MARK: - Reading and writing

    enum Content<Document: FileDocument> {
        case document(Document, envelope: [String: JSONValue])
        case corrupt(TokenStoreError)
    }

    struct File<Document: FileDocument> {
        var bytes: Data
        var content: Content<Document>
        /// A plain document (only read so from a store that encrypts by ``encryptPlainDocuments()``).
        var isPlain = false
        /// Encrypted before ciphertexts were bound to their record: to be sealed again.
        var isUnbound = false
    }

    /// Reads and decodes the file at `path`; `nil` when it does not exist. A corrupt file is
    /// a value, so that the caller can move it aside; other problems throw — a plain
    /// document in a store that encrypts among them, unless `acceptPlain`.
    func read(_ path: String, acceptPlain: Bool = false) throws -> File<TokenDocument>? {
        try read(path, as: TokenDocument.self, acceptPlain: acceptPlain)
    }

    /// ``read(_:acceptPlain:)`` for a document of any kind.
    func read<Document: FileDocument>(
        _ path: String, as kind: Document.Type, acceptPlain: Bool = false
    ) throws -> File<Document>? {
        guard let (bytes, complete) = try PosixFile.readPrefix(path, limit: PosixFile.maximumDocumentSize) else { return nil }
        guard complete else {
            let error = TokenStoreError.corrupt("larger than \(PosixFile.maximumDocumentSize) bytes: not a token document")
            return File(bytes: bytes, content: .corrupt(error))
        }
        guard let object = JSONValue.parseObject(bytes) else {
            return File(bytes: bytes, content: .corrupt(.corrupt("not a JSON object")))
        }
        var file = File<Document>(bytes: bytes, content: .corrupt(.corrupt("unread")))
        var plaintext = bytes
        var envelope: [String: JSONValue] = [:]
        if let encrypted = object["encrypted"] {
            guard let cipher else {
                throw TokenStoreError(.wrongKey, "the document is encrypted and this store has no key", path: path)
            }
            do {
                (plaintext, file.isUnbound) = try cipher.open(encrypted, record: record(path))
            } catch let error as TokenStoreError where error.code == .corrupt {
                file.content = .corrupt(error)
                return file
            } catch let error as TokenStoreError {
                throw error.at(path)
            }
            envelope = object.filter { $0.key != "encrypted" && $0.key != "version" }
        } else if cipher != nil {
            guard acceptPlain else {
                throw TokenStoreError(
                    .unencrypted,
                    "a plain document where this store keeps encrypted ones: not read and left in place (remove it, or adopt plain documents with encryptPlainDocuments())",
                    path: path)
            }
            file.isPlain = true
        }
        do {
            file.content = .document(try Document(data: plaintext), envelope: envelope)
        } catch let error as TokenStoreError where error.code == .corrupt {
            file.content = .corrupt(error)
        } catch let error as TokenStoreError {
            throw error.at(path)
        }
        return file
    }

    /// Reads the document at `path` (`nil` when there is none). A corrupt file is moved
    /// aside and its error thrown; when a writer replaced it meanwhile, it is read again.
    func readDocument(_ path: String) async throws -> File<TokenDocument>? {
        try await readDocument(path, as: TokenDocument.self)
    }

    /// ``readDocument(_:)`` for a document of any kind.
    func readDocument<Document: FileDocument>(_ path: String, as kind: Document.Type) async throws -> File<Document>? {
        for _ in 0..<3 {
            guard let file = try await BlockingIO.run({ try self.read(path, as: kind) }) else { return nil }
            guard case .corrupt(let error) = file.content else { return file }
            guard let kept = try await quarantine(path, ifStill: file.bytes) else { continue }
            throw error.at(path, preserved: kept)
        }
        throw TokenStoreError(.io, "the document kept changing while it was read", path: path)
    }

    /// The bytes to write at `path` for `document`: plain, or sealed (bound to the file's
    /// name) in an envelope that keeps the members `envelope` holds.
    func encode<Document: FileDocument>(_ document: Document, envelope: [String: JSONValue], path: String) throws -> Data {
        let plaintext = try document.encoded()
        guard let cipher else { return plaintext }
        var object = envelope
        object["version"] = .integer(Int64(Document.currentVersion))
        object["encrypted"] = try cipher.seal(plaintext, record: record(path))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(object)
    }

    /// Under the write lock: moves the corrupt file at `path` aside if it still holds
    /// `bytes`. Returns where it went, or `nil` when a writer replaced it meanwhile.
    private func quarantine(_ path: String, ifStill bytes: Data) async throws -> String? {
        try await locks.lock(writeLockPath(path)).withLock {
            try await BlockingIO.run {
                guard try PosixFile.readPrefix(path, limit: PosixFile.maximumDocumentSize)?.data == bytes else { return nil }
                return try self.moveAside(path)
            }
        }
    }

    /// Under the write lock: writes the document at `path` again, in the current version
    /// and with the store's encryption, if the file still holds `bytes`.
    func rewrite(_ path: String, ifStill bytes: Data) async throws {
        try await rewrite(path, as: TokenDocument.self, ifStill: bytes)
    }

    /// ``rewrite(_:ifStill:)`` for a document of any kind.
    func rewrite<Document: FileDocument>(_ path: String, as kind: Document.Type, ifStill bytes: Data) async throws {
        try await locks.lock(writeLockPath(path)).withLock {
            try await BlockingIO.run {
                guard let file = try self.read(path, as: kind), file.bytes == bytes,
                    case .document(let document, let envelope) = file.content
                else { return }
                try PosixFile.replace(path, with: try self.encode(document, envelope: envelope, path: path))
            }
        }
    }

    /// Renames the file at `path` to `<name>.corrupt-<UTC time>-<random>`; returns the new path.
    func moveAside(_ path: String) throws -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let suffix = String(UInt16.random(in: 0...UInt16.max), radix: 16)
        let destination = "\(path).corrupt-\(formatter.string(from: Date()))-\(suffix)"
        try PosixFile.move(path, to: destination)
        return destination
    }

    /// The lock file of the writers of the document at `documentPath`, beside it.
    func writeLockPath(_ documentPath: String) -> String {
        let name = (documentPath as NSString).lastPathComponent
        return (documentPath as NSString).deletingLastPathComponent + "/." + name.dropLast(".json".count) + ".lock"
    }

    /// What an encrypted document at `path` is bound to: its path inside the store's
    /// directory — the file name for a session, `registrations/<name>` for a registration.
    func record(_ path: String) -> String {
        path.hasPrefix(directoryPath + "/") ? String(path.dropFirst(directoryPath.count + 1)) : (path as NSString).lastPathComponent
    }

    /// Removes `.<name>.tmp-<pid>-…` files in `directory` whose writer is gone, or that are
    /// over an hour old (a writer in another PID namespace). Best effort.
    func removeAbandonedTemporaryFiles(in directory: String) {
        guard let names = try? PosixFile.list(directory) else { return }
        for name in names where name.hasPrefix(".") && name.contains(PosixFile.temporaryMarker) {
            let path = directory + "/" + name
            let writerGone = PosixFile.writerPID(ofTemporary: name).map { !PosixFile.processMayExist($0) } ?? false
            if writerGone || (PosixFile.age(path) ?? 0) > 3600 { unlink(path) }
        }
    }

    static func slug(_ text: String) -> String {
        var result = ""
        for scalar in text.lowercased().unicodeScalars {
            if ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "." || scalar == "_" {
                result.unicodeScalars.append(scalar)
            } else if !result.hasSuffix("-") {
                result += "-"
            }
            if result.count >= 32 { break }
        }
        return result.trimmingCharacters(in: CharacterSet(charactersIn: "-."))
    }
}
