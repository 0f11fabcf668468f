import Foundation

/// Client registrations in the Keychain: one generic-password item per registration, of
/// the service ``registrationService`` (so that ``list()``, which reads ``service``, never
/// sees them), account the JSON array `[issuer, clientID]`, data a registration document
/// (`RegistrationDocument`, JSON of its own kind).
extension KeychainItemStore: RegistrationStore {
    /// The `kSecAttrService` of registration items: ``service`` followed by `.registration`.
    package var registrationService: String { service + ".registration" }

    /// The registration of `clientID` at `issuer`, or `nil`.
    ///
    /// A registration that an earlier version kept as a session item (account
    /// `.registration`) is written as a registration item here, and the old item removed.
    ///
    /// - Throws: ``TokenStoreError``: ``TokenStoreError/Code/corrupt`` or
    ///   ``TokenStoreError/Code/unsupportedVersion`` for an unreadable item (left in place),
    ///   ``TokenStoreError/Code/conflict`` for an item that holds another registration, else
    ///   as ``error(_:_:)`` maps the `OSStatus`.
    package func loadRegistration(issuer: String, clientID: String) async throws -> ClientRegistration? {
        try await LegacyRegistrationRecord.load(
            issuer: issuer, clientID: clientID, from: self,
            read: {
                let query = self.registrationQuery(Self.registrationAccount(issuer: issuer, clientID: clientID))
                guard let data = try await self.copyData(query, "loading a registration") else { return nil }
                return try RegistrationDocument(data: data, storedFor: clientID, at: issuer, record: "the Keychain item").registration
            },
            save: { try await self.saveRegistration($0, issuer: issuer) })
    }

    /// Writes `registration`, keeping the members of the previous item this version does not know.
    ///
    /// - Throws: ``TokenStoreError/Code/unsupportedVersion`` when the item in place comes
    ///   from a newer, incompatible version; else as ``error(_:_:)`` maps the `OSStatus`.
    package func saveRegistration(_ registration: ClientRegistration, issuer: String) async throws {
        let account = Self.registrationAccount(issuer: issuer, clientID: registration.clientID)
        let query = registrationQuery(account)
        try await locks.asyncLock("registration " + account).withLock {
            let document = try RegistrationDocument.updating(
                try await self.copyData(query, "saving a registration"), with: registration, issuer: issuer)
            try await self.write(
                document.encoded(), to: query, label: "\(registration.clientID) registration (\(issuer))")
        }
    }

    /// Deletes the registration item of `clientID` at `issuer` (and an item of an earlier
    /// version); a missing one is not an error.
    ///
    /// - Throws: as ``error(_:_:)`` maps the `OSStatus`.
    package func removeRegistration(issuer: String, clientID: String) async throws {
        try await delete(
            registrationQuery(Self.registrationAccount(issuer: issuer, clientID: clientID)), "removing a registration")
        try await remove(LegacyRegistrationRecord.key(issuer: issuer, clientID: clientID))
    }

    /// The client ids with a registration item at `issuer`, sorted; items of an earlier
    /// version among them become registration items.
    ///
    /// - Throws: as ``error(_:_:)`` maps the `OSStatus`.
    package func registeredClientIDs(issuer: String) async throws -> [String] {
        for clientID in try await LegacyRegistrationRecord.clientIDs(issuer: issuer, in: self) {
            _ = try await loadRegistration(issuer: issuer, clientID: clientID)
        }
        return try await accounts(registrationQuery(nil), "listing registrations").compactMap { account -> String? in
            guard let parts = try? JSONDecoder().decode([String].self, from: Data(account.utf8)), parts.count == 2,
                parts[0] == issuer
            else { return nil }
            return parts[1]
        }.sorted()
    }

    /// The query of the registration item with `account` (every one when `nil`).
    func registrationQuery(_ account: String?) -> KeychainQuery {
        KeychainQuery(service: registrationService, account: account, accessGroup: accessGroup)
    }

    static func registrationAccount(issuer: String, clientID: String) -> String {
        jsonArray([issuer, clientID])
    }
}
