import Foundation
import OAuth2Internals

/// The logic of `KeychainTokenStore`, over any ``KeychainItems``: compiled and tested on
/// every platform; on Apple platforms `KeychainTokenStore` runs it over the `SecItem`
/// functions.
///
/// One generic-password item per session: service ``service``, account the JSON array
/// `[issuer, clientID, account]`, data a ``TokenDocument``, access group ``accessGroup``,
/// readable after the first unlock of the device and never leaving it
/// (``KeychainItem/Accessibility/afterFirstUnlockThisDeviceOnly``, not synchronizable).
/// Client registrations are items of their own service (``registrationService``).
///
/// ``withExclusiveAccess(to:_:)`` excludes tasks of this process only: the Keychain has no
/// lock that processes share. Writes of one item by tasks of this process take turns (a
/// read of the item in place, to keep its unknown members, then the write).
package final class KeychainItemStore: TokenStore {
    /// The Keychain.
    package let items: any KeychainItems
    /// The `kSecAttrService` of session items.
    package let service: String
    /// The `kSecAttrAccessGroup` of every item, or `nil`.
    package let accessGroup: String?
    let locks = LockTable()

    /// A store over the items of `service` (in `accessGroup`, when given) in `items`.
    package init(items: any KeychainItems, service: String, accessGroup: String?) {
        self.items = items
        self.service = service
        self.accessGroup = accessGroup
    }

    /// The session stored for `key`, or `nil`. A document of an older layout (version 1)
    /// is written back in the current one, unless another write replaced it meanwhile.
    ///
    /// - Throws: ``TokenStoreError``: ``TokenStoreError/Code/corrupt`` or
    ///   ``TokenStoreError/Code/unsupportedVersion`` for an unreadable item (left in place),
    ///   ``TokenStoreError/Code/conflict`` for an item that holds another key, else as
    ///   ``error(_:_:)`` maps the `OSStatus`.
    package func load(_ key: TokenSessionKey) async throws -> StoredTokenSession? {
        let query = query(Self.account(key))
        guard let data = try await copyData(query, "loading") else { return nil }
        let document = try TokenDocument(data: data)
        guard document.session.key == key else {
            throw TokenStoreError(.conflict, "the Keychain item for \(key) holds \(document.session.key)")
        }
        if document.isLegacy {
            // Best effort, and only if no writer replaced it meanwhile: the old item still loads.
            try? await locks.asyncLock("write " + Self.account(key)).withLock {
                guard try await self.copyData(query, "loading") == data else { return }
                try await self.write(document.encoded(), to: query, label: Self.label(key))
            }
        }
        return document.session
    }

    /// Writes `session`, keeping the members of the previous item this version does not know.
    ///
    /// - Throws: ``TokenStoreError/Code/unsupportedVersion`` when the item in place comes
    ///   from a newer, incompatible version; ``TokenStoreError/Code/conflict`` when it holds
    ///   another key; else as ``error(_:_:)`` maps the `OSStatus`.
    package func save(_ session: StoredTokenSession) async throws {
        let query = query(Self.account(session.key))
        try await locks.asyncLock("write " + Self.account(session.key)).withLock {
            var document = TokenDocument(session: session)
            if let existing = try await self.copyData(query, "saving") {
                do {
                    document = try TokenDocument(data: existing)
                    guard document.session.key == session.key else {
                        throw TokenStoreError(.conflict, "the Keychain item for \(session.key) holds \(document.session.key)")
                    }
                    document.session = session
                } catch let error as TokenStoreError where error.code == .corrupt {
                    // Unreadable: replaced by the new session.
                    document = TokenDocument(session: session)
                }
            }
            try await self.write(document.encoded(), to: query, label: Self.label(session.key))
        }
    }

    /// Deletes the item for `key`; a missing item is not an error.
    ///
    /// - Throws: as ``error(_:_:)`` maps the `OSStatus`.
    package func remove(_ key: TokenSessionKey) async throws {
        try await delete(query(Self.account(key)), "removing")
    }

    /// The keys of every session item of ``service``, sorted; items whose account is not a
    /// key (another program's items of the same service) are left out.
    ///
    /// - Throws: as ``error(_:_:)`` maps the `OSStatus`.
    package func list() async throws -> [TokenSessionKey] {
        try await accounts(query(nil), "listing").compactMap(Self.key(fromAccount:))
            .sorted { ($0.issuer, $0.clientID, $0.account) < ($1.issuer, $1.clientID, $1.account) }
    }

    /// Runs `body` holding this process's lock for `key`.
    ///
    /// - Throws: `CancellationError`, or what `body` throws.
    package func withExclusiveAccess<T: Sendable>(
        to key: TokenSessionKey, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await locks.asyncLock(Self.account(key)).withLock(body)
    }

    // MARK: - Items

    /// The query of the session item with `account` (every session item when `nil`).
    func query(_ account: String?) -> KeychainQuery {
        KeychainQuery(service: service, account: account, accessGroup: accessGroup)
    }

    /// The data of the item `query` names, or `nil` when there is none.
    func copyData(_ query: KeychainQuery, _ operation: String) async throws -> Data? {
        let items = items
        let (status, matches) = try await BlockingIO.run { items.copyMatching(query, returning: .dataOfOne) }
        if status == KeychainStatus.itemNotFound { return nil }
        try Self.check(status, operation)
        guard let data = matches.first?.data else {
            throw TokenStoreError.corrupt("a Keychain item of \(query.service) holds no data")
        }
        return data
    }

    /// The accounts of the items `query` matches.
    func accounts(_ query: KeychainQuery, _ operation: String) async throws -> [String] {
        let items = items
        let (status, matches) = try await BlockingIO.run { items.copyMatching(query, returning: .accountsOfAll) }
        if status == KeychainStatus.itemNotFound { return [] }
        try Self.check(status, operation)
        return matches.compactMap(\.account)
    }

    /// Replaces the data of the item `query` names, or adds the item. An item that another
    /// process adds between the two calls (`errSecDuplicateItem`) is updated.
    func write(_ data: Data, to query: KeychainQuery, label: String) async throws {
        let items = items
        try await BlockingIO.run {
            var status = items.update(query, data: data)
            if status == KeychainStatus.itemNotFound {
                status = items.add(KeychainItem(
                    query: query, label: label, data: data, accessibility: .afterFirstUnlockThisDeviceOnly, synchronizable: false))
                if status == KeychainStatus.duplicateItem { status = items.update(query, data: data) }
            }
            try Self.check(status, "saving")
        }
    }

    /// Deletes the item `query` names; a missing one is not an error.
    func delete(_ query: KeychainQuery, _ operation: String) async throws {
        let items = items
        try await BlockingIO.run {
            let status = items.delete(query)
            if status != KeychainStatus.itemNotFound { try Self.check(status, operation) }
        }
    }

    static func check(_ status: Int32, _ operation: String) throws {
        guard status != KeychainStatus.success else { return }
        throw error(status, operation)
    }

    /// The ``TokenStoreError`` of a failed Keychain call, its `OSStatus` in
    /// ``TokenStoreError/systemError``: ``TokenStoreError/Code/unavailable`` when the app
    /// may not use the Keychain or the access group (`errSecMissingEntitlement`,
    /// `errSecNotAvailable`); ``TokenStoreError/Code/backend`` otherwise, saying when the
    /// device is locked (`errSecInteractionNotAllowed`) or the user refused.
    static func error(_ status: Int32, _ operation: String) -> TokenStoreError {
        let reason: String
        switch status {
        case KeychainStatus.missingEntitlement:
            return TokenStoreError(
                .unavailable,
                "no Keychain access while \(operation): the app lacks the entitlement for the access group (OSStatus \(status))",
                systemError: status)
        case KeychainStatus.notAvailable:
            return TokenStoreError(.unavailable, "no Keychain is available while \(operation) (OSStatus \(status))", systemError: status)
        case KeychainStatus.interactionNotAllowed:
            reason = "the device is locked: the Keychain opens after the first unlock"
        case KeychainStatus.userCanceled, KeychainStatus.authFailed:
            reason = "the user did not allow the access"
        case KeychainStatus.parameter:
            reason = "the Keychain refused the query"
        default:
            reason = "the Keychain refused"
        }
        return TokenStoreError(.backend, "Keychain error while \(operation): \(reason) (OSStatus \(status))", systemError: status)
    }

    static func account(_ key: TokenSessionKey) -> String {
        jsonArray([key.issuer, key.clientID, key.account])
    }

    static func key(fromAccount account: String) -> TokenSessionKey? {
        guard let parts = try? JSONDecoder().decode([String].self, from: Data(account.utf8)), parts.count == 3 else {
            return nil
        }
        return TokenSessionKey(issuer: parts[0], clientID: parts[1], account: parts[2])
    }

    static func label(_ key: TokenSessionKey) -> String { "\(key.clientID) (\(key.issuer))" }

    /// `strings` as a JSON array, slashes unescaped (`["https://id.example.com","cli"]`).
    static func jsonArray(_ strings: [String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        let data = (try? encoder.encode(strings)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
