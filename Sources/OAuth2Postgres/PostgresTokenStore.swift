#if Postgres
import Foundation
import Logging
import NIOCore
import OAuth2
import OAuth2Internals
import OAuth2JOSE
import PostgresNIO
import ServiceLifecycle

/// A `TokenStore` in PostgreSQL that a fleet of replicas shares, with one refresh for the
/// whole fleet when a session's token expires.
///
/// ```swift
/// let store = try PostgresTokenStore(
///     postgres: PostgresTokenStore.clientConfiguration(url: environment["OAUTH2_POSTGRES_URL"]!),
///     encryptionKeys: .init(current: .init(id: "2026-11", bytes: key)),
///     logger: logger)
/// let group = ServiceGroup(services: [store, app], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// // anywhere in the app:
/// let session = TokenSession(client: client, store: store, account: user)
/// ```
///
/// - **One row per `TokenSessionKey`** in `<schema>.oauth2_sessions`, with a `version` that
///   every write moves on. Inside ``withExclusiveAccess(to:_:)`` a write is a
///   compare-and-set on the version the same transaction read: a writer that went around
///   the lock makes it throw ``PostgresTokenStoreError/Code/conflict`` instead of being
///   overwritten. ``loadVersioned(_:)`` and ``save(_:ifVersion:)`` offer the same to callers.
/// - **Encrypted at rest**: the row holds the library's token document (the format every
///   store writes) sealed with AES-256-GCM under a ``EncryptionKeys``; the row names its key id,
///   and the ciphertext is bound to the row's session key.
/// - **Single flight across replicas**: ``withExclusiveAccess(to:_:)`` is a transaction that
///   holds `pg_advisory_xact_lock` on a 64-bit hash of the session key; ``load(_:)``,
///   ``save(_:)`` and ``remove(_:)`` called inside it run on that transaction's connection.
///   A `TokenSession` re-reads the row once it holds the lock, so a replica that waited finds
///   the token another replica renewed, and uses it. A replica that dies holding the lock
///   releases it with its connection; the transaction rolls back.
/// - **Notifications**: every write sends `NOTIFY` on the schema's channel; each replica's
///   listener invalidates its small in-process cache (``Configuration/cacheCapacity``),
///   which serves only while the listener is connected and empties whenever it drops, and
///   tells the sessions of the changed key (``observeChanges(of:_:)``): a `TokenSession` adopts
///   tokens another replica renewed, and is signed out when another replica removed its
///   record.
/// - **Schema**: created and migrated by the store itself (`oauth2_schema_migrations`), once
///   per fleet, in a transaction (``migrate()``).
///
/// Run the store as a swift-service-lifecycle `Service` (``run()``): it runs its connection
/// pool (unless the application passed its own ``client``) and the notification listener
/// (unless the cache is off).
///
/// Every method throws ``PostgresTokenStoreError`` for the database's failures (see
/// ``PostgresTokenStoreError/isTransient``); errors thrown by the body of
/// ``withExclusiveAccess(to:_:)`` pass through unchanged.
public final class PostgresTokenStore: TokenStoreChangeObserving, Service, Sendable {
    /// The connection pool the store uses. When the store made it (``init(postgres:configuration:encryptionKeys:logger:)``),
    /// ``run()`` runs it; when the application passed it, the application runs it.
    public let client: PostgresClient
    /// The store's configuration.
    public let configuration: Configuration
    let ownsClient: Bool
    let cipher: RowCipher
    let logger: Logger
    let metrics: StoreMetrics
    let state: Locked<State>
    /// The schema name, checked to be a plain identifier (safe to splice into SQL).
    let schema: String
    /// The notification channel: one per schema.
    let channel: String

    struct State {
        var cache: SessionCache
        /// The migration in flight or done.
        var schemaTask: Task<[Int], any Error>?
        /// The listener's backend process id while it is connected.
        var listenerPID: Int32?
        /// How many times the listener has connected.
        var listenerConnections = 0
        /// Tasks waiting for the listener to connect for the n-th time.
        var listenerWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var statistics = Statistics()
        /// The handlers of ``observeChanges(of:_:)``, by lock id and registration.
        var observers: [Int64: [UInt64: @Sendable (TokenStoreChange) -> Void]] = [:]
        var nextObserverID: UInt64 = 0
    }

