import Crypto
import Foundation
import OAuth2Internals

/// Client registrations in a ``FileTokenStore``: one registration document
/// (`RegistrationDocument`, JSON of its own kind) per registration, in the subdirectory
/// `registrations` (mode 0700, made on the first save), named after the issuer's host, the
/// client id and a hash of both. Written as session documents are — a temporary file
/// `fsync`ed and renamed, mode 0600, under the document's lock file — and encrypted with
/// the store's key when it has one (the ciphertext bound to `registrations/<name>`).
extension FileTokenStore: RegistrationStore {
    /// The registration of `clientID` at `issuer`, or `nil`.
    ///
    /// A registration that an earlier version kept as a session document (account
    /// `.registration`) is written as a registration document here, and the old document
    /// removed.
    ///
    /// - Throws: ``TokenStoreError`` as ``load(_:)`` does; ``TokenStoreError/Code/conflict``
    ///   when the document holds another registration.
    public func loadRegistration(issuer: String, clientID: String) async throws -> ClientRegistration? {
        try await LegacyRegistrationRecord.load(
            issuer: issuer, clientID: clientID, from: self,
            read: { try await self.readRegistration(issuer: issuer, clientID: clientID) },
            save: { try await self.saveRegistration($0, issuer: issuer) })
    }

    /// Writes `registration` atomically and durably, keeping the members of the previous
    /// document this version does not know.
    ///
    /// - Throws: ``TokenStoreError`` as ``save(_:)`` does.
    public func saveRegistration(_ registration: ClientRegistration, issuer: String) async throws {
        let path = registrationPath(issuer: issuer, clientID: registration.clientID)
        try await BlockingIO.run { [directoryPath, registrationsPath] in
            try PosixFile.makeDirectory(registrationsPath)
            try PosixFile.syncDirectory(directoryPath)
        }
        try await locks.lock(writeLockPath(path)).withLock {
            try await BlockingIO.run {
                var document = RegistrationDocument(issuer: issuer, registration: registration)
                var envelope: [String: JSONValue] = [:]
                if let file = try self.read(path, as: RegistrationDocument.self) {
                    switch file.content {
                    case .corrupt:
                        _ = try self.moveAside(path)
                    case .document(let existing, let outer):
                        guard existing.issuer == issuer, existing.clientID == registration.clientID else {
                            throw TokenStoreError(.conflict, "the registration document of \(registration.clientID) holds another one", path: path)
                        }
                        document = existing.replacing(registration, at: Date())
                        envelope = outer
                    }
                }
                try PosixFile.replace(path, with: try self.encode(document, envelope: envelope, path: path))
            }
        }
    }

    /// Removes the registration of `clientID` at `issuer` (and a document of an earlier
    /// version); a missing one is not an error.
    ///
    /// - Throws: ``TokenStoreError/Code/io`` when a file cannot be removed.
    public func removeRegistration(issuer: String, clientID: String) async throws {
        let path = registrationPath(issuer: issuer, clientID: clientID)
        try await locks.lock(writeLockPath(path)).withLock {
            try await BlockingIO.run { try PosixFile.remove(path) }
        }
        try await remove(LegacyRegistrationRecord.key(issuer: issuer, clientID: clientID))
    }

    /// The client ids with a registration at `issuer`, sorted, read from the documents;
    /// documents of an earlier version among them become registration documents.
    ///
    /// - Throws: the first ``TokenStoreError`` a document gives, as ``list()`` does.
    public func registeredClientIDs(issuer: String) async throws -> [String] {
        for clientID in try await LegacyRegistrationRecord.clientIDs(issuer: issuer, in: self) {
            _ = try await loadRegistration(issuer: issuer, clientID: clientID)
        }
        var clientIDs: [String] = []
        for (name, document) in try await registrationDocuments() where document.issuer == issuer {
            if Self.registrationFileName(issuer: document.issuer, clientID: document.clientID) == name {
                clientIDs.append(document.clientID)
            }
        }
        return clientIDs.sorted()
    }

    // MARK: - Documents

    /// The name of the registration document of `clientID` at `issuer`: a slug of the
    /// issuer's host and the client id, and 16 hex digits of a SHA-256 of both.
    static func registrationFileName(issuer: String, clientID: String) -> String {
        var hasher = SHA256()
        for part in ["registration", issuer, clientID] {
            hasher.update(data: Data("\(part.utf8.count):\(part);".utf8))
        }
        let hash = hasher.finalize().prefix(8).map { String(format: "%02x", $0) }.joined()
        let host = URLComponents(string: issuer)?.host ?? issuer
        let parts = [host, clientID].map(slug).filter { !$0.isEmpty }
        return (parts + [hash]).joined(separator: "-") + ".json"
    }

    /// The path of the registration document of `clientID` at `issuer`.
    func registrationPath(issuer: String, clientID: String) -> String {
        registrationsPath + "/" + Self.registrationFileName(issuer: issuer, clientID: clientID)
    }

    /// The registration document of `clientID` at `issuer`, or `nil`.
    private func readRegistration(issuer: String, clientID: String) async throws -> ClientRegistration? {
        let path = registrationPath(issuer: issuer, clientID: clientID)
        guard let file = try await readDocument(path, as: RegistrationDocument.self),
            case .document(let document, _) = file.content
        else { return nil }
        guard document.issuer == issuer, document.clientID == clientID else {
            throw TokenStoreError(.conflict, "the registration document of \(clientID) holds another one", path: path)
        }
        if document.isLegacy || file.isUnbound {
            try? await rewrite(path, as: RegistrationDocument.self, ifStill: file.bytes)
        }
        return document.registration
    }

    /// The names of the registration documents, sorted.
    private func registrationDocumentNames() async throws -> [String] {
        try await BlockingIO.run { [registrationsPath] in
            guard try PosixFile.permissions(registrationsPath) != nil else { return [] }
            return try PosixFile.list(registrationsPath).filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
        }
    }

    /// Every registration document, by file name.
    private func registrationDocuments() async throws -> [(String, RegistrationDocument)] {
        var documents: [(String, RegistrationDocument)] = []
        for name in try await registrationDocumentNames() {
            guard let file = try await readDocument(registrationsPath + "/" + name, as: RegistrationDocument.self),
                case .document(let document, _) = file.content
            else { continue }
            documents.append((name, document))
        }
        return documents
    }

    /// ``encryptPlainDocuments()`` for the registration documents.
    func encryptPlainRegistrationDocuments() async throws -> Int {
        guard cipher != nil else { return 0 }
        var count = 0
        for name in try await registrationDocumentNames() {
            let path = registrationsPath + "/" + name
            let encrypted = try await locks.lock(writeLockPath(path)).withLock {
                try await BlockingIO.run { () -> Bool in
                    guard let file = try self.read(path, as: RegistrationDocument.self, acceptPlain: true), file.isPlain,
                        case .document(let document, let envelope) = file.content,
                        Self.registrationFileName(issuer: document.issuer, clientID: document.clientID) == name
                    else { return false }
                    try PosixFile.replace(path, with: try self.encode(document, envelope: envelope, path: path))
                    return true
                }
            }
            if encrypted { count += 1 }
        }
        return count
    }
}

/// A document kind a ``FileTokenStore`` reads and writes.
protocol FileDocument: Sendable {
    /// Reads a document; throws ``TokenStoreError``.
    init(data: Data) throws
    /// The document as JSON.
    func encoded() throws -> Data
    /// The schema version this library writes.
    static var currentVersion: Int { get }
}

extension TokenDocument: FileDocument {}
extension RegistrationDocument: FileDocument {}
