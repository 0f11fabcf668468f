import CSecretServiceShim
import Foundation
import OAuth2

/// A `TokenStore` in the desktop keyring — GNOME Keyring, KWallet, KeePassXC or any other
/// Secret Service — through libsecret.
///
/// libsecret is loaded when first needed (`dlopen("libsecret-1.so.0")`), so programs build
/// without its headers and run where it is missing: there, and where no Secret Service
/// answers on the session bus, ``checkAvailability()`` throws
/// `TokenStoreError.Code.unavailable` and a program uses a `FileTokenStore` instead:
///
/// ```swift
/// let store: any TokenStore = await SecretServiceTokenStore.isAvailable()
///     ? SecretServiceTokenStore()
///     : try FileTokenStore(directory: configDirectory.appendingPathComponent("tokens"))
/// ```
///
/// Each session is one item of schema `io.github.swift-oauth2.Session` with the attributes
/// `issuer`, `client_id` and `account`, labelled `swift-oauth2: account@client (issuer)`;
/// its secret is the session's `TokenDocument` (JSON). ``list()`` reads the attributes,
/// not the secrets. Client registrations (`RegistrationStore`) are items of their own
/// schema, `io.github.swift-oauth2.Registration`, with the attributes `issuer`, `client_id`
/// and `kind` (`registration`); their secret is the registration's document (JSON).
///
/// The keyring has no lock that processes share, so ``withExclusiveAccess(to:_:)`` and
/// writes take lock files in ``lockDirectory``, as `FileTokenStore` does.
public final class SecretServiceTokenStore: TokenStore {
    /// The collection items are written to; `nil` for the default one (usually "login").
    public let collection: String?
    /// Where the lock files are: `$XDG_RUNTIME_DIR/swift-oauth2`, else
    /// `~/.cache/swift-oauth2/locks`, unless given.
    public let lockDirectory: URL
    let libraryName: String
    let locks = LockTable()

    /// The file name libsecret is loaded from by default.
    public static let defaultLibrary = "libsecret-1.so.0"

