import CSecretServiceShim
import Foundation
import OAuth2

/// Client registrations in the keyring: one item per registration, of schema
/// `io.github.swift-oauth2.Registration` with the attributes `issuer`, `client_id` and
/// `kind` (`registration`), labelled `swift-oauth2 registration: client (issuer)`; its secret
/// is the registration's document (JSON of its own kind, with the client secret and the
/// registration access token). Session searches never match these items: libsecret matches
/// an item's schema name too.
extension SecretServiceTokenStore: RegistrationStore {
    /// The value of the `kind` attribute of registration items.
    static let registrationKind = "registration"

    /// The registration of `clientID` at `issuer`, or `nil`.
    ///
    /// A registration that an earlier version kept as a session item (account
    /// `.registration`) is written as a registration item here, and the old item removed.
    ///
    /// - Throws: `TokenStoreError`: `TokenStoreError.Code.unavailable`,
    ///   `TokenStoreError.Code.backend`, `TokenStoreError.Code.corrupt` or
    ///   `TokenStoreError.Code.unsupportedVersion` for an unreadable secret (left in place),
    ///   `TokenStoreError.Code.conflict` when the item holds another registration.
    public func loadRegistration(issuer: String, clientID: String) async throws -> ClientRegistration? {
        try await LegacyRegistrationRecord.load(
            issuer: issuer, clientID: clientID, from: self,
            read: {
                guard let data = try await self.lookupRegistration(issuer: issuer, clientID: clientID) else { return nil }
                return try RegistrationDocument(data: data, storedFor: clientID, at: issuer, record: "the keyring item").registration
            },
            save: { try await self.saveRegistration($0, issuer: issuer) })
    }

    /// Writes `registration`, replacing the item of its issuer and client id and keeping the
    /// members of the previous document this version does not know.
    ///
    /// - Throws: `TokenStoreError`: `TokenStoreError.Code.unavailable`,
    ///   `TokenStoreError.Code.backend`, `TokenStoreError.Code.unsupportedVersion` when the
    ///   item in place comes from a newer, incompatible version, `TokenStoreError.Code.io`
    ///   when the lock file cannot be made.
    public func saveRegistration(_ registration: ClientRegistration, issuer: String) async throws {
        let clientID = registration.clientID
        try await locks.lock(registrationLockPath(issuer: issuer, clientID: clientID)).withLock {
            let document = try RegistrationDocument.updating(
                try await self.lookupRegistration(issuer: issuer, clientID: clientID), with: registration, issuer: issuer)
            let text = String(decoding: try document.encoded(), as: UTF8.self)
            let library = try LibSecret.load(self.libraryName)
            let collection = self.collection
            try await library.call { lib in
                let attributes = lib.attributes(Self.registrationAttributes(issuer: issuer, clientID: clientID))
                defer { lib.releaseAttributes(attributes) }
                var error: UnsafeMutablePointer<OAuth2GError>?
                let label = "swift-oauth2 registration: \(clientID) (\(issuer))"
                let stored = lib.storev(lib.registrationSchema, attributes, collection, label, text, nil, &error)
                if stored == 0 || error != nil { throw lib.takeError(error, "storing a registration") }
            }
        }
    }

    /// Deletes the registration item of `clientID` at `issuer` (and an item of an earlier
    /// version); a missing one is not an error.
    ///
    /// - Throws: `TokenStoreError.Code.unavailable`, `TokenStoreError.Code.backend`,
    ///   `TokenStoreError.Code.io` when the lock file cannot be made.
    public func removeRegistration(issuer: String, clientID: String) async throws {
        let library = try LibSecret.load(libraryName)
        try await locks.lock(registrationLockPath(issuer: issuer, clientID: clientID)).withLock {
            try await library.call { lib in
                let attributes = lib.attributes(Self.registrationAttributes(issuer: issuer, clientID: clientID))
                defer { lib.releaseAttributes(attributes) }
                var error: UnsafeMutablePointer<OAuth2GError>?
                _ = lib.clearv(lib.registrationSchema, attributes, nil, &error)
                if error != nil { throw lib.takeError(error, "removing a registration") }
            }
        }
        try await remove(LegacyRegistrationRecord.key(issuer: issuer, clientID: clientID))
    }

    /// The client ids with a registration item at `issuer` (every collection), sorted, read
    /// from the attributes; items of an earlier version among them become registration items.
    ///
    /// - Throws: `TokenStoreError.Code.unavailable`, `TokenStoreError.Code.backend`.
    public func registeredClientIDs(issuer: String) async throws -> [String] {
        for clientID in try await LegacyRegistrationRecord.clientIDs(issuer: issuer, in: self) {
            _ = try await loadRegistration(issuer: issuer, clientID: clientID)
        }
        let library = try LibSecret.load(libraryName)
        let clientIDs: [String] = try await library.call { lib in
            let attributes = lib.attributes([("issuer", issuer), ("kind", Self.registrationKind)])
            defer { lib.releaseAttributes(attributes) }
            var error: UnsafeMutablePointer<OAuth2GError>?
            let searchAll: Int32 = 1 << 1  // SECRET_SEARCH_ALL
            let list = lib.searchv(lib.registrationSchema, attributes, searchAll, nil, &error)
            if error != nil {
                if let list { lib.freeList(list) }
                throw lib.takeError(error, "listing registrations")
            }
            guard let list else { return [] }
            defer { lib.freeList(list) }
            var clientIDs: [String] = []
            var node: UnsafeMutablePointer<OAuth2GList>? = list
            while let current = node {
                if let item = current.pointee.data, let table = lib.retrievableAttributes(item) {
                    if let clientID = lib.attribute(table, "client_id") { clientIDs.append(clientID) }
                    lib.releaseAttributes(table)
                }
                node = current.pointee.next
            }
            return clientIDs
        }
        return Set(clientIDs).sorted()
    }

    // MARK: - Keyring calls

    private static func registrationAttributes(issuer: String, clientID: String) -> [(String, String)] {
        [("issuer", issuer), ("client_id", clientID), ("kind", registrationKind)]
    }

    /// The secret of the registration item of `clientID` at `issuer`, as UTF-8.
    private func lookupRegistration(issuer: String, clientID: String) async throws -> Data? {
        let library = try LibSecret.load(libraryName)
        return try await library.call { lib in
            let attributes = lib.attributes(Self.registrationAttributes(issuer: issuer, clientID: clientID))
            defer { lib.releaseAttributes(attributes) }
            var error: UnsafeMutablePointer<OAuth2GError>?
            guard let secret = lib.lookupv(lib.registrationSchema, attributes, nil, &error) else {
                if error != nil { throw lib.takeError(error, "looking up a registration") }
                return nil
            }
            defer { lib.passwordFree(secret) }  // wipes it
            return Data(String(cString: secret).utf8)
        }
    }

    /// The lock file of the writers of the registration item of `clientID` at `issuer`.
    private func registrationLockPath(issuer: String, clientID: String) throws -> String {
        try makeLockDirectory()
        return lockPath(LegacyRegistrationRecord.key(issuer: issuer, clientID: clientID), "registration-write")
    }
}
