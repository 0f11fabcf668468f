#if canImport(Security)
import Foundation
import OAuth2Internals
import Security

/// A ``TokenStore`` in the Apple Keychain: one generic-password item per session, service
/// `swift-oauth2` (or the one given), account the JSON array `[issuer, clientID, account]`,
/// data a ``TokenDocument``.
///
/// Items are readable after the first unlock of the device and never leave it
/// (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`). ``withExclusiveAccess(to:_:)``
/// excludes tasks of this process only: the Keychain has no lock that processes share.
///
/// Client registrations (``RegistrationStore``) are items of their own service
/// (``registrationService``), account the JSON array `[issuer, clientID]`, data a
/// registration document.
public final class KeychainTokenStore: TokenStore {
    /// The `kSecAttrService` of every item.
    public let service: String
    /// The `kSecAttrAccessGroup` of every item, to share them between apps of one team.
    public let accessGroup: String?
    let locks = LockTable()

    /// A store over the items of `service` (in `accessGroup`, when given).
    public init(service: String = "swift-oauth2", accessGroup: String? = nil) {
        self.service = service
        self.accessGroup = accessGroup
    }

    /// The session stored for `key`, or `nil`.
    ///
    /// - Throws: ``TokenStoreError``: ``TokenStoreError/Code/corrupt`` or
    ///   ``TokenStoreError/Code/unsupportedVersion`` for an unreadable item (left in place),
    ///   ``TokenStoreError/Code/backend`` with the `OSStatus` otherwise.
    public func load(_ key: TokenSessionKey) async throws -> StoredTokenSession? {
        guard let data = try await copyData(key) else { return nil }
        return try TokenDocument(data: data).session
    }

    /// Writes `session`, keeping the members of the previous item this version does not know.
    ///
    /// - Throws: ``TokenStoreError/Code/unsupportedVersion`` when the item in place comes
    ///   from a newer, incompatible version; ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func save(_ session: StoredTokenSession) async throws {
        var document = TokenDocument(session: session)
        if let existing = try await copyData(session.key) {
            do {
                document = try TokenDocument(data: existing)
                document.session = session
            } catch let error as TokenStoreError where error.code == .corrupt {
                // Unreadable: replaced by the new session.
            }
        }
        let data = try document.encoded()
        let account = Self.account(session.key)
        try await run { [self] in
            let update = [kSecValueData as String: data] as CFDictionary
            var status = SecItemUpdate(query(account) as CFDictionary, update)
            if status == errSecItemNotFound {
                var attributes = query(account)
                attributes[kSecValueData as String] = data
                attributes[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
                attributes[kSecAttrLabel as String] = "\(session.key.clientID) (\(session.key.issuer))"
                status = SecItemAdd(attributes as CFDictionary, nil)
            }
            try Self.check(status, "saving")
        }
    }

    /// Deletes the item for `key`; a missing item is not an error.
    ///
    /// - Throws: ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func remove(_ key: TokenSessionKey) async throws {
        let account = Self.account(key)
        try await run { [self] in
            let status = SecItemDelete(query(account) as CFDictionary)
            if status != errSecItemNotFound { try Self.check(status, "removing") }
        }
    }

    /// The keys of every item of ``service``, sorted.
    ///
    /// - Throws: ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func list() async throws -> [TokenSessionKey] {
        let accounts: [String] = try await run { [self] in
            var search = query(nil)
            search[kSecReturnAttributes as String] = true
            search[kSecMatchLimit as String] = kSecMatchLimitAll
            var result: CFTypeRef?
            let status = SecItemCopyMatching(search as CFDictionary, &result)
            if status == errSecItemNotFound { return [] }
            try Self.check(status, "listing")
            let items = result as? [[String: Any]] ?? []
            return items.compactMap { $0[kSecAttrAccount as String] as? String }
        }
        return accounts.compactMap(Self.key(fromAccount:))
            .sorted { ($0.issuer, $0.clientID, $0.account) < ($1.issuer, $1.clientID, $1.account) }
    }

    /// Runs `body` holding this process's lock for `key`.
    ///
    /// - Throws: `CancellationError`, or what `body` throws.
    public func withExclusiveAccess<T: Sendable>(
        to key: TokenSessionKey, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await locks.asyncLock(Self.account(key)).withLock(body)
    }

    // MARK: - Keychain calls

    private func query(_ account: String?) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
        ]
        if let account { query[kSecAttrAccount as String] = account }
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    private func copyData(_ key: TokenSessionKey) async throws -> Data? {
        let account = Self.account(key)
        return try await run { [self] in
            var search = query(account)
            search[kSecReturnData as String] = true
            search[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(search as CFDictionary, &result)
            if status == errSecItemNotFound { return nil }
            try Self.check(status, "loading")
            return result as? Data
        }
    }

    /// Keychain calls may wait for the security daemon: off the cooperative pool.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await BlockingIO.run(body)
    }

    static func check(_ status: OSStatus, _ operation: String) throws {
        guard status != errSecSuccess else { return }
        throw TokenStoreError(.backend, "Keychain error while \(operation)", systemError: status)
    }

    private static func account(_ key: TokenSessionKey) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        let data = (try? encoder.encode([key.issuer, key.clientID, key.account])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    private static func key(fromAccount account: String) -> TokenSessionKey? {
        guard let parts = try? JSONDecoder().decode([String].self, from: Data(account.utf8)), parts.count == 3 else {
            return nil
        }
        return TokenSessionKey(issuer: parts[0], clientID: parts[1], account: parts[2])
    }
}
#endif