    /// A store in `collection` (`nil`: the default collection; `"session"`: one that lasts
    /// until logout), with lock files in `lockDirectory`.
    ///
    /// Nothing is loaded or contacted until the first call. `library` names the libsecret
    /// to load, for systems that install it under another name.
    public init(collection: String? = nil, lockDirectory: URL? = nil, library: String = defaultLibrary) {
        self.collection = collection
        self.libraryName = library
        if let lockDirectory {
            self.lockDirectory = lockDirectory
        } else if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            self.lockDirectory = URL(fileURLWithPath: runtime).appendingPathComponent("swift-oauth2")
        } else {
            self.lockDirectory = FileManager.default.homeDirectoryForCurrentUser
                .appendingPathComponent(".cache/swift-oauth2/locks")
        }
    }

    // MARK: - Availability

    /// Checks that libsecret loads and that a Secret Service answers on the session bus.
    ///
    /// Available does not mean unlocked: with a locked default collection and no desktop to
    /// ask for its password, writes fail with `TokenStoreError.Code.backend`.
    ///
    /// - Throws: `TokenStoreError.Code.unavailable` saying which is missing — the
    ///   library, a function of it, the session bus, the service — or
    ///   `TokenStoreError.Code.backend` when the service answers with an error.
    public func checkAvailability() async throws {
        let library = try LibSecret.load(libraryName)
        try await library.call { lib in
            let attributes = lib.attributes([])
            defer { lib.releaseAttributes(attributes) }
            var error: UnsafeMutablePointer<OAuth2GError>?
            let list = lib.searchv(lib.sessionSchema, attributes, 0, nil, &error)
            if let list { lib.freeList(list) }
            if error != nil { throw lib.takeError(error, "asking the Secret Service") }
        }
    }

    /// `true` when ``checkAvailability()`` succeeds.
    public func isAvailable() async -> Bool {
        (try? await checkAvailability()) != nil
    }

    /// `true` when libsecret (`library`) loads and a Secret Service answers.
    public static func isAvailable(library: String = defaultLibrary) async -> Bool {
        await SecretServiceTokenStore(library: library).isAvailable()
    }

    // MARK: - TokenStore

    /// The session stored for `key`, or `nil`.
    ///
    /// A document of the previous schema version is written back in the current one once
    /// it has loaded (best effort).
    ///
    /// - Throws: `TokenStoreError`: `TokenStoreError.Code.unavailable`,
    ///   `TokenStoreError.Code.backend` (a locked collection…),
    ///   `TokenStoreError.Code.corrupt` or `TokenStoreError.Code.unsupportedVersion`
    ///   for an unreadable secret (left in place), `TokenStoreError.Code.conflict`.
    public func load(_ key: TokenSessionKey) async throws -> StoredTokenSession? {
        guard let data = try await lookup(key) else { return nil }
        let document = try TokenDocument(data: data)
        guard document.session.key == key else {
            throw TokenStoreError(.conflict, "the keyring item for \(key) holds \(document.session.key)")
        }
        if document.isLegacy {
            try? await locks.lock(writeLockPath(key)).withLock {
                // Written back only if no writer replaced it meanwhile.
                if try await lookup(key) == data { try await store(document) }
            }
        }
        return document.session
    }

    /// Writes `session`, replacing the item of its key and keeping the members of the
    /// previous document this version does not know (an unreadable previous secret is
    /// replaced).
    ///
    /// - Throws: `TokenStoreError`: `TokenStoreError.Code.unavailable`,
    ///   `TokenStoreError.Code.backend`, `TokenStoreError.Code.unsupportedVersion`
    ///   when the item in place comes from a newer, incompatible version,
    ///   `TokenStoreError.Code.io` when the lock file cannot be made.
    public func save(_ session: StoredTokenSession) async throws {
        try await locks.lock(writeLockPath(session.key)).withLock {
            var document = TokenDocument(session: session)
            if let existing = try await lookup(session.key) {
                do {
                    document = try TokenDocument(data: existing)
                    document.session = session
                } catch let error as TokenStoreError where error.code == .corrupt {
                    document = TokenDocument(session: session)
                }
            }
            try await store(document)
        }
    }

    /// Deletes the item for `key`; a missing item is not an error.
    ///
    /// - Throws: `TokenStoreError.Code.unavailable`, `TokenStoreError.Code.backend`,
    ///   `TokenStoreError.Code.io` when the lock file cannot be made.
    public func remove(_ key: TokenSessionKey) async throws {
        let library = try LibSecret.load(libraryName)
        try await locks.lock(writeLockPath(key)).withLock {
            try await library.call { lib in
                let attributes = lib.attributes(Self.attributes(key))
                defer { lib.releaseAttributes(attributes) }
                var error: UnsafeMutablePointer<OAuth2GError>?
                _ = lib.clearv(lib.sessionSchema, attributes, nil, &error)  // FALSE without error: nothing to remove
                if error != nil { throw lib.takeError(error, "removing an item") }
            }
        }
    }

    /// The keys of every session in the keyring (every collection), sorted.
    ///
    /// - Throws: `TokenStoreError.Code.unavailable`, `TokenStoreError.Code.backend`.
    public func list() async throws -> [TokenSessionKey] {
        let library = try LibSecret.load(libraryName)
        let keys: [TokenSessionKey] = try await library.call { lib in
            let attributes = lib.attributes([])
            defer { lib.releaseAttributes(attributes) }
            var error: UnsafeMutablePointer<OAuth2GError>?
            let searchAll: Int32 = 1 << 1  // SECRET_SEARCH_ALL
            let list = lib.searchv(lib.sessionSchema, attributes, searchAll, nil, &error)
            if error != nil {
                if let list { lib.freeList(list) }
                throw lib.takeError(error, "listing items")
            }
            guard let list else { return [] }
            defer { lib.freeList(list) }
            var keys: [TokenSessionKey] = []
            var node: UnsafeMutablePointer<OAuth2GList>? = list
            while let current = node {
                if let item = current.pointee.data, let table = lib.retrievableAttributes(item) {
                    if let issuer = lib.attribute(table, "issuer"), let clientID = lib.attribute(table, "client_id"),
                        let account = lib.attribute(table, "account")
                    {
                        keys.append(TokenSessionKey(issuer: issuer, clientID: clientID, account: account))
                    }
                    lib.releaseAttributes(table)
                }
                node = current.pointee.next
            }
            return keys
        }
        return Set(keys).sorted { ($0.issuer, $0.clientID, $0.account) < ($1.issuer, $1.clientID, $1.account) }
    }

    /// Runs `body` holding `key`'s exclusive lock, shared by the tasks of this process and
    /// by every process of this user that uses the same ``lockDirectory``.
    ///
    /// - Throws: `TokenStoreError.Code.io` when the lock file cannot be made,
    ///   `CancellationError`, or what `body` throws.
    public func withExclusiveAccess<T: Sendable>(
        to key: TokenSessionKey, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try makeLockDirectory()
        return try await locks.lock(lockPath(key, "access")).withLock(body)
    }

    // MARK: - Encryption keys for file stores

    /// The 32-byte key named `name` from the keyring, created (random) and stored on first
    /// use: a `FileTokenStore` can then encrypt its files with a key that never touches
    /// the disk — `FileTokenStore(directory: dir, encryption: .key(try await keyring.encryptionKey()))`.
    ///
    /// - Throws: `TokenStoreError.Code.unavailable`, `TokenStoreError.Code.backend`,
    ///   `TokenStoreError.Code.invalidEncryptionKey` when the stored key is not 32 bytes
    ///   of base64.
    public func encryptionKey(named name: String = "file-token-store") async throws -> Data {
        try makeLockDirectory()
        let library = try LibSecret.load(libraryName)
        let collection = self.collection
        let lockPath = lockPath(TokenSessionKey(issuer: "swift-oauth2:encryption-key", clientID: "", account: name), "key")
        return try await locks.lock(lockPath).withLock {
            try await library.call { lib in
                let attributes = lib.attributes([("name", name)])
                defer { lib.releaseAttributes(attributes) }
                var error: UnsafeMutablePointer<OAuth2GError>?
                if let secret = lib.lookupv(lib.keySchema, attributes, nil, &error) {
                    defer { lib.passwordFree(secret) }
                    guard let key = Data(base64Encoded: String(cString: secret)), key.count == 32 else {
                        throw TokenStoreError(.invalidEncryptionKey, "the keyring's key \"\(name)\" is not 32 bytes of base64")
                    }
                    return key
                }
                if error != nil { throw lib.takeError(error, "looking up an encryption key") }
                var generator = SystemRandomNumberGenerator()  // getrandom(2) / arc4random: cryptographically secure
                let key = Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
                let stored = lib.storev(
                    lib.keySchema, attributes, collection, "swift-oauth2 encryption key: \(name)", key.base64EncodedString(), nil, &error)
                if stored == 0 || error != nil { throw lib.takeError(error, "storing an encryption key") }
                return key
            }
        }
    }

    // MARK: - Keyring calls

    private static func attributes(_ key: TokenSessionKey) -> [(String, String)] {
        [("issuer", key.issuer), ("client_id", key.clientID), ("account", key.account)]
    }

    /// The secret stored for `key`, as UTF-8.
    private func lookup(_ key: TokenSessionKey) async throws -> Data? {
        let library = try LibSecret.load(libraryName)
        return try await library.call { lib in
            let attributes = lib.attributes(Self.attributes(key))
            defer { lib.releaseAttributes(attributes) }
            var error: UnsafeMutablePointer<OAuth2GError>?
            guard let secret = lib.lookupv(lib.sessionSchema, attributes, nil, &error) else {
                if error != nil { throw lib.takeError(error, "looking up an item") }
                return nil
            }
            defer { lib.passwordFree(secret) }  // wipes it
            return Data(String(cString: secret).utf8)
        }
    }

    /// Writes `document` as the secret of its key's item.
    private func store(_ document: TokenDocument) async throws {
        let library = try LibSecret.load(libraryName)
        let text = String(decoding: try document.encoded(), as: UTF8.self)
        let key = document.session.key
        let collection = self.collection
        try await library.call { lib in
            let attributes = lib.attributes(Self.attributes(key))
            defer { lib.releaseAttributes(attributes) }
            var error: UnsafeMutablePointer<OAuth2GError>?
            let stored = lib.storev(lib.sessionSchema, attributes, collection, "swift-oauth2: \(key)", text, nil, &error)
            if stored == 0 || error != nil { throw lib.takeError(error, "storing an item") }
        }
    }

    func lockPath(_ key: TokenSessionKey, _ kind: String) -> String {
        lockDirectory.appendingPathComponent(
            "\(FileTokenStore.fileName(for: key).dropLast(".json".count)).keyring-\(kind).lock"
        ).path
    }

    private func writeLockPath(_ key: TokenSessionKey) throws -> String {
        try makeLockDirectory()
        return lockPath(key, "write")
    }

    func makeLockDirectory() throws {
        do {
            try FileManager.default.createDirectory(
                at: lockDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw TokenStoreError(.io, "cannot create the lock directory", path: lockDirectory.path)
        }
    }
}