    /// What the store has done since it was made (for tests and diagnostics).
    package struct Statistics: Sendable, Equatable {
        /// Loads answered from the in-process cache.
        package var cacheHits = 0
        /// Loads outside a lock that read the database.
        package var cacheMisses = 0
        /// Reads of a row inside ``withExclusiveAccess(to:_:)``.
        package var lockedReads = 0
        /// Locks taken.
        package var locks = 0
        /// Notifications received.
        package var notifications = 0
    }

    /// A store that makes and runs its own connection pool.
    ///
    /// - Parameters:
    ///   - postgres: where the database is (``clientConfiguration(url:)`` reads a URL).
    ///   - configuration: schema, cache, lock timeout, clock.
    ///   - encryptionKeys: the keys that seal the rows.
    ///   - logger: where the store logs; never a token, a secret or the password.
    /// - Throws: ``PostgresTokenStoreError/Code/invalidConfiguration``.
    public convenience init(
        postgres: PostgresClient.Configuration,
        configuration: Configuration = Configuration(),
        encryptionKeys: EncryptionKeys,
        logger: Logger = Logger(label: "swift-oauth2.postgres")
    ) throws {
        try self.init(
            client: PostgresClient(configuration: postgres, backgroundLogger: logger), owned: true,
            configuration: configuration, encryptionKeys: encryptionKeys, logger: logger)
    }

    /// A store over the application's own connection pool, which the application runs
    /// (``run()`` then runs only the notification listener, which holds one of its
    /// connections).
    ///
    /// - Throws: ``PostgresTokenStoreError/Code/invalidConfiguration``.
    public convenience init(
        client: PostgresClient,
        configuration: Configuration = Configuration(),
        encryptionKeys: EncryptionKeys,
        logger: Logger = Logger(label: "swift-oauth2.postgres")
    ) throws {
        try self.init(client: client, owned: false, configuration: configuration, encryptionKeys: encryptionKeys, logger: logger)
    }

    private init(client: PostgresClient, owned: Bool, configuration: Configuration, encryptionKeys: EncryptionKeys, logger: Logger) throws {
        try configuration.validate()
        self.client = client
        self.ownsClient = owned
        self.configuration = configuration
        self.cipher = RowCipher(ring: encryptionKeys)
        self.logger = logger
        self.metrics = StoreMetrics(schema: configuration.schema)
        self.schema = configuration.schema
        self.channel = configuration.schema + "_oauth2_sessions"
        self.state = Locked(State(cache: SessionCache(capacity: configuration.cacheCapacity)))
    }

    // MARK: - Service

