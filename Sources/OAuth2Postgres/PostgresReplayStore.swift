#if Postgres
import Foundation
import OAuth2Web
import PostgresNIO

/// The one-time values a fleet of API replicas has seen — the `jti` of each DPoP proof —
/// in PostgreSQL, so that a proof accepted by one replica is refused as a replay by every
/// other (`OAuth2Web`'s `ReplayStore`).
///
/// It works through a ``PostgresTokenStore``'s connection pool, in its schema (table
/// `oauth2_replay_records`, made by the store's migrations): run that store as a service, and
/// give this one to the API's `DPoPProofVerifier`:
///
/// ```swift
/// let replays = PostgresReplayStore(store: tokenStore)
/// let dpop = DPoPProofVerifier(publicBaseURL: baseURL, replayStore: replays)
/// ```
///
/// A record is one row, inserted only if no live row of its key exists (an expired one is
/// replaced), in one statement: two replicas that see the same proof at once cannot both
/// insert it. Call ``removeExpired(now:)`` now and then (a scheduled job) to keep the table small;
/// expired rows never make a check wrong.
public struct PostgresReplayStore: ReplayStore {
    /// The store whose pool and schema this one uses.
    public let store: PostgresTokenStore

    /// A replay store in `store`'s database and schema.
    public init(store: PostgresTokenStore) {
        self.store = store
    }

    /// See `ReplayStore.insertIfAbsent(_:expiresAt:now:)`.
    ///
    /// - Throws: ``PostgresTokenStoreError`` when the database cannot answer (the API then
    ///   refuses the proof: it fails closed).
    public func insertIfAbsent(_ key: String, expiresAt: Date, now: Date) async throws -> Bool {
        try await store.migrate()
        let table = "\(store.schema).oauth2_replay_records"
        // No row back: a live record was there. (Not retried on a lost connection: an
        // insert that committed before the loss would read as a replay the second time.)
        return try await store.withPooledConnection("recording a one-time value", idempotent: false) { [logger = store.logger] connection in
            let query: PostgresQuery = """
                INSERT INTO \(unescaped: table) AS r (key, expires_at) VALUES (\(key), \(expiresAt))
                ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE r.expires_at <= \(now)
                RETURNING 1
                """
            var inserted = false
            for try await _ in try await connection.rows(query, logger: logger) { inserted = true }
            return inserted
        }
    }

    /// Removes the records that expired before `now` (the store's clock by default); returns
    /// how many went.
    ///
    /// - Throws: ``PostgresTokenStoreError`` when the database cannot answer.
    @discardableResult
    public func removeExpired(now: Date? = nil) async throws -> Int {
        try await store.migrate()
        let cutoff = now ?? store.configuration.now()
        let table = "\(store.schema).oauth2_replay_records"
        return try await store.withPooledConnection("removing expired one-time values") { [logger = store.logger] connection in
            var removed = 0
            let query: PostgresQuery = "DELETE FROM \(unescaped: table) WHERE expires_at < \(cutoff) RETURNING 1"
            for try await _ in try await connection.rows(query, logger: logger) { removed += 1 }
            return removed
        }
    }
}
#endif
