#if Postgres
import Crypto
import Foundation
import Logging
import NIOCore
import OAuth2JOSE
import OAuth2Web
import PostgresNIO

/// The browser sessions and pending sign-ins of a web app's replicas in PostgreSQL
/// (`OAuth2Web`'s `WebSessionStore`): a session signed in on one replica is known to every
/// other, a sign-in started on one completes on any (once), and a logout on one — the
/// user's, or the provider's back-channel logout — ends the session on all.
///
/// It works through a ``PostgresTokenStore``'s connection pool, in its schema (tables
/// `oauth2_web_sessions` and `oauth2_web_pending_sign_ins`, made by the store's migrations):
/// run that store as a service, and give both to the app's `WebSignIn`, with a
/// ``PostgresReplayStore`` for the logout tokens:
///
/// ```swift
/// let signIn = WebSignIn(
///     client: client, configuration: configuration,
///     webSessions: PostgresWebSessionStore(store: tokenStore), tokenStore: tokenStore,
///     replayStore: PostgresReplayStore(store: tokenStore))
/// ```
///
/// - A session is one row under the hash of its cookie's id (the cookie itself is never
///   stored), with its issuer, subject and provider session id in columns of their own (a
///   logout finds the sessions it names by index) and the record in `record`, sealed with the
///   store's key ring like the token rows (AES-256-GCM, the key id inside, and again in the
///   column `key_id`, which ``PostgresTokenStore/keyUsage()`` counts and
///   ``PostgresTokenStore/resealRows(limit:)`` follows): its claims and CSRF token are not
///   readable in the database, and a row written there by hand, or copied from another
///   session, does not open.
///   Its last use is the column `last_seen_at`, which ``touch(_:now:)`` only ever moves
///   forward.
/// - A pending sign-in is one row under the SHA-256 of its `state` (base64url), taken by one
///   `DELETE … RETURNING`: two replicas that receive the same callback cannot both complete it.
///   Its record (the PKCE verifier, the nonce) is sealed in the same way. Each new one also
///   removes a few expired ones (at most ``expiredPendingRemovedPerInsert``), so that a flood
///   of login hits leaves no backlog once it has passed.
///
/// Expired rows are never served; ``session(_:idleLifetime:now:)`` deletes the one it meets,
/// and ``removeExpired(idleLifetime:now:)`` (a scheduled job) deletes the rest.
///
/// A row that cannot be opened — sealed with a key the ring no longer holds, altered, or
/// holding another session's record — is no session: reading it deletes it and answers
/// `nil` (logged at debug level, with the reason and nothing of the row), so that a retired
/// key or a damaged row signs its browser out instead of failing every request.
///
/// Every method throws ``PostgresTokenStoreError`` when the database cannot answer (the
/// sign-in routes then answer 503); the messages name the operation, never a session id,
/// a `state` or a record's content.
public struct PostgresWebSessionStore: WebSessionStore {
    /// The store whose pool and schema this one uses.
    public let store: PostgresTokenStore

    /// A web session store in `store`'s database and schema.
    public init(store: PostgresTokenStore) {
        self.store = store
    }

    var sessionsTable: String { "\(store.schema).oauth2_web_sessions" }
    var pendingTable: String { "\(store.schema).oauth2_web_pending_sign_ins" }

    // MARK: - Sessions

    /// See `WebSessionStore.session(_:idleLifetime:now:)`: the session stored under
    /// `idHash`, unless it has expired at `now` (`idleLifetime` after its last use, or its
    /// absolute expiry) — an expired one is deleted. A row that cannot be opened (its key
    /// retired, its record altered or another session's) is no session: deleted, `nil`.
    ///
    /// - Throws: ``PostgresTokenStoreError`` when the database cannot answer.
    public func session(_ idHash: String, idleLifetime: TimeInterval, now: Date) async throws -> WebSessionRecord? {
        try await store.migrate()
        let table = sessionsTable
        let idleCutoff = now.addingTimeInterval(-idleLifetime)
        return try await store.withPooledConnection("reading a web session") { [logger = store.logger, self] connection in
            let query: PostgresQuery = "SELECT record, last_seen_at FROM \(unescaped: table) WHERE id_hash = \(idHash)"
            var found: (record: ByteBuffer, lastSeenAt: Date)?
            for try await row in try await connection.rows(query, logger: logger).decode((ByteBuffer, Date).self) {
                found = row
            }
            guard let found else { return nil }
            let record: WebSessionRecord
            do {
                record = try sessionRecord(found.record, lastSeenAt: found.lastSeenAt)
                // A sealed record of another session, copied into this row, is not this session.
                guard record.idHash == idHash else {
                    throw PostgresTokenStoreError(.corrupt, "a stored web session holds the record of another session")
                }
            } catch let error as PostgresTokenStoreError {
                Self.logUnopenable(error, logger: logger)
                // Unless a save replaced the row meanwhile.
                let delete: PostgresQuery = "DELETE FROM \(unescaped: table) WHERE id_hash = \(idHash) AND record = \(found.record)"
                try await connection.run(delete, logger: logger)
                return nil
            }
            guard record.expiry(idleLifetime: idleLifetime) <= now else { return record }
            // Deleted only if the row's own columns say it has expired: another replica,
            // whose clock runs ahead, may have just touched it.
            let delete: PostgresQuery = """
                DELETE FROM \(unescaped: table)
                WHERE id_hash = \(idHash) AND (absolute_expiry <= \(now) OR last_seen_at <= \(idleCutoff))
                """
            try await connection.run(delete, logger: logger)
            return nil
        }
    }

