#if Postgres
import Foundation
import Logging
import OAuth2
import OAuth2Internals
import PostgresNIO
import ServiceLifecycle

/// The DPoP nonces of a fleet's servers (`DPoPNonceStore`) in PostgreSQL: a nonce one replica
/// learnt — from a refused request (`use_dpop_nonce`, RFC 9449 §8, §9) or a `DPoP-Nonce` a
/// server announced — goes into the other replicas' next proofs for that server, instead of
/// each replica paying a refused request first.
///
/// Give it to each replica's client through `DPoPOptions.nonceStore`, and run it as a service
/// next to the store: its ``run()`` listens for the nonces the other replicas learn.
///
/// ```swift
/// let nonces = PostgresDPoPNonceStore(store: tokenStore)
/// configuration.dpop = DPoPOptions(key: key, nonceStore: nonces)
/// let group = ServiceGroup(services: [tokenStore, nonces, app], gracefulShutdownSignals: [.sigterm], logger: logger)
/// ```
///
/// - **One row per server origin** in the table `oauth2_dpop_nonces` of the
///   ``PostgresTokenStore``'s schema (made by its migrations): the latest nonce and when it
///   stops being served (``lifetime`` after it was learnt). A nonce is no secret — a server
///   sends it in the clear to whoever asks — so it is not sealed.
/// - **Read through memory**: each replica keeps what it read or learnt for ``lifetime`` (the
///   store's clock), so a request costs no query; a server that gave no nonce costs one read
///   per ``lifetime``. A changed nonce is written once, and `NOTIFY` on the schema's nonce
///   channel hands it to every replica's memory at once. Without ``run()``, a replica
///   catches up when what it kept is older than ``lifetime`` — or on the server's next
///   refusal, which costs the one retry a nonce always costs.
/// - **A hint, never an error**: a database that cannot answer leaves the request without a
///   nonce (logged as a warning, without the nonce); the replica waits ``lifetime`` before it
///   asks the database for that server again.
/// - **Bounded**: at most ``capacity`` rows (and as many servers in each replica's memory); a
///   write beyond it removes the rows that stop being served soonest. ``removeExpired(now:)``
///   keeps the table small.
public final class PostgresDPoPNonceStore: DPoPNonceStore, Service, Sendable {
    /// The store whose pool, clock and schema this one uses.
    public let store: PostgresTokenStore
    /// The most servers whose nonce is kept.
    public let capacity: Int
    /// How long a nonce is served after it was learnt, and how long a replica keeps what it
    /// read before it reads again.
    public let lifetime: Duration
    let table: String
    let channel: String
    private let state = Locked(State())

    private struct State {
        /// What this replica read or learnt, by origin (`nil`: the database had no nonce),
        /// and until when it holds.
        var kept: [String: (nonce: String?, until: Date)] = [:]
        var connections = 0
    }

    /// The nonces of `store`'s database and schema: of at most `capacity` servers (at least 1),
    /// each served for `lifetime` after it was learnt (at least one second).
    public init(store: PostgresTokenStore, capacity: Int = 1_000, lifetime: Duration = .seconds(300)) {
        self.store = store
        self.capacity = max(1, capacity)
        self.lifetime = max(lifetime, .seconds(1))
        self.table = "\(store.schema).oauth2_dpop_nonces"
        self.channel = store.schema + "_oauth2_dpop_nonce"
    }

