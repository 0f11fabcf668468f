#if Postgres
import Foundation
import NIOCore
import OAuth2
import OAuth2JOSE
import PostgresNIO

/// Client registrations in PostgreSQL: one row per registration in
/// `<schema>.oauth2_registrations` (schema version 5), keyed by issuer and client id, holding
/// the registration's document (JSON of its own kind, with the client secret and the
/// registration access token) sealed under the ``EncryptionKeys`` like a session's row — the
/// ciphertext bound to the registration's issuer and client id, so that it opens neither as
/// another registration nor as a session. Registrations are not cached, and writing one
/// notifies no replica: they are read when a client is set up, not on every request.
///
/// Called inside ``withExclusiveAccess(to:_:)``, the methods use the transaction's
/// connection, so that moving a registration of an earlier version (a session row under the
/// account `.registration`) writes the new row and removes the old one in one transaction.
extension PostgresTokenStore: RegistrationStore {
    var registrationsTable: String { "\(schema).oauth2_registrations" }

    /// The registration of `clientID` at `issuer`, or `nil`.
    ///
    /// A registration that an earlier version kept as a session row (account
    /// `.registration`) is written as a registration row here, and the old row removed, in
    /// one transaction under the old row's lock.
    ///
    /// - Throws: ``PostgresTokenStoreError`` (``PostgresTokenStoreError/Code/unknownKey``,
    ///   ``PostgresTokenStoreError/Code/corrupt``, connection errors), or `TokenStoreError`
    ///   for a document from an unsupported version.
    public func loadRegistration(issuer: String, clientID: String) async throws -> ClientRegistration? {
        try await LegacyRegistrationRecord.load(
            issuer: issuer, clientID: clientID, from: self,
            read: { try await self.readRegistration(issuer: issuer, clientID: clientID)?.registration },
            save: { try await self.saveRegistration($0, issuer: issuer) })
    }

    /// Writes `registration`, sealed with the key ring's current key, replacing the row of
    /// its issuer and client id and keeping the document's members this version does not know.
    ///
    /// - Throws: ``PostgresTokenStoreError``; `TokenStoreError` when the row in place holds
    ///   a document from a newer, incompatible version.
    public func saveRegistration(_ registration: ClientRegistration, issuer: String) async throws {
        let clientID = registration.clientID
        let operation = "writing the registration of \(clientID)"
        try await withRegistrationConnection(operation) { connection in
            var document = RegistrationDocument(issuer: issuer, registration: registration, updatedAt: self.configuration.now())
            do {
                if let existing = try await self.readRegistration(issuer: issuer, clientID: clientID, on: connection) {
                    document = existing.replacing(registration, at: document.updatedAt)
                }
            } catch let error as PostgresTokenStoreError where error.code == .corrupt {
                // Unreadable: replaced by the new registration.
            }
            let plaintext: Data
            do {
                plaintext = try document.encoded()
            } catch {
                throw PostgresTokenStoreError(.corrupt, "the registration of \(clientID) does not encode as a document")
            }
            let (keyID, sealed) = try self.cipher.seal(plaintext, registrationOf: clientID, at: issuer)
            let bytes = ByteBuffer(bytes: sealed)
            let query: PostgresQuery = """
                INSERT INTO \(unescaped: self.registrationsTable) AS t (issuer, client_id, key_id, sealed, updated_at)
                VALUES (\(issuer), \(clientID), \(keyID), \(bytes), \(document.updatedAt))
                ON CONFLICT (issuer, client_id) DO UPDATE
                SET key_id = excluded.key_id, sealed = excluded.sealed, updated_at = excluded.updated_at
                """
            try await connection.run(query, logger: self.logger)
        }
    }

