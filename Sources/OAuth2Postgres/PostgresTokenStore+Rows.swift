#if Postgres
import Foundation
import NIOCore
import OAuth2
import OAuth2JOSE
import PostgresNIO

extension PostgresTokenStore {
    /// A row as read: its session, version, key id, and the document's unknown members.
    struct Row {
        let session: StoredTokenSession
        let version: Int64
        let keyID: String
        let additionalFields: [String: JSONValue]
    }

    // MARK: - TokenStore

    /// The session stored under `key`, or `nil`.
    ///
    /// Inside ``withExclusiveAccess(to:_:)`` it reads the row on the transaction's connection
    /// (never the cache), and the version it read is the one the transaction's ``save(_:)``
    /// expects. Outside, a session the cache holds costs no round trip.
    ///
    /// - Throws: ``PostgresTokenStoreError`` (``PostgresTokenStoreError/Code/unknownKey``,
    ///   ``PostgresTokenStoreError/Code/corrupt``, connection errors), or `TokenStoreError`
    ///   when the document inside is from an unsupported version.
    public func load(_ key: TokenSessionKey) async throws -> StoredTokenSession? {
        try await loadVersioned(key)?.session
    }

    /// The session stored under `key` with its row version (for ``save(_:ifVersion:)``), or `nil`.
    ///
    /// - Throws: as ``load(_:)``.
    public func loadVersioned(_ key: TokenSessionKey) async throws -> (session: StoredTokenSession, version: Int64)? {
        if let transaction = currentTransaction {
            let row = try await read(key, on: transaction.connection)
            state.withLock { $0.statistics.lockedReads += 1 }
            transaction.reads.withLock { $0[key] = (row?.version, row?.additionalFields ?? [:]) }
            return row.map { ($0.session, $0.version) }
        }
        // A hit first: nothing else (the schema was migrated before anything was cached;
        // the key's lock id is hashed only for an entry to insert).
        let (cached, generation) = state.withLock { state in
            let entry = state.cache.lookup(key)
            if entry != nil { state.statistics.cacheHits += 1 } else { state.statistics.cacheMisses += 1 }
            return (entry, state.cache.generation)
        }
        if let cached {
            metrics.cacheHit()
            if let session = cached.session { return (session, cached.version) }
            return nil
        }
        metrics.cacheMiss()
        try await migrate()
        let lockID = lockID(key)
        let row = try await withPooledConnection("reading the row of \(key)") { connection in
            try await self.read(key, on: connection)
        }
        state.withLock { state in
            state.cache.insert(key, SessionCache.Entry(session: row?.session, version: row?.version ?? 0, lockID: lockID), ifGeneration: generation)
        }
        return row.map { ($0.session, $0.version) }
    }

    /// Writes `session`.
    ///
    /// Inside ``withExclusiveAccess(to:_:)``, after a ``load(_:)`` of the same key, it is a
    /// compare-and-set on the version that load read (and an insert only if there was no
    /// row); otherwise it replaces whatever row there is. Either way the row's version moves
    /// on, the document is sealed with the key ring's current key, and every replica is
    /// notified.
    ///
    /// - Throws: ``PostgresTokenStoreError/Code/conflict`` when another writer changed the
    ///   row since the transaction read it (nothing written); connection errors.
    public func save(_ session: StoredTokenSession) async throws {
        let key = session.key
        if let transaction = currentTransaction {
            let read = transaction.reads.withLock { $0[key] }
            let version = try await write(
                session, expected: read.map { .some($0.version) } ?? .none, additionalFields: read?.additionalFields ?? [:],
                on: transaction.connection)
            transaction.reads.withLock { $0[key] = (version, read?.additionalFields ?? [:]) }
            transaction.written.withLock { _ = $0.insert(lockID(key)) }
            metrics.lockedWrite()
            return
        }
        try await migrate()
        _ = try await withPooledConnection("writing the row of \(key)") { connection in
            try await self.write(session, expected: .none, additionalFields: [:], on: connection)
        }
        invalidate([lockID(key)])
    }

