#if canImport(Security)
import Foundation
import Security

// Apple platforms only: CI builds and tests on Linux, where `Security` does not exist, so
// this file is never compiled there. It follows `KeychainTokenStore`'s own calls (which
// are not compiled on Linux either); check it on a Mac before relying on it.

/// Client registrations in the Keychain: one generic-password item per registration, of
/// the service ``registrationService`` (so that ``list()``, which reads ``service``, never
/// sees them), account the JSON array `[issuer, clientID]`, data a registration document
/// (`RegistrationDocument`, JSON of its own kind).
extension KeychainTokenStore: RegistrationStore {
    /// The `kSecAttrService` of registration items: ``service`` followed by `.registration`.
    public var registrationService: String { service + ".registration" }

    /// The registration of `clientID` at `issuer`, or `nil`.
    ///
    /// A registration that an earlier version kept as a session item (account
    /// `.registration`) is written as a registration item here, and the old item removed.
    ///
    /// - Throws: ``TokenStoreError``: ``TokenStoreError/Code/corrupt`` or
    ///   ``TokenStoreError/Code/unsupportedVersion`` for an unreadable item (left in place),
    ///   ``TokenStoreError/Code/backend`` with the `OSStatus` otherwise.
    public func loadRegistration(issuer: String, clientID: String) async throws -> ClientRegistration? {
        try await LegacyRegistrationRecord.load(
            issuer: issuer, clientID: clientID, from: self,
            read: {
                guard let data = try await self.copyRegistrationData(issuer: issuer, clientID: clientID) else { return nil }
                let document = try RegistrationDocument(data: data)
                guard document.issuer == issuer, document.clientID == clientID else {
                    throw TokenStoreError(.conflict, "the Keychain item of the registration of \(clientID) holds another one")
                }
                return document.registration
            },
            save: { try await self.saveRegistration($0, issuer: issuer) })
    }

    /// Writes `registration`, keeping the members of the previous item this version does not know.
    ///
    /// - Throws: ``TokenStoreError/Code/unsupportedVersion`` when the item in place comes
    ///   from a newer, incompatible version; ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func saveRegistration(_ registration: ClientRegistration, issuer: String) async throws {
        let account = Self.registrationAccount(issuer: issuer, clientID: registration.clientID)
        try await locks.asyncLock("registration " + account).withLock {
            var document = RegistrationDocument(issuer: issuer, registration: registration)
            if let existing = try await self.copyRegistrationData(issuer: issuer, clientID: registration.clientID) {
                do {
                    document = try RegistrationDocument(data: existing)
                    document.registration = registration
                    document.updatedAt = Date()
                } catch let error as TokenStoreError where error.code == .corrupt {
                    // Unreadable: replaced by the new registration.
                }
            }
            let data = try document.encoded()
            let label = "\(registration.clientID) registration (\(issuer))"
            try await self.run { [self] in
                let update = [kSecValueData as String: data] as CFDictionary
                var status = SecItemUpdate(registrationQuery(account) as CFDictionary, update)
                if status == errSecItemNotFound {
                    var attributes = registrationQuery(account)
                    attributes[kSecValueData as String] = data
                    attributes[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
                    attributes[kSecAttrLabel as String] = label
                    status = SecItemAdd(attributes as CFDictionary, nil)
                }
                try Self.check(status, "saving a registration")
            }
        }
    }

    /// Deletes the registration item of `clientID` at `issuer` (and an item of an earlier
    /// version); a missing one is not an error.
    ///
    /// - Throws: ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func removeRegistration(issuer: String, clientID: String) async throws {
        let account = Self.registrationAccount(issuer: issuer, clientID: clientID)
        try await run { [self] in
            let status = SecItemDelete(registrationQuery(account) as CFDictionary)
            if status != errSecItemNotFound { try Self.check(status, "removing a registration") }
        }
        try await remove(LegacyRegistrationRecord.key(issuer: issuer, clientID: clientID))
    }

    /// The client ids with a registration item at `issuer`, sorted; items of an earlier
    /// version among them become registration items.
    ///
    /// - Throws: ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func registeredClientIDs(issuer: String) async throws -> [String] {
        for clientID in try await LegacyRegistrationRecord.clientIDs(issuer: issuer, in: self) {
            _ = try await loadRegistration(issuer: issuer, clientID: clientID)
        }
        let accounts: [String] = try await run { [self] in
            var search = registrationQuery(nil)
            search[kSecReturnAttributes as String] = true
            search[kSecMatchLimit as String] = kSecMatchLimitAll
            var result: CFTypeRef?
            let status = SecItemCopyMatching(search as CFDictionary, &result)
            if status == errSecItemNotFound { return [] }
            try Self.check(status, "listing registrations")
            let items = result as? [[String: Any]] ?? []
            return items.compactMap { $0[kSecAttrAccount as String] as? String }
        }
        return accounts.compactMap { account -> String? in
            guard let parts = try? JSONDecoder().decode([String].self, from: Data(account.utf8)), parts.count == 2,
                parts[0] == issuer
            else { return nil }
            return parts[1]
        }.sorted()
    }

    // MARK: - Keychain calls

    private func registrationQuery(_ account: String?) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: registrationService,
        ]
        if let account { query[kSecAttrAccount as String] = account }
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    private func copyRegistrationData(issuer: String, clientID: String) async throws -> Data? {
        let account = Self.registrationAccount(issuer: issuer, clientID: clientID)
        return try await run { [self] in
            var search = registrationQuery(account)
            search[kSecReturnData as String] = true
            search[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(search as CFDictionary, &result)
            if status == errSecItemNotFound { return nil }
            try Self.check(status, "loading a registration")
            return result as? Data
        }
    }

    private static func registrationAccount(issuer: String, clientID: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        let data = (try? encoder.encode([issuer, clientID])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
#endif