    /// Runs the connection pool (when the store made it) and the notification listener (when
    /// the store has a cache) until the task is cancelled or a graceful shutdown begins.
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            if ownsClient {
                group.addTask { await self.client.run() }
            }
            if configuration.cacheCapacity > 0 {
                group.addTask {
                    await cancelWhenGracefulShutdown { await self.listen() }
                }
            }
            await group.waitForAll()
        }
    }

    // MARK: - Schema

    /// Creates the store's schema or migrates it to the current version, once per store
    /// (every other method calls it first); returns the versions it applied (none when the
    /// schema was current). Replicas that start together migrate once: the migration holds
    /// an advisory lock of the schema and runs in one transaction.
    ///
    /// - Throws: ``PostgresTokenStoreError/Code/unsupportedSchema`` when a newer version of
    ///   the library migrated the schema further; connection errors (a later call tries again).
    @discardableResult
    public func migrate() async throws -> [Int] {
        let task = state.withLock { state in
            if let task = state.schemaTask { return task }
            let task = Task { [schema, logger] in
                // Dozens of statements in one transaction, once per deployment: not one
                // query, so not held to the query timeout alone.
                let applied = try await self.withPooledConnection("migrating schema \(schema)", timeout: Self.migrationTimeout(self.configuration.queryTimeout)) { connection in
                    try await StoreSchema.migrate(schema: schema, connection: connection, logger: logger)
                }
                if !applied.isEmpty { logger.info("schema \(schema) migrated to version \(StoreSchema.currentVersion)") }
                return applied
            }
            state.schemaTask = task
            return task
        }
        do {
            return try await task.value
        } catch {
            // A later call tries again.
            state.withLock { state in if state.schemaTask == task { state.schemaTask = nil } }
            throw PostgresTokenStoreError.mapping(error, during: "migrating schema \(schema)")
        }
    }

    /// The deadline of a migration: the query timeout, but at least a minute. A migration
    /// runs dozens of statements (schema changes among them) in one transaction; on a
    /// database busy with a fleet starting at once, the query timeout alone would abandon
    /// it half-way, and every replica would try again.
    static func migrationTimeout(_ queryTimeout: Duration) -> Duration { max(queryTimeout, .seconds(60)) }

    // MARK: - The lock

    /// The transaction of ``withExclusiveAccess(to:_:)`` that the current task runs in.
    @TaskLocal static var transaction: Transaction?

    /// One ``withExclusiveAccess(to:_:)``: its connection, and what its body read and wrote.
    final class Transaction: Sendable {
        let store: ObjectIdentifier
        let connection: PostgresConnection
        /// What the transaction read of each key: the version (`nil`: no row) and the
        /// document's members this version does not know, written back by `save`.
        let reads = Locked<[TokenSessionKey: (version: Int64?, additionalFields: [String: JSONValue])]>([:])
        /// The lock ids of the keys it wrote, whose cache entries go after the commit.
        let written = Locked<Set<Int64>>([])

        init(store: ObjectIdentifier, connection: PostgresConnection) {
            self.store = store
            self.connection = connection
        }
    }

    /// The transaction of this store the current task runs in.
    var currentTransaction: Transaction? {
        guard let transaction = Self.transaction, transaction.store == ObjectIdentifier(self) else { return nil }
        return transaction
    }

    /// Runs `body` in a transaction that holds the advisory lock of `key` for the whole
    /// fleet; ``load(_:)``, ``save(_:)`` and ``remove(_:)`` inside it use the transaction's
    /// connection, and the writes commit when `body` returns (and roll back when it throws).
    ///
    /// The lock is transaction-scoped (`pg_advisory_xact_lock`): it goes with the
    /// transaction's end, and with its connection when the process dies. The body must
    /// not call `withExclusiveAccess` on this store again (that takes a second connection
    /// and waits for itself until ``Configuration/lockTimeout``).
    ///
    /// When the connection is lost after `body` returned, the call throws only if `body`
    /// wrote something (those writes are rolled back); a body that wrote nothing, or whose
    /// writes all failed, keeps its answer. A `COMMIT` (or `ROLLBACK`) that goes unanswered
    /// for ``Configuration/queryTimeout`` closes the connection instead of returning it to
    /// the pool, so that no connection goes on inside the transaction, holding the lock;
    /// whether the database received that `COMMIT` cannot be known then.
    ///
    /// - Throws: what `body` throws, unchanged; ``PostgresTokenStoreError`` with
    ///   ``PostgresTokenStoreError/Code/lockTimeout`` when the lock was not granted in time,
    ///   ``PostgresTokenStoreError/Code/connectionFailed`` when the connection was lost
    ///   (nothing of the body's writes is kept); `CancellationError` when the task was
    ///   cancelled while it waited.
    public func withExclusiveAccess<T: Sendable>(
        to key: TokenSessionKey, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        // `body` runs in a child task of `withLease`, which ends before this call returns.
        try await withoutActuallyEscaping(body) { body in
            try await locked(lockID: lockID(key), named: "\(key)", body)
        }
    }

    /// ``withExclusiveAccess(to:_:)`` for any advisory lock of the schema: `body` runs in a
    /// transaction holding the lock `lockID` (`name` says whose, in errors and logs), on a
    /// connection that ``currentTransaction`` names.
    func locked<T: Sendable>(lockID: Int64, named key: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await migrate()
        do {
            // A connection lost before the lock was held took nothing with it: the
            // transaction starts again, on another.
            let (value, transaction) = try await retryingLostConnections {
                do {
                    return try await withLease { connection in
                        try await self.runTransaction(lockID: lockID, named: key, on: connection, body)
                    }
                } catch Failure.unstarted(let error, _) where Self.isConnectionLoss(error) {
                    throw error
                }
            }
            invalidate(transaction.written.withLock { $0 })
            return value
        } catch Failure.body(let error) {
            throw error
        } catch Failure.database(let error, let operation), Failure.unstarted(let error, let operation) {
            throw PostgresTokenStoreError.mapping(error, during: operation)
        } catch {
            throw PostgresTokenStoreError.mapping(error, during: "taking the lock of \(key)")
        }
    }

    /// One transaction of ``withExclusiveAccess(to:_:)`` on `connection`: begin, take the
    /// lock, run `body`, commit (or roll back). Throws ``Failure``.
    private func runTransaction<T: Sendable>(
        lockID: Int64, named key: String, on connection: PostgresConnection, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> (T, Transaction) {
        let timeout = max(1, configuration.lockTimeout.milliseconds)
        let logger = self.logger
        let backendPID: Int32
        do {
            backendPID = try await self.withDeadline("starting the transaction of \(key)", on: connection) {
                try await connection.run("BEGIN", logger: logger)
                // `SET LOCAL lock_timeout`, with the value as a parameter.
                let rows = try await connection.rows(
                    "SELECT pg_backend_pid(), set_config('lock_timeout', \(String(timeout) + "ms"), true)", logger: logger)
                var backendPID: Int32 = 0
                for try await (pid, _) in rows.decode((Int32, String).self) { backendPID = pid }
                return backendPID
            }
        } catch {
            await self.rollback(connection)
            throw Failure.unstarted(error, "starting the transaction of \(key)")
        }
        let waitStarted = ContinuousClock.now
        do {
            // A cancelled caller stops waiting: its wait is cancelled from another
            // connection (a query cannot be abandoned on its own connection).
            let pid = backendPID
            // The server gives up at the lock timeout; the deadline is for a server
            // that does not answer at all.
            let deadline = self.configuration.lockTimeout + self.configuration.queryTimeout
            try await self.withDeadline("taking the lock of \(key)", on: connection, timeout: deadline) {
                try await withTaskCancellationHandler {
                    // Drained: PostgresNIO answers `query` once the row description is
                    // in, and the lock's wait (and its timeout) comes after it.
                    try await connection.run("SELECT pg_advisory_xact_lock(\(lockID))", logger: logger)
                } onCancel: { [client = self.client] in
                    Task { _ = try? await client.query("SELECT pg_cancel_backend(\(pid))") }
                }
            }
        } catch {
            await self.rollback(connection)
            if Task.isCancelled { throw Failure.body(CancellationError()) }
            throw Failure.unstarted(error, "taking the lock of \(key)")
        }
        self.metrics.lockWait(ContinuousClock.now - waitStarted)
        self.state.withLock { $0.statistics.locks += 1 }
        if Task.isCancelled {
            await self.rollback(connection)
            throw Failure.body(CancellationError())
        }
        let transaction = Transaction(store: ObjectIdentifier(self), connection: connection)
        let value: T
        do {
            value = try await Self.$transaction.withValue(transaction) { try await body() }
        } catch {
            await self.rollback(connection)
            throw Failure.body(error)
        }
        do {
            try await self.withDeadline("committing the transaction of \(key)", on: connection) {
                try await connection.run("COMMIT", logger: logger)
            }
        } catch {
            // A transaction that wrote nothing loses nothing with its connection: the
            // body's answer stands (a renewal whose save failed keeps its tokens in
            // memory that way). One that wrote lost its writes: that is an error.
            guard transaction.written.withLock({ $0.isEmpty }) else {
                if let error = error as? PostgresTokenStoreError { throw Failure.body(error) }
                throw Failure.database(error, "committing the transaction of \(key)")
            }
            logger.warning("the connection holding the lock of \(key) was lost before the end of a transaction that wrote nothing")
        }
        return (value, transaction)
    }

    /// Where a failure inside ``withExclusiveAccess(to:_:)`` came from: the database before
    /// the lock was held or after it (both mapped to ``PostgresTokenStoreError``), or the
    /// body (passed through).
    enum Failure: Error { case unstarted(any Error, String), database(any Error, String), body(any Error) }

    /// Forgets the cache entries of the keys whose lock ids are `lockIDs`.
    func invalidate(_ lockIDs: Set<Int64>) {
        guard !lockIDs.isEmpty else { return }
        state.withLock { state in
            for lockID in lockIDs { state.cache.invalidate(lockID: lockID) }
        }
    }

    /// The advisory-lock id of `key` in this store's schema.
    func lockID(_ key: TokenSessionKey) -> Int64 {
        StoreSchema.lockID(schema: schema, issuer: key.issuer, clientID: key.clientID, account: key.account)
    }
}

extension Duration {
    /// The duration in whole milliseconds (rounded down).
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
#endif