    /// See `WebSessionStore.save(_:)`: saves `record` under its `idHash`, replacing any
    /// session there.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    public func save(_ record: WebSessionRecord) async throws {
        try await store.migrate()
        let table = sessionsTable
        let (keyID, sealed) = try seal(record, what: Self.sessionKind)
        let bytes = ByteBuffer(bytes: sealed)
        try await store.withPooledConnection("saving a web session") { [logger = store.logger] connection in
            let query: PostgresQuery = """
                INSERT INTO \(unescaped: table) (id_hash, issuer, subject, provider_session_id, key_id, record, last_seen_at, absolute_expiry)
                VALUES (\(record.idHash), \(record.issuer), \(record.subject), \(record.providerSessionID), \(keyID), \(bytes),
                    \(record.lastSeenAt), \(record.absoluteExpiry))
                ON CONFLICT (id_hash) DO UPDATE SET issuer = excluded.issuer, subject = excluded.subject,
                    provider_session_id = excluded.provider_session_id, key_id = excluded.key_id, record = excluded.record,
                    last_seen_at = excluded.last_seen_at, absolute_expiry = excluded.absolute_expiry
                """
            try await connection.run(query, logger: logger)
        }
    }

    /// See `WebSessionStore.touch(_:now:)`: sets the last use of the session `idHash` to
    /// `now`, if it is still stored and was last used before `now` (a replica whose request
    /// is older never moves it back).
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    public func touch(_ idHash: String, now: Date) async throws {
        try await store.migrate()
        let table = sessionsTable
        try await store.withPooledConnection("recording the use of a web session") { [logger = store.logger] connection in
            let query: PostgresQuery = """
                UPDATE \(unescaped: table) SET last_seen_at = \(now) WHERE id_hash = \(idHash) AND last_seen_at < \(now)
                """
            try await connection.run(query, logger: logger)
        }
    }

    /// See `WebSessionStore.remove(_:)`: removes the session `idHash`; returns it if it was
    /// stored (a row that cannot be opened is removed, and is no session: `nil`).
    ///
    /// - Throws: ``PostgresTokenStoreError``. A connection lost during the removal is not
    ///   retried (the second attempt could not return the removed session).
    @discardableResult
    public func remove(_ idHash: String) async throws -> WebSessionRecord? {
        try await store.migrate()
        let query: PostgresQuery = "DELETE FROM \(unescaped: sessionsTable) WHERE id_hash = \(idHash) RETURNING record, last_seen_at"
        return try await removing(query, "removing a web session").first
    }

    /// See `WebSessionStore.sessions(issuer:subject:providerSessionID:)`: every session of
    /// `issuer` whose provider session is `providerSessionID` (when given) and whose subject
    /// is `subject` (when given), expired or not. With neither, none. Rows that cannot be
    /// opened are no sessions: left out.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    public func sessions(issuer: String, subject: String?, providerSessionID: String?) async throws -> [WebSessionRecord] {
        let select = "SELECT record, last_seen_at FROM \(sessionsTable)"
        guard let query = Self.query(select, issuer: issuer, subject: subject, providerSessionID: providerSessionID, "") else { return [] }
        try await store.migrate()
        return try await store.withPooledConnection("reading the web sessions of a logout") { [logger = store.logger, self] connection in
            try await records(connection.rows(query, logger: logger))
        }
    }

    /// See `WebSessionStore.removeSessions(issuer:subject:providerSessionID:)`: removes, in
    /// one statement, every session of `issuer` whose provider session is
    /// `providerSessionID` (when given) and whose subject is `subject` (when given); returns
    /// them (rows that cannot be opened are removed too, and left out). With neither, removes
    /// nothing.
    ///
    /// - Throws: ``PostgresTokenStoreError``. A connection lost during the removal is not
    ///   retried: the caller learns that it may not have ended them (a back-channel logout
    ///   then answers with an error, and the provider may send it again).
    public func removeSessions(issuer: String, subject: String?, providerSessionID: String?) async throws -> [WebSessionRecord] {
        let delete = "DELETE FROM \(sessionsTable)", returning = "RETURNING record, last_seen_at"
        guard let query = Self.query(delete, issuer: issuer, subject: subject, providerSessionID: providerSessionID, returning) else { return [] }
        try await store.migrate()
        return try await removing(query, "removing the web sessions of a logout")
    }

    /// `head`, the condition naming the sessions of a logout, and `tail`; `nil` when the
    /// logout names none.
    private static func query(_ head: String, issuer: String, subject: String?, providerSessionID: String?, _ tail: String) -> PostgresQuery? {
        switch (subject, providerSessionID) {
        case (let subject?, let sid?):
            "\(unescaped: head) WHERE issuer = \(issuer) AND provider_session_id = \(sid) AND subject = \(subject) \(unescaped: tail)"
        case (nil, let sid?): "\(unescaped: head) WHERE issuer = \(issuer) AND provider_session_id = \(sid) \(unescaped: tail)"
        case (let subject?, nil): "\(unescaped: head) WHERE issuer = \(issuer) AND subject = \(subject) \(unescaped: tail)"
        case (nil, nil): nil
        }
    }

    /// The sessions of rows of `(record, last_seen_at)`, without those that cannot be opened.
    private func records(_ rows: PostgresRowSequence) async throws -> [WebSessionRecord] {
        var records: [WebSessionRecord] = []
        for try await (record, lastSeenAt) in rows.decode((ByteBuffer, Date).self) {
            do {
                records.append(try sessionRecord(record, lastSeenAt: lastSeenAt))
            } catch let error as PostgresTokenStoreError {
                Self.logUnopenable(error, logger: store.logger)
            }
        }
        return records
    }

    /// The sessions a `DELETE … RETURNING record, last_seen_at` removed.
    private func removing(_ query: PostgresQuery, _ operation: String) async throws -> [WebSessionRecord] {
        try await store.withPooledConnection(operation, idempotent: false) { [logger = store.logger, self] connection in
            try await records(connection.rows(query, logger: logger))
        }
    }

    // MARK: - Pending sign-ins

    /// How many expired pending sign-ins each ``insert(_:)`` removes at most.
    public static let expiredPendingRemovedPerInsert = 16

    /// See `WebSessionStore.insert(_:)`: keeps `pending` under the hash of its request's
    /// `state` until it expires; in the same statement, removes up to
    /// ``expiredPendingRemovedPerInsert`` pending sign-ins that have expired by the store's
    /// clock (``PostgresTokenStore/Configuration/now``), oldest first — bounded work, through
    /// the index on `expires_at`, skipping rows another replica is removing.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    public func insert(_ pending: PendingSignIn) async throws {
        try await store.migrate()
        let table = pendingTable
        let stateHash = Self.hash(pending.request.state)
        let (keyID, sealed) = try seal(pending, what: Self.pendingKind)
        let bytes = ByteBuffer(bytes: sealed)
        let now = store.configuration.now()
        let limit = Int64(Self.expiredPendingRemovedPerInsert)
        try await store.withPooledConnection("recording a pending sign-in") { [logger = store.logger] connection in
            // The row being written is never among those removed: one statement may not both
            // delete and upsert a row.
            let query: PostgresQuery = """
                WITH expired AS (
                    DELETE FROM \(unescaped: table) WHERE state_hash IN (
                        SELECT state_hash FROM \(unescaped: table) WHERE expires_at <= \(now) AND state_hash <> \(stateHash)
                        ORDER BY expires_at LIMIT \(limit) FOR UPDATE SKIP LOCKED))
                INSERT INTO \(unescaped: table) (state_hash, key_id, record, expires_at)
                VALUES (\(stateHash), \(keyID), \(bytes), \(pending.expiresAt))
                ON CONFLICT (state_hash) DO UPDATE SET key_id = excluded.key_id, record = excluded.record, expires_at = excluded.expires_at
                """
            try await connection.run(query, logger: logger)
        }
    }

    /// See `WebSessionStore.takePendingSignIn(state:now:)`: removes and returns the pending
    /// sign-in of `state` if it has not expired at `now`, in one
    /// `DELETE … WHERE state_hash = … AND expires_at > … RETURNING record`: of any number of
    /// replicas taking the same `state` at once, one gets it. A row that cannot be opened
    /// (its key retired, its record altered or another sign-in's) is no sign-in: removed all
    /// the same, `nil`.
    ///
    /// - Throws: ``PostgresTokenStoreError`` when the database cannot answer. A connection
    ///   lost during the statement is not retried (the sign-in may have been taken): the
    ///   browser signs in again.
    public func takePendingSignIn(state: String, now: Date) async throws -> PendingSignIn? {
        try await store.migrate()
        let table = pendingTable
        let stateHash = Self.hash(state)
        return try await store.withPooledConnection("taking a pending sign-in", idempotent: false) { [logger = store.logger, self] connection in
            let query: PostgresQuery = """
                DELETE FROM \(unescaped: table) WHERE state_hash = \(stateHash) AND expires_at > \(now) RETURNING record
                """
            var taken: ByteBuffer?
            for try await record in try await connection.rows(query, logger: logger).decode(ByteBuffer.self) {
                taken = record
            }
            guard let taken else { return nil }
            do {
                let pending = try open(PendingSignIn.self, from: taken, what: Self.pendingKind)
                // A sealed record of another sign-in, copied into this row, is not this one.
                guard Self.hash(pending.request.state) == stateHash else {
                    throw PostgresTokenStoreError(.corrupt, "a stored pending sign-in holds the record of another sign-in")
                }
                return pending
            } catch let error as PostgresTokenStoreError {
                Self.logUnopenable(error, logger: logger)
                return nil
            }
        }
    }

    // MARK: - Cleaning up

    /// Removes the sessions that have expired at `now` (the store's clock by default) —
    /// `idleLifetime` after their last use, or at their absolute expiry — and the pending
    /// sign-ins that have; returns how many rows went (sessions and pending sign-ins).
    ///
    /// Call it now and then (a scheduled job) with the app's
    /// `WebSignInConfiguration.idleLifetime`; expired rows never make an answer wrong, they
    /// only take room.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    @discardableResult
    public func removeExpired(idleLifetime: TimeInterval, now: Date? = nil) async throws -> Int {
        try await store.migrate()
        let cutoff = now ?? store.configuration.now()
        let idleCutoff = cutoff.addingTimeInterval(-idleLifetime)
        let sessions = sessionsTable
        let pending = pendingTable
        return try await store.withPooledConnection("removing expired web sessions") { [logger = store.logger] connection in
            var removed = 0
            let expiredSessions: PostgresQuery = """
                DELETE FROM \(unescaped: sessions) WHERE absolute_expiry <= \(cutoff) OR last_seen_at <= \(idleCutoff) RETURNING 1
                """
            for try await _ in try await connection.rows(expiredSessions, logger: logger) { removed += 1 }
            let expiredSignIns: PostgresQuery = "DELETE FROM \(unescaped: pending) WHERE expires_at <= \(cutoff) RETURNING 1"
            for try await _ in try await connection.rows(expiredSignIns, logger: logger) { removed += 1 }
            return removed
        }
    }

    // MARK: - Encoding

    /// The SHA-256 of `value`, base64url: the key of a pending sign-in (its `state` is never
    /// stored as a key, or logged).
    static func hash(_ value: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(value.utf8))))
    }

    static let sessionKind = "web session", pendingKind = "pending sign-in"

    /// A session's record as stored, with its last use from the `last_seen_at` column (moved
    /// on by ``touch(_:now:)``; kept to the microsecond, so the record's own, more precise,
    /// value stands when the column was not moved).
    func sessionRecord(_ bytes: ByteBuffer, lastSeenAt: Date) throws -> WebSessionRecord {
        var record = try open(WebSessionRecord.self, from: bytes, what: Self.sessionKind)
        record.lastSeenAt = max(record.lastSeenAt, lastSeenAt)
        return record
    }

    /// `value`, JSON-encoded and sealed with the store's current key, bound to its kind; and
    /// that key's id.
    func seal(_ value: some Encodable, what: String) throws -> (keyID: String, sealed: [UInt8]) {
        let plaintext: Data
        do {
            plaintext = try JSONEncoder().encode(value)
        } catch {
            throw PostgresTokenStoreError(.corrupt, "the \(what) could not be encoded")
        }
        return try store.cipher.sealEnvelope(plaintext, binding: ["swift-oauth2 postgres \(what)"])
    }

    /// Logs, at debug level, why a row was taken for no session: the error's code and
    /// message (which name the kind of row and the key id, never a hash or a record's content).
    static func logUnopenable(_ error: PostgresTokenStoreError, logger: Logger) {
        logger.debug("a stored web record cannot be opened: treated as absent", metadata: ["reason": "\(error.code): \(error.message)"])
    }

    /// A sealed `what` read back.
    func open<T: Decodable>(_ type: T.Type, from bytes: ByteBuffer, what: String) throws -> T {
        let plaintext = try store.cipher.openEnvelope(bytes.readableBytesView, binding: ["swift-oauth2 postgres \(what)"], row: "a stored \(what)")
        do {
            return try JSONDecoder().decode(type, from: plaintext)
        } catch {
            // Not the decoder's message: it may quote the record's values.
            throw PostgresTokenStoreError(.corrupt, "a stored \(what) could not be read")
        }
    }
}
#endif
