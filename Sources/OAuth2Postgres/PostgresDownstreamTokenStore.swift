#if Postgres
import Foundation
import Logging
import NIOCore
import OAuth2
import OAuth2Internals
import PostgresNIO
import ServiceLifecycle

/// The downstream tokens of a fleet (`DownstreamTokens`) in PostgreSQL: one renewal per key
/// for the whole fleet, tokens sealed like the sessions' rows, and a user's session ended on
/// one replica ended on all.
///
/// It works through a ``PostgresTokenStore``'s connection pool, keys and schema (table
/// `oauth2_downstream_tokens`, made by the store's migrations). Run it as a service next to
/// the store: its ``run()`` listens for session ends announced by the other replicas.
///
/// ```swift
/// let downstreamStore = PostgresDownstreamTokenStore(store: tokenStore)
/// let downstream = DownstreamTokens(store: downstreamStore)
/// let group = ServiceGroup(services: [tokenStore, downstreamStore, app], gracefulShutdownSignals: [.sigterm], logger: logger)
/// ```
///
/// - **One row per key**, named by `DownstreamTokenKey/storageID` (a digest of every
///   parameter), with the digest of its user session (`DownstreamTokenKey/sessionID(_:)`),
///   never the session itself; the token is sealed with the store's current key (AES-256-GCM),
///   bound to the row's key, and the row names its key id: ``PostgresTokenStore/keyUsage()``
///   counts these rows, and ``PostgresTokenStore/resealRows(limit:)`` seals them again.
/// - **Fleet lock**: ``withExclusiveAccess(to:_:)`` is a transaction holding
///   `pg_advisory_xact_lock` on the key's digest; ``load(_:)`` and ``save(_:for:)`` inside it
///   run on its connection. `DownstreamTokens` re-reads the row under the lock, so the
///   replicas that waited use the token the first one fetched.
/// - **Session ends**: ``removeSession(_:)`` deletes the session's rows and sends `NOTIFY` on
///   the schema's downstream channel; every replica's listener tells its `DownstreamTokens`,
///   which drop the session's tokens from memory.
/// - **Bounded**: at most ``capacity`` rows; a write beyond it removes expired rows, then
///   those that expire soonest. ``removeExpired(now:)`` keeps the table small.
public final class PostgresDownstreamTokenStore: DownstreamTokenStore, Service, Sendable {
    /// The store whose pool, keys and schema this one uses.
    public let store: PostgresTokenStore
    /// The most rows kept.
    public let capacity: Int
    let table: String
    let channel: String
    private let observers = Locked<(handlers: [UInt64: @Sendable (String?) -> Void], next: UInt64, connections: Int)>(([:], 0, 0))

    /// Downstream tokens in `store`'s database and schema, at most `capacity` of them (at least 1).
    public init(store: PostgresTokenStore, capacity: Int = 100_000) {
        self.store = store
        self.capacity = max(1, capacity)
        self.table = "\(store.schema).oauth2_downstream_tokens"
        self.channel = store.schema + "_oauth2_downstream"
    }

    static func binding(_ storageID: String) -> [String] { ["swift-oauth2 postgres downstream token", storageID] }

    /// The connection of the lock this task holds, or a pooled one.
    private func withConnection<T: Sendable>(
        _ operation: String, idempotent: Bool = true, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await store.migrate()
        if let transaction = store.currentTransaction {
            do {
                return try await store.withDeadline(operation, on: transaction.connection) { try await body(transaction.connection) }
            } catch {
                throw PostgresTokenStoreError.mapping(error, during: operation)
            }
        }
        return try await store.withPooledConnection(operation, idempotent: idempotent, body)
    }

    /// See `DownstreamTokenStore.load(_:)`.
    ///
    /// - Throws: ``PostgresTokenStoreError`` — ``PostgresTokenStoreError/Code/corrupt`` for a
    ///   row that does not open (altered, or another row's), ``PostgresTokenStoreError/Code/unknownKey``
    ///   for a row of a key the ring lacks, connection errors.
    public func load(_ key: DownstreamTokenKey) async throws -> DownstreamToken? {
        let query: PostgresQuery = "SELECT key_id, sealed FROM \(unescaped: table) WHERE key_hash = \(key.storageID)"
        let found = try await withConnection("reading a downstream token") { [logger = store.logger] connection in
            var found: (String, ByteBuffer)?
            for try await row in try await connection.rows(query, logger: logger).decode((String, ByteBuffer).self) { found = row }
            return found
        }
        guard let (keyID, sealed) = found else { return nil }
        let plaintext = try store.cipher.open(
            Data(sealed.readableBytesView), keyID: keyID, binding: Self.binding(key.storageID), row: "the downstream token row \(key.storageID.prefix(12))")
        do {
            return try JSONDecoder().decode(DownstreamToken.self, from: plaintext)
        } catch {
            throw PostgresTokenStoreError(.corrupt, "the downstream token row \(key.storageID.prefix(12)) holds no token")
        }
    }