    /// Writes `session` only if its row is still at `version` (`nil`: only if there is no
    /// row), and returns the row's new version.
    ///
    /// - Throws: ``PostgresTokenStoreError/Code/conflict`` when the row is at another
    ///   version (nothing written); connection errors.
    @discardableResult
    public func save(_ session: StoredTokenSession, ifVersion version: Int64?) async throws -> Int64 {
        let key = session.key
        if let transaction = currentTransaction {
            let written = try await write(session, expected: .some(version), additionalFields: [:], on: transaction.connection)
            transaction.written.withLock { _ = $0.insert(lockID(key)) }
            return written
        }
        try await migrate()
        let written = try await withPooledConnection("writing the row of \(key)", idempotent: false) { connection in
            try await self.write(session, expected: .some(version), additionalFields: [:], on: connection)
        }
        invalidate([lockID(key)])
        return written
    }

    /// Removes the row of `key` (a missing row is not an error) and notifies every replica.
    ///
    /// Inside ``withExclusiveAccess(to:_:)``, after a ``load(_:)`` of the same key, the row
    /// goes only if it is still at the version read.
    ///
    /// - Throws: ``PostgresTokenStoreError/Code/conflict`` when another writer changed the
    ///   row since the transaction read it; connection errors.
    public func remove(_ key: TokenSessionKey) async throws {
        if let transaction = currentTransaction {
            let read = transaction.reads.withLock { $0[key] }
            try await delete(key, expected: read?.version, on: transaction.connection)
            transaction.reads.withLock { $0[key] = (nil, [:]) }
            transaction.written.withLock { _ = $0.insert(lockID(key)) }
            return
        }
        try await migrate()
        try await withPooledConnection("removing the row of \(key)") { connection in
            try await self.delete(key, expected: nil, on: connection)
        }
        invalidate([lockID(key)])
    }

    /// The keys of every stored session, sorted by issuer, client id and account.
    ///
    /// - Throws: connection errors.
    public func list() async throws -> [TokenSessionKey] {
        let query: PostgresQuery = "SELECT issuer, client_id, account FROM \(unescaped: schema).oauth2_sessions ORDER BY 1, 2, 3"
        if let transaction = currentTransaction {
            return try await Self.keys(transaction.connection, query, logger: logger)
        }
        try await migrate()
        return try await withPooledConnection("listing the sessions") { [logger] connection in
            try await Self.keys(connection, query, logger: logger)
        }
    }

    // MARK: - Fleet operations

    /// Removes every session of `account` with the client `clientID` of `issuer` — all of an
    /// account's sessions when `account` is `nil` — and notifies every replica; returns how
    /// many rows went.
    ///
    /// - Throws: connection errors.
    @discardableResult
    public func removeAll(issuer: String, clientID: String, account: String? = nil) async throws -> Int {
        try await migrate()
        let query: PostgresQuery = """
            DELETE FROM \(unescaped: schema).oauth2_sessions
            WHERE issuer = \(issuer) AND client_id = \(clientID) AND (\(account)::text IS NULL OR account = \(account))
            RETURNING issuer, client_id, account
            """
        return try await delete(query, "removing sessions")
    }

    /// Removes the rows that can no longer be used at ``Configuration/now``: those without a
    /// refresh token whose access token has expired, and those whose refresh token's known
    /// lifetime (`refresh_expires_in`) has passed — with `grace` more seconds for each.
    /// Returns how many rows went; every replica is notified.
    ///
    /// - Throws: connection errors.
    @discardableResult
    public func removeExpired(grace: TimeInterval = 0) async throws -> Int {
        try await migrate()
        let cutoff = configuration.now().addingTimeInterval(-grace)
        let query: PostgresQuery = """
            DELETE FROM \(unescaped: schema).oauth2_sessions WHERE expires_at < \(cutoff)
            RETURNING issuer, client_id, account
            """
        return try await delete(query, "removing expired sessions")
    }