    private var lifetimeInterval: TimeInterval {
        let (seconds, attoseconds) = lifetime.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// See `DPoPNonceStore.nonce(forOrigin:)`: what this replica keeps, else the database's
    /// nonce for `origin` unless it is older than ``lifetime``.
    public func nonce(forOrigin origin: String) async -> String? {
        let now = store.configuration.now()
        if let kept = state.withLock({ $0.kept[origin] }), kept.until > now { return kept.nonce }
        let query: PostgresQuery = "SELECT nonce, expires_at FROM \(unescaped: table) WHERE origin = \(origin) AND expires_at > \(now)"
        do {
            try await store.migrate()
            let found = try await store.withPooledConnection("reading a DPoP nonce") { [logger = store.logger] connection in
                var found: (String, Date)?
                for try await row in try await connection.rows(query, logger: logger).decode((String, Date).self) { found = row }
                return found
            }
            let nonce = found.flatMap { DPoPNonceCache.isValid($0.0) ? $0.0 : nil }
            keep(nonce, for: origin, until: found.map { min($0.1, now.addingTimeInterval(lifetimeInterval)) } ?? now.addingTimeInterval(lifetimeInterval))
            return nonce
        } catch {
            store.logger.warning("DPoP nonce store of schema \(store.schema): no nonce read for \(origin): \(PostgresTokenStoreError.mapping(error, during: "reading a DPoP nonce"))")
            // Not again for every request while the database cannot answer.
            let stale = state.withLock { $0.kept[origin]?.nonce }
            keep(stale, for: origin, until: now.addingTimeInterval(lifetimeInterval))
            return stale
        }
    }

    /// See `DPoPNonceStore.remember(_:forOrigin:)`: a nonce this replica already keeps is not
    /// written again until ``lifetime`` has passed; a new one is written (an upsert, then,
    /// beyond ``capacity``, the rows that stop being served soonest go) and announced to
    /// every replica. An invalid nonce (RFC 9449 §8.1) is ignored.
    public func remember(_ nonce: String, forOrigin origin: String) async {
        guard DPoPNonceCache.isValid(nonce), !origin.isEmpty, origin.utf8.count <= 2048 else { return }
        let now = store.configuration.now()
        let until = now.addingTimeInterval(lifetimeInterval)
        let known = state.withLock { state in
            if let kept = state.kept[origin], kept.nonce == nonce, kept.until > now { return true }
            return false
        }
        guard !known else { return }
        keep(nonce, for: origin, until: until)
        let upsert: PostgresQuery = """
            INSERT INTO \(unescaped: table) (origin, nonce, expires_at, updated_at) VALUES (\(origin), \(nonce), \(until), \(now))
            ON CONFLICT (origin) DO UPDATE SET nonce = excluded.nonce, expires_at = excluded.expires_at, updated_at = excluded.updated_at
            """
        let bound: PostgresQuery = """
            DELETE FROM \(unescaped: table) WHERE origin IN (
                SELECT origin FROM \(unescaped: table) WHERE origin <> \(origin)
                ORDER BY expires_at LIMIT greatest(0, (SELECT count(*) FROM \(unescaped: table)) - \(Int64(capacity))))
            """
        let notice: PostgresQuery = "SELECT pg_notify(\(channel), \(origin + " " + nonce))"
        do {
            try await store.migrate()
            try await store.withPooledConnection("writing a DPoP nonce") { [logger = store.logger] connection in
                try await connection.run(upsert, logger: logger)
                try await connection.run(bound, logger: logger)
                try await connection.run(notice, logger: logger)
            }
        } catch {
            store.logger.warning("DPoP nonce store of schema \(store.schema): the nonce of \(origin) was not shared: \(PostgresTokenStoreError.mapping(error, during: "writing a DPoP nonce"))")
        }
    }

    /// Keeps `nonce` (or its absence) for `origin` until `until`, within ``capacity``.
    private func keep(_ nonce: String?, for origin: String, until: Date) {
        state.withLock { state in
            state.kept[origin] = (nonce, until)
            guard state.kept.count > capacity else { return }
            let soonest = state.kept.filter { $0.key != origin }.sorted { $0.value.until < $1.value.until }
            for (gone, _) in soonest.prefix(state.kept.count - capacity) { state.kept[gone] = nil }
        }
    }

    /// Removes the rows no longer served at `now` (the store's clock by default); returns how
    /// many went.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    @discardableResult
    public func removeExpired(now: Date? = nil) async throws -> Int {
        let cutoff = now ?? store.configuration.now()
        try await store.migrate()
        return try await store.withPooledConnection("removing expired DPoP nonces") { [logger = store.logger, table] connection in
            var removed = 0
            for try await _ in try await connection.rows("DELETE FROM \(unescaped: table) WHERE expires_at <= \(cutoff) RETURNING 1", logger: logger) {
                removed += 1
            }
            return removed
        }
    }

    /// How many rows the table holds.
    ///
    /// - Throws: ``PostgresTokenStoreError``.
    public func count() async throws -> Int {
        try await store.migrate()
        return try await store.withPooledConnection("counting DPoP nonces") { [logger = store.logger, table] connection in
            var count = 0
            for try await value in try await connection.rows("SELECT count(*) FROM \(unescaped: table)", logger: logger).decode(Int64.self) {
                count = Int(value)
            }
            return count
        }
    }

    // MARK: - Service

    /// Listens for the nonces every replica learns until the task is cancelled or a graceful
    /// shutdown begins; connects again after the store's
    /// ``PostgresTokenStore/Configuration/listenerReconnectDelay`` when the connection drops
    /// (and then forgets what this replica kept: it may have missed new nonces).
    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.listen() }
    }

    /// How many times the listener has connected.
    package var listenerConnectionCount: Int { state.withLock { $0.connections } }

    private func listen() async {
        while !Task.isCancelled {
            do {
                try await store.withLease { [channel] connection in
                    try await connection.listen(on: channel) { notifications in
                        self.state.withLock { state in
                            state.connections += 1
                            if state.connections > 1 { state.kept = [:] }
                        }
                        for try await notification in notifications {
                            self.heard(notification.payload)
                        }
                    }
                }
            } catch {
                if !Task.isCancelled {
                    store.logger.warning("DPoP nonce listener of schema \(store.schema) lost its connection: \(PostgresTokenStoreError.mapping(error, during: "listening"))")
                }
            }
            if Task.isCancelled { break }
            try? await Task.sleep(for: store.configuration.listenerReconnectDelay)
        }
    }

    /// A notification's `origin nonce` (an origin has no space, and a nonce none either).
    private func heard(_ payload: String) {
        guard let space = payload.firstIndex(of: " ") else { return }
        let origin = String(payload[..<space]), nonce = String(payload[payload.index(after: space)...])
        guard !origin.isEmpty, DPoPNonceCache.isValid(nonce) else { return }
        keep(nonce, for: origin, until: store.configuration.now().addingTimeInterval(lifetimeInterval))
    }
}
#endif
