import Foundation

/// Registrations kept in a ``TokenStore``, beside the sessions, so that the client secret
/// and the registration access token live where the tokens live (the keyring, a 0600 or
/// encrypted file) and never in a configuration file.
///
/// A registration is one ``StoredSession`` record under the key
/// (issuer, client id, ``ClientRegistration/storeAccount``): its "access token" is the
/// registration access token (the Bearer token of the client configuration endpoint — an
/// empty string when the server issued none), and its `registration` member the rest of the
/// registration (metadata, `client_secret`, `registration_client_uri`, `client_id_issued_at`,
/// `client_secret_expires_at`). The record works with every store, and the documents of
/// existing stores stay in version 2.
extension ClientRegistration {
    /// The account a registration is stored under. It starts with a dot, which a CLI
    /// profile name cannot, so it never names a signed-in account.
    public static let storeAccount = ".registration"

    /// The member of ``StoredSession/additionalFields`` that holds the registration.
    public static let storeField = "registration"

    /// The key the registration of `clientID` at `issuer` is stored under.
    public static func storeKey(issuer: String, clientID: String) -> SessionKey {
        SessionKey(issuer: issuer, clientID: clientID, account: storeAccount)
    }

    /// The registration as a store record.
    public func storedSession(issuer: String, now: Date = Date()) -> StoredSession {
        var members = metadata.members
        members["registration_client_uri"] = registrationClientURI.map { .string($0.absoluteString) }
        members["client_id_issued_at"] = clientIDIssuedAt.map { .number($0.timeIntervalSince1970) }
        members["client_secret_expires_at"] = clientSecretExpiresAt.map { .number($0.timeIntervalSince1970) }
        members["client_secret"] = clientSecret.map(JSONValue.string)
        return StoredSession(
            key: Self.storeKey(issuer: issuer, clientID: clientID),
            tokens: TokenSet(accessToken: registrationAccessToken ?? "", tokenType: .bearer, issuedAt: now),
            updatedAt: now,
            additionalFields: [Self.storeField: .object(members)])
    }

    /// Reads a registration back from its store record.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidResponse`` when the record holds no registration
    ///   or a member of the wrong type.
    public init(stored: StoredSession) throws(OAuth2Error) {
        guard var members = stored.additionalFields[Self.storeField]?.objectValue else {
            throw .invalidResponse("The stored record holds no client registration.")
        }
        // Records of 0.x kept the secret beside the registration, in the session's members.
        let secret = members.removeValue(forKey: "client_secret") ?? stored.additionalFields["client_secret"]
        let reader = ClientMetadata.Reader(members: members)
        self.init(clientID: stored.key.clientID, metadata: try ClientMetadata.parse(members))
        clientSecret = secret?.stringValue
        registrationAccessToken = stored.tokens.accessToken.isEmpty ? nil : stored.tokens.accessToken
        registrationClientURI = try reader.url("registration_client_uri")
        clientIDIssuedAt = try reader.date("client_id_issued_at")
        clientSecretExpiresAt = try reader.date("client_secret_expires_at")
    }
}

extension TokenStore {
    /// Saves `registration` (replacing the one of the same client id), under the store's
    /// lock for its key.
    ///
    /// - Parameters:
    ///   - registration: the registration to save.
    ///   - issuer: the issuer the client was registered with (``ClientRegistrar/issuer``).
    public func saveRegistration(_ registration: ClientRegistration, issuer: String) async throws {
        let record = registration.storedSession(issuer: issuer)
        try await withExclusiveAccess(to: record.key) { try await save(record) }
    }

    /// The registration of `clientID` at `issuer`, or `nil` when none is stored.
    ///
    /// - Throws: what the store throws; ``OAuth2Error/Code/invalidResponse`` for a record
    ///   that holds no readable registration.
    public func loadRegistration(issuer: String, clientID: String) async throws -> ClientRegistration? {
        guard let record = try await load(ClientRegistration.storeKey(issuer: issuer, clientID: clientID)) else { return nil }
        return try ClientRegistration(stored: record)
    }

    /// Removes the registration of `clientID` at `issuer`; removing a missing one is not an error.
    public func removeRegistration(issuer: String, clientID: String) async throws {
        try await remove(ClientRegistration.storeKey(issuer: issuer, clientID: clientID))
    }

    /// The client ids with a stored registration at `issuer`.
    public func registeredClientIDs(issuer: String) async throws -> [String] {
        try await list().filter { $0.issuer == issuer && $0.account == ClientRegistration.storeAccount }.map(\.clientID)
    }
}
