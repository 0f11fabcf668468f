import Foundation

/// How versions before the ``RegistrationStore`` kept a registration: as a
/// ``StoredTokenSession`` under the key (issuer, client id, `.registration`), its "access token"
/// the registration access token (empty when the server issued none), the rest of the
/// registration in its `registration` member (and, in 0.x, the client secret in a
/// `client_secret` member beside it).
///
/// The stores read such a record when no registration record is found, write it again as
/// a registration record and then remove it (``migrate(issuer:clientID:from:saving:)``).
package enum LegacyRegistrationRecord {
    /// The account the record is stored under. It starts with a dot, which a CLI profile
    /// name cannot, so it never named a signed-in account.
    package static let account = ".registration"

    /// The member of ``StoredTokenSession/additionalFields`` that holds the registration.
    package static let field = "registration"

    /// The key the record of `clientID` at `issuer` is stored under.
    package static func key(issuer: String, clientID: String) -> TokenSessionKey {
        TokenSessionKey(issuer: issuer, clientID: clientID, account: account)
    }

    /// `registration` in the old format (for tests that need a record of an earlier version).
    package static func session(_ registration: ClientRegistration, issuer: String, now: Date = Date()) -> StoredTokenSession {
        var members = registration.storedMembers
        members["client_id"] = nil
        members["registration_access_token"] = nil
        return StoredTokenSession(
            key: key(issuer: issuer, clientID: registration.clientID),
            tokens: TokenSet(accessToken: registration.registrationAccessToken ?? "", tokenType: .bearer, issuedAt: now),
            updatedAt: now,
            additionalFields: [field: .object(members)])
    }

    /// Reads a registration from its record in the old format.
    ///
    /// - Throws: ``TokenStoreError/Code/corrupt`` when the record holds no registration or a
    ///   member of the wrong type.
    package static func registration(from stored: StoredTokenSession) throws -> ClientRegistration {
        guard var members = stored.additionalFields[field]?.objectValue else {
            throw TokenStoreError.corrupt("the record of \(stored.key) holds no client registration")
        }
        // Records of 0.x kept the secret beside the registration, in the session's members.
        if members["client_secret"] == nil { members["client_secret"] = stored.additionalFields["client_secret"] }
        members["client_id"] = .string(stored.key.clientID)
        members["registration_access_token"] = stored.tokens.accessToken.isEmpty ? nil : .string(stored.tokens.accessToken)
        do {
            return try ClientRegistration(storedMembers: members)
        } catch {
            throw TokenStoreError.corrupt("the record of \(stored.key) is not a readable registration: \(error.message ?? error.code.rawValue)")
        }
    }

    /// The registration of `clientID` at `issuer`: the store's registration record, else
    /// the old record moved to the registration records — under the store's lock for the old
    /// key it is read, saved with `save` (the store's own registration write), then removed.
    /// When another process moved it meanwhile, the registration records are read again.
    ///
    /// - Parameters:
    ///   - read: reads the store's registration record.
    ///   - save: writes the store's registration record.
    /// - Throws: what the store throws; ``TokenStoreError/Code/corrupt`` for an old record
    ///   that holds no readable registration (left in place).
    package static func load(
        issuer: String, clientID: String, from store: some TokenStore,
        read: @Sendable () async throws -> ClientRegistration?,
        save: @Sendable (ClientRegistration) async throws -> Void
    ) async throws -> ClientRegistration? {
        if let registration = try await read() { return registration }
        let key = key(issuer: issuer, clientID: clientID)
        // Most lookups find nothing: the lock only when there is something to move.
        guard try await store.load(key) != nil else { return nil }
        let moved = try await store.withExclusiveAccess(to: key) { () -> ClientRegistration? in
            guard let record = try await store.load(key) else { return nil }
            let moved = try Self.registration(from: record)
            try await save(moved)
            try await store.remove(key)
            return moved
        }
        if let moved { return moved }
        return try await read()
    }

    /// The client ids of the old records at `issuer`.
    package static func clientIDs(issuer: String, in store: some TokenStore) async throws -> [String] {
        try await store.list().filter { $0.issuer == issuer && $0.account == account }.map(\.clientID)
    }
}