    /// Runs `query` (a `DELETE … RETURNING issuer, client_id, account`) and notifies every
    /// replica of each key it removed, in one transaction: the notifications go out with the
    /// commit, or neither happens. Returns how many rows went.
    private func delete(_ query: PostgresQuery, _ operation: String) async throws -> Int {
        let keys = try await withPooledConnection(operation, idempotent: false) { [logger, channel] connection in
            try await connection.run("BEGIN", logger: logger)
            do {
                let keys = try await Self.keys(connection, query, logger: logger)
                let payloads = keys.map { String(self.lockID($0)) }
                if !payloads.isEmpty {
                    try await connection.run("SELECT pg_notify(\(channel), p) FROM unnest(\(payloads)::text[]) AS p", logger: logger)
                }
                try await connection.run("COMMIT", logger: logger)
                return keys
            } catch {
                await self.rollback(connection)
                throw error
            }
        }
        invalidate(Set(keys.map(lockID)))
        return keys.count
    }

    /// How many rows each key id seals — sessions', registrations',
    /// ``PostgresWebSessionStore``'s web sessions' and pending sign-ins', and
    /// ``PostgresDownstreamTokenStore``'s downstream tokens together: a key of
    /// the ring can go once no row names it.
    ///
    /// - Throws: connection errors.
    public func keyUsage() async throws -> [String: Int] {
        try await migrate()
        let query: PostgresQuery = """
            SELECT key_id, count(*) FROM (
                SELECT key_id FROM \(unescaped: schema).oauth2_sessions
                UNION ALL SELECT key_id FROM \(unescaped: schema).oauth2_registrations
                UNION ALL SELECT key_id FROM \(unescaped: schema).oauth2_web_sessions
                UNION ALL SELECT key_id FROM \(unescaped: schema).oauth2_web_pending_sign_ins
                UNION ALL SELECT key_id FROM \(unescaped: schema).oauth2_downstream_tokens) AS rows
            GROUP BY key_id
            """
        return try await withPooledConnection("counting rows by key") { [logger] connection in
            var usage: [String: Int] = [:]
            for try await (keyID, count) in try await connection.rows(query, logger: logger).decode((String, Int64).self) {
                usage[keyID] = Int(count)
            }
            return usage
        }
    }

    /// Seals again with the current key up to `limit` rows sealed with an older one, each
    /// session's under its lock (so that no renewal is overwritten), then registrations'
    /// (a registration written meanwhile is left as it is), then ``PostgresWebSessionStore``'s
    /// web sessions and pending sign-ins sealed with a previous key of the ring (one written
    /// meanwhile is left as it is; one that does not open is no session, and is removed),
    /// then ``PostgresDownstreamTokenStore``'s tokens of a previous key (one that does not
    /// open is removed: the next request fetches it again); returns how many rows it sealed
    /// again or removed. Call it until it returns 0.
    ///
    /// Web rows of a key the ring no longer holds are left: they open nowhere, go when
    /// read, and ``keyUsage()`` names their key until then.
    ///
    /// - Throws: ``PostgresTokenStoreError/Code/unknownKey`` for a session's or
    ///   registration's row whose key the ring lacks; connection errors.
    @discardableResult
    public func resealRows(limit: Int = 1000) async throws -> Int {
        try await migrate()
        let query: PostgresQuery = """
            SELECT issuer, client_id, account FROM \(unescaped: schema).oauth2_sessions
            WHERE key_id <> \(cipher.ring.current.id) ORDER BY 1, 2, 3 LIMIT \(Int64(max(0, limit)))
            """
        let keys = try await withPooledConnection("finding rows of older keys") { [logger] connection in
            try await Self.keys(connection, query, logger: logger)
        }
        var resealed = 0
        for key in keys {
            let done = try await withExclusiveAccess(to: key) {
                guard let session = try await self.load(key) else { return false }
                try await self.save(session)
                return true
            }
            if done { resealed += 1 }
        }
        let registrations = try await resealRegistrationRows(limit: max(0, limit) - keys.count)
        let web = try await PostgresWebSessionStore(store: self).resealRows(limit: max(0, limit) - keys.count - registrations)
        let downstream = try await PostgresDownstreamTokenStore.resealRows(of: self, limit: max(0, limit) - keys.count - registrations - web)
        return resealed + registrations + web + downstream
    }