    /// See `DownstreamTokenStore.save(_:for:)`: an upsert, then, beyond ``capacity``, expired
    /// rows go, then those that expire soonest.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    public func save(_ token: DownstreamToken, for key: DownstreamTokenKey) async throws {
        let (keyID, sealed) = try store.cipher.seal(try JSONEncoder().encode(token), binding: Self.binding(key.storageID))
        let now = store.configuration.now()
        let session = key.session.map(DownstreamTokenKey.sessionID)
        let upsert: PostgresQuery = """
            INSERT INTO \(unescaped: table) (key_hash, session_hash, key_id, sealed, expires_at, updated_at)
            VALUES (\(key.storageID), \(session), \(keyID), \(ByteBuffer(data: sealed)), \(token.expiresAt), \(now))
            ON CONFLICT (key_hash) DO UPDATE SET session_hash = excluded.session_hash, key_id = excluded.key_id,
                sealed = excluded.sealed, expires_at = excluded.expires_at, updated_at = excluded.updated_at
            """
        let bound: PostgresQuery = """
            DELETE FROM \(unescaped: table) WHERE key_hash IN (
                SELECT key_hash FROM \(unescaped: table) WHERE key_hash <> \(key.storageID)
                ORDER BY expires_at LIMIT greatest(0, (SELECT count(*) FROM \(unescaped: table)) - \(Int64(capacity))))
            """
        try await withConnection("writing a downstream token") { [logger = store.logger] connection in
            try await connection.run(upsert, logger: logger)
            try await connection.run(bound, logger: logger)
        }
    }

    /// See `DownstreamTokenStore.removeSession(_:)`: the rows go, and every replica's
    /// listener hears of it.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    @discardableResult
    public func removeSession(_ session: String) async throws -> Int {
        let id = DownstreamTokenKey.sessionID(session)
        let removed = try await withConnection("removing a session's downstream tokens") { [logger = store.logger, table, channel] connection in
            var removed = 0
            for try await count in try await connection.rows(
                """
                WITH gone AS (DELETE FROM \(unescaped: table) WHERE session_hash = \(id) RETURNING 1)
                SELECT count(*) FROM gone
                """, logger: logger
            ).decode(Int64.self) { removed = Int(count) }
            try await connection.run("SELECT pg_notify(\(channel), \(id))", logger: logger)
            return removed
        }
        // This replica too, at once (its listener may be off).
        notify(id)
        return removed
    }

    /// See `DownstreamTokenStore.withExclusiveAccess(to:_:)`: a transaction holding the
    /// fleet's advisory lock of `key` (``PostgresTokenStore/withExclusiveAccess(to:_:)``'s
    /// rules: timeouts, cancellation, connection loss).
    public func withExclusiveAccess<T: Sendable>(to key: DownstreamTokenKey, _ body: @Sendable () async throws -> T) async throws -> T {
        try await store.migrate()
        let lockID = StoreSchema.lockID(schema: store.schema, name: "downstream " + key.storageID)
        return try await withoutActuallyEscaping(body) { body in
            try await store.locked(lockID: lockID, named: "downstream token \(key.storageID.prefix(12))", body)
        }
    }

    /// See `DownstreamTokenStore.observeSessionEnds(_:)`: heard from every replica while
    /// ``run()`` runs; `nil` after the listener connected again (ends may have been missed).
    public func observeSessionEnds(_ handler: @escaping @Sendable (String?) -> Void) -> TokenStoreObservation {
        let id = observers.withLock { observers in
            observers.next += 1
            observers.handlers[observers.next] = handler
            return observers.next
        }
        return TokenStoreObservation { [weak self] in
            self?.observers.withLock { _ = $0.handlers.removeValue(forKey: id) }
        }
    }

    private func notify(_ sessionID: String?) {
        for handler in observers.withLock({ Array($0.handlers.values) }) { handler(sessionID) }
    }

    /// Removes the rows that expired before `now` (the store's clock by default); returns how
    /// many went.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    @discardableResult
    public func removeExpired(now: Date? = nil) async throws -> Int {
        let cutoff = now ?? store.configuration.now()
        return try await withConnection("removing expired downstream tokens") { [logger = store.logger, table] connection in
            var removed = 0
            for try await _ in try await connection.rows("DELETE FROM \(unescaped: table) WHERE expires_at < \(cutoff) RETURNING 1", logger: logger) {
                removed += 1
            }
            return removed
        }
    }

    /// How many rows the table holds.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    public func count() async throws -> Int {
        try await withConnection("counting downstream tokens") { [logger = store.logger, table] connection in
            var count = 0
            for try await value in try await connection.rows("SELECT count(*) FROM \(unescaped: table)", logger: logger).decode(Int64.self) {
                count = Int(value)
            }
            return count
        }
    }

    // MARK: - Service

    /// Listens for the session ends of every replica until the task is cancelled or a
    /// graceful shutdown begins; connects again after the store's
    /// ``PostgresTokenStore/Configuration/listenerReconnectDelay`` when the connection drops
    /// (and then tells the observers that ends may have been missed).
    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.listen() }
    }

    /// How many times the listener has connected.
    package var listenerConnectionCount: Int { observers.withLock { $0.connections } }

    private func listen() async {
        while !Task.isCancelled {
            do {
                try await store.withLease { [logger = store.logger, channel] connection in
                    try await connection.listen(on: channel) { notifications in
                        let again = self.observers.withLock { observers in
                            observers.connections += 1
                            return observers.connections > 1
                        }
                        if again { self.notify(nil) }
                        for try await notification in notifications {
                            self.notify(notification.payload)
                        }
                    }
                    _ = logger
                }
            } catch {
                if !Task.isCancelled {
                    store.logger.warning("downstream token listener of schema \(store.schema) lost its connection: \(PostgresTokenStoreError.mapping(error, during: "listening"))")
                }
            }
            if Task.isCancelled { break }
            try? await Task.sleep(for: store.configuration.listenerReconnectDelay)
        }
    }

    // MARK: - Key rotation

    /// Seals again with the current key up to `limit` downstream token rows of a previous key
    /// of the ring (a row written meanwhile is left as its writer left it); a row that does not
    /// open is removed (the next request fetches its token again). Rows of a key the ring no
    /// longer holds are left: they fail to open when read, and are fetched again then.
    static func resealRows(of store: PostgresTokenStore, limit: Int) async throws -> Int {
        let older = store.cipher.ring.previous.map(\.id)
        guard limit > 0, !older.isEmpty else { return 0 }
        let table = "\(store.schema).oauth2_downstream_tokens"
        let select: PostgresQuery = """
            SELECT key_hash, key_id, sealed FROM \(unescaped: table) WHERE key_id = ANY(\(older)) ORDER BY 1 LIMIT \(Int64(limit))
            """
        return try await store.withPooledConnection("sealing downstream tokens again", idempotent: false) { [logger = store.logger] connection in
            var rows: [(String, String, ByteBuffer)] = []
            for try await row in try await connection.rows(select, logger: logger).decode((String, String, ByteBuffer).self) {
                rows.append(row)
            }
            var moved = 0
            for (id, keyID, sealed) in rows {
                let change: PostgresQuery
                do {
                    let plaintext = try store.cipher.open(Data(sealed.readableBytesView), keyID: keyID, binding: binding(id), row: "a downstream token row")
                    let (newKeyID, resealed) = try store.cipher.seal(plaintext, binding: binding(id))
                    change = """
                        UPDATE \(unescaped: table) SET key_id = \(newKeyID), sealed = \(ByteBuffer(data: resealed))
                        WHERE key_hash = \(id) AND sealed = \(sealed) RETURNING 1
                        """
                } catch {
                    change = "DELETE FROM \(unescaped: table) WHERE key_hash = \(id) AND sealed = \(sealed) RETURNING 1"
                }
                for try await _ in try await connection.rows(change, logger: logger) { moved += 1 }
            }
            return moved
        }
    }
}
#endif