    /// Removes the registration row of `clientID` at `issuer` (and a session row of an
    /// earlier version); a missing one is not an error.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    public func removeRegistration(issuer: String, clientID: String) async throws {
        try await withRegistrationConnection("removing the registration of \(clientID)") { connection in
            let query: PostgresQuery = """
                DELETE FROM \(unescaped: self.registrationsTable) WHERE issuer = \(issuer) AND client_id = \(clientID)
                """
            try await connection.run(query, logger: self.logger)
        }
        try await remove(LegacyRegistrationRecord.key(issuer: issuer, clientID: clientID))
    }

    /// The client ids with a registration row at `issuer`, sorted; session rows of an
    /// earlier version among them become registration rows.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    public func registeredClientIDs(issuer: String) async throws -> [String] {
        for clientID in try await LegacyRegistrationRecord.clientIDs(issuer: issuer, in: self) {
            _ = try await loadRegistration(issuer: issuer, clientID: clientID)
        }
        return try await withRegistrationConnection("listing the registrations") { connection in
            let query: PostgresQuery = """
                SELECT client_id FROM \(unescaped: self.registrationsTable) WHERE issuer = \(issuer) ORDER BY 1
                """
            var clientIDs: [String] = []
            for try await clientID in try await connection.rows(query, logger: self.logger).decode(String.self) {
                clientIDs.append(clientID)
            }
            return clientIDs
        }
    }

    // MARK: - Rows

    /// Runs `body` on the connection of the current ``withExclusiveAccess(to:_:)``
    /// transaction, else on a pooled connection (after the migration); maps the errors.
    func withRegistrationConnection<T: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        guard let transaction = currentTransaction else {
            try await migrate()
            return try await withPooledConnection(operation, body)
        }
        do {
            return try await withDeadline(operation, on: transaction.connection) { try await body(transaction.connection) }
        } catch {
            throw PostgresTokenStoreError.mapping(error, during: operation)
        }
    }

    /// Reads and opens the registration row of `clientID` at `issuer`.
    private func readRegistration(issuer: String, clientID: String) async throws -> RegistrationDocument? {
        try await withRegistrationConnection("reading the registration of \(clientID)") { connection in
            try await self.readRegistration(issuer: issuer, clientID: clientID, on: connection)
        }
    }

    private func readRegistration(issuer: String, clientID: String, on connection: PostgresConnection) async throws -> RegistrationDocument? {
        let query: PostgresQuery = """
            SELECT key_id, sealed FROM \(unescaped: registrationsTable) WHERE issuer = \(issuer) AND client_id = \(clientID)
            """
        var found: (String, ByteBuffer)?
        for try await row in try await connection.rows(query, logger: logger).decode((String, ByteBuffer).self) {
            found = row
        }
        guard let (keyID, sealed) = found else { return nil }
        let plaintext = try cipher.open(Data(sealed.readableBytesView), keyID: keyID, registrationOf: clientID, at: issuer)
        let document: RegistrationDocument
        do {
            document = try RegistrationDocument(data: plaintext)
        } catch let error as TokenStoreError where error.code == .corrupt {
            throw PostgresTokenStoreError(.corrupt, "the registration row of \(clientID) holds no readable registration")
        }
        guard document.issuer == issuer, document.clientID == clientID else {
            throw PostgresTokenStoreError(.corrupt, "the registration row of \(clientID) holds another registration")
        }
        return document
    }

    /// Seals again with the current key up to `limit` registration rows sealed with an
    /// older one; a row written meanwhile is left as its writer left it. Returns how many.
    func resealRegistrationRows(limit: Int) async throws -> Int {
        guard limit > 0 else { return 0 }
        let current = cipher.ring.current.id
        let query: PostgresQuery = """
            SELECT issuer, client_id, key_id, sealed FROM \(unescaped: registrationsTable)
            WHERE key_id <> \(current) ORDER BY 1, 2 LIMIT \(Int64(limit))
            """
        return try await withPooledConnection("sealing registrations again", idempotent: false) { [logger] connection in
            var rows: [(String, String, String, ByteBuffer)] = []
            for try await row in try await connection.rows(query, logger: logger).decode((String, String, String, ByteBuffer).self) {
                rows.append(row)
            }
            var resealed = 0
            for (issuer, clientID, keyID, sealed) in rows {
                let plaintext = try self.cipher.open(Data(sealed.readableBytesView), keyID: keyID, registrationOf: clientID, at: issuer)
                let (newKeyID, newSealed) = try self.cipher.seal(plaintext, registrationOf: clientID, at: issuer)
                let update: PostgresQuery = """
                    UPDATE \(unescaped: self.registrationsTable) SET key_id = \(newKeyID), sealed = \(ByteBuffer(bytes: newSealed))
                    WHERE issuer = \(issuer) AND client_id = \(clientID) AND key_id = \(keyID) AND sealed = \(sealed)
                    RETURNING 1
                    """
                for try await _ in try await connection.rows(update, logger: logger) { resealed += 1 }
            }
            return resealed
        }
    }
}
#endif