    // MARK: - SQL

    /// Reads and opens the row of `key`.
    func read(_ key: TokenSessionKey, on connection: PostgresConnection) async throws -> Row? {
        let query: PostgresQuery = """
            SELECT version, key_id, sealed FROM \(unescaped: schema).oauth2_sessions
            WHERE issuer = \(key.issuer) AND client_id = \(key.clientID) AND account = \(key.account)
            """
        var found: (Int64, String, ByteBuffer)?
        do {
            found = try await withDeadline("reading the row of \(key)", on: connection) { [logger] in
                var found: (Int64, String, ByteBuffer)?
                for try await row in try await connection.rows(query, logger: logger).decode((Int64, String, ByteBuffer).self) {
                    found = row
                }
                return found
            }
        } catch {
            throw PostgresTokenStoreError.mapping(error, during: "reading the row of \(key)")
        }
        guard let (version, keyID, sealed) = found else { return nil }
        let plaintext = try cipher.open(Data(sealed.readableBytesView), keyID: keyID, for: key)
        let document = try TokenDocument(data: plaintext)
        guard document.session.key == key else {
            throw PostgresTokenStoreError(.corrupt, "the row of \(key) holds the document of another session")
        }
        return Row(session: document.session, version: version, keyID: keyID, additionalFields: document.additionalFields)
    }

    /// Seals and writes `session`: a compare-and-set on `expected` when it is given
    /// (`.some(nil)`: insert only), else an upsert. Returns the new version.
    func write(
        _ session: StoredTokenSession, expected: Int64??, additionalFields: [String: JSONValue], on connection: PostgresConnection
    ) async throws -> Int64 {
        let key = session.key
        let plaintext: Data
        do {
            plaintext = try TokenDocument(session: session, additionalFields: additionalFields).encoded()
        } catch {
            throw PostgresTokenStoreError(.corrupt, "the session of \(key) does not encode as a token document")
        }
        let (keyID, sealed) = try cipher.seal(plaintext, for: key)
        let bytes = ByteBuffer(bytes: sealed)
        let expiresAt = Self.rowExpiry(session)
        let updatedAt = configuration.now()
        let payload = String(lockID(key))
        let table = "\(schema).oauth2_sessions"
        let query: PostgresQuery
        switch expected {
        case .none:
            query = """
                WITH written AS (
                    INSERT INTO \(unescaped: table) AS t (issuer, client_id, account, version, key_id, sealed, expires_at, updated_at)
                    VALUES (\(key.issuer), \(key.clientID), \(key.account), 1, \(keyID), \(bytes), \(expiresAt), \(updatedAt))
                    ON CONFLICT (issuer, client_id, account) DO UPDATE
                    SET version = t.version + 1, key_id = excluded.key_id, sealed = excluded.sealed,
                        expires_at = excluded.expires_at, updated_at = excluded.updated_at
                    RETURNING version)
                SELECT version, pg_notify(\(channel), \(payload))::text FROM written
                """
        case .some(.none):
            query = """
                WITH written AS (
                    INSERT INTO \(unescaped: table) (issuer, client_id, account, version, key_id, sealed, expires_at, updated_at)
                    VALUES (\(key.issuer), \(key.clientID), \(key.account), 1, \(keyID), \(bytes), \(expiresAt), \(updatedAt))
                    ON CONFLICT (issuer, client_id, account) DO NOTHING
                    RETURNING version)
                SELECT version, pg_notify(\(channel), \(payload))::text FROM written
                """
        case .some(.some(let version)):
            query = """
                WITH written AS (
                    UPDATE \(unescaped: table)
                    SET version = version + 1, key_id = \(keyID), sealed = \(bytes), expires_at = \(expiresAt), updated_at = \(updatedAt)
                    WHERE issuer = \(key.issuer) AND client_id = \(key.clientID) AND account = \(key.account) AND version = \(version)
                    RETURNING version)
                SELECT version, pg_notify(\(channel), \(payload))::text FROM written
                """
        }
        var written: Int64?
        do {
            written = try await withDeadline("writing the row of \(key)", on: connection) { [logger] in
                var written: Int64?
                for try await (version, _) in try await connection.rows(query, logger: logger).decode((Int64, String?).self) {
                    written = version
                }
                return written
            }
        } catch {
            throw PostgresTokenStoreError.mapping(error, during: "writing the row of \(key)")
        }
        guard let written else {
            metrics.conflict()
            let expectation = expected.flatMap { $0 }.map { "version \($0)" } ?? "no row"
            throw PostgresTokenStoreError(.conflict, "the row of \(key) changed since it was read (expected \(expectation)); nothing written")
        }
        return written
    }

    /// Deletes the row of `key`; with `expected`, only at that version (a row at another
    /// version is a conflict; no row is not).
    func delete(_ key: TokenSessionKey, expected: Int64?, on connection: PostgresConnection) async throws {
        let payload = String(lockID(key))
        let table = "\(schema).oauth2_sessions"
        let query: PostgresQuery = """
            WITH gone AS (
                DELETE FROM \(unescaped: table)
                WHERE issuer = \(key.issuer) AND client_id = \(key.clientID) AND account = \(key.account)
                    AND (\(expected)::bigint IS NULL OR version = \(expected))
                RETURNING version)
            SELECT version, pg_notify(\(channel), \(payload))::text FROM gone
            """
        var deleted = false
        do {
            deleted = try await withDeadline("removing the row of \(key)", on: connection) { [logger] in
                var deleted = false
                for try await _ in try await connection.rows(query, logger: logger).decode((Int64, String?).self) { deleted = true }
                return deleted
            }
            guard !deleted, expected != nil else { return }
            // Nothing deleted although the transaction had read a row: is one there now?
            let check: PostgresQuery = """
                SELECT version FROM \(unescaped: table)
                WHERE issuer = \(key.issuer) AND client_id = \(key.clientID) AND account = \(key.account)
                """
            deleted = try await withDeadline("removing the row of \(key)", on: connection) { [logger] in
                var found = false
                for try await _ in try await connection.rows(check, logger: logger).decode(Int64.self) { found = true }
                return found
            }
        } catch {
            throw PostgresTokenStoreError.mapping(error, during: "removing the row of \(key)")
        }
        if deleted {
            metrics.conflict()
            throw PostgresTokenStoreError(.conflict, "the row of \(key) changed since it was read; not removed")
        }
    }

    static func keys(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger) async throws -> [TokenSessionKey] {
        var keys: [TokenSessionKey] = []
        for try await (issuer, clientID, account) in try await connection.rows(query, logger: logger).decode((String, String, String).self) {
            keys.append(TokenSessionKey(issuer: issuer, clientID: clientID, account: account))
        }
        return keys
    }

    /// When the row stops being of use: the access token's expiry without a refresh token,
    /// the refresh token's known expiry (`refresh_expires_in`) with one, else never.
    static func rowExpiry(_ session: StoredTokenSession) -> Date? {
        let tokens = session.tokens
        guard tokens.refreshToken != nil else { return tokens.expiresAt }
        if let seconds = tokens.additionalFields["refresh_expires_in"]?.doubleValue, seconds.isFinite, seconds > 0 {
            return tokens.issuedAt.addingTimeInterval(seconds)
        }
        return nil
    }
}
#endif
