#if Postgres
import Foundation
import Logging
import NIOCore
import OAuth2
import OAuth2Internals
import PostgresNIO

// Every query the store sends goes through these guards. PostgresNIO 1.33.2 writes a query
// to its channel without a promise: on a connection that has already closed, the write
// fails where no one sees it and the query is never answered. The pool can hand out such a
// connection (one the server ended a moment ago), and a transaction can hold one whose
// server process was killed while its body was busy elsewhere. So: a closed connection is
// never leased out to a body, no query is written to a closed connection, and no wait for
// an answer outlasts its deadline.

/// Where a lease of ``PostgresTokenStore/withLease(_:)`` is: its body runs only if it was
/// granted before the deadline.
private enum LeaseState { case waiting, leased, abandoned }

/// One connection the pool lent: closed (ask again), or the body's answer.
private enum LeaseAttempt<T: Sendable>: Sendable { case closed, done(T) }

/// A query refused because its connection had closed: ``PostgresTokenStoreError/mapping(_:during:)``
/// makes it a ``PostgresTokenStoreError/Code/connectionFailed``.
struct ConnectionLost: Error {}

extension PostgresConnection {
    /// `query`, refused at once with ``ConnectionLost`` when the connection has closed.
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        guard !isClosed else { throw ConnectionLost() }
        return try await self.query(query, logger: logger)
    }

    /// Runs `query` to its end, reading (and dropping) its rows: an error the server sends
    /// after the first row description — a lock timeout, a cancelled wait — is thrown here,
    /// not lost.
    func run(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await rows(query, logger: logger) {}
    }
}

extension PostgresTokenStore {
    /// Runs `body` on an open connection of the pool, waiting at most
    /// ``Configuration/connectionTimeout`` for one (the pool itself waits for as long as it
    /// takes, retrying a database that refuses), and at most ``Configuration/queryTimeout``
    /// for `body`; maps the database's errors.
    ///
    /// An idempotent `body` (a read, an unconditional write or delete) whose connection was
    /// lost runs again on another (see ``retryingLostConnections(_:)``).
    func withPooledConnection<T: Sendable>(
        _ operation: String, idempotent: Bool = true, timeout: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            let attempt = {
                try await self.withLease { connection in
                    try await self.withDeadline(operation, on: connection, timeout: timeout) { try await body(connection) }
                }
            }
            return try await idempotent ? retryingLostConnections(attempt) : attempt()
        } catch {
            throw PostgresTokenStoreError.mapping(error, during: operation)
        }
    }

    /// Runs `attempt` again while it fails because its connection was lost, for at most
    /// ``Configuration/connectionTimeout`` in all. A connection can close between the check
    /// for it and the query, and a database restart leaves every idle connection of the pool
    /// dead at once: each fails one attempt, at once, and the pool then opens new ones.
    func retryingLostConnections<T: Sendable>(_ attempt: () async throws -> T) async throws -> T {
        let end = ContinuousClock.now + configuration.connectionTimeout
        while true {
            do {
                return try await attempt()
            } catch where Self.isConnectionLoss(error) && ContinuousClock.now < end && !Task.isCancelled {
                continue
            }
        }
    }

    /// Whether `error` says the connection closed under the query (as opposed to the
    /// database refusing it, or not answering in time).
    static func isConnectionLoss(_ error: any Error) -> Bool {
        if error is ConnectionLost { return true }
        if let error = error as? PostgresTokenStoreError { return error.lostConnection }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .clientClosedConnection, .serverClosedConnection, .uncleanShutdown: return true
        case .server: return error.serverInfo?[.sqlState] == "57P01"  // terminated by the administrator
        default: return false
        }
    }

    /// Runs `body` on an open connection of the pool, waiting at most
    /// ``Configuration/connectionTimeout`` for one. A connection that closed while it was
    /// idle in the pool goes back, and the next one is asked for. A lease granted after the
    /// deadline is handed back unused.
    func withLease<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let lease = Locked(LeaseState.waiting)
        let timeout = configuration.connectionTimeout
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { [client] in
                while true {
                    let attempt = try await client.withConnection { connection -> LeaseAttempt<T> in
                        guard !connection.isClosed else { return .closed }
                        let proceed = lease.withLock { state in
                            guard state != .abandoned else { return false }
                            state = .leased
                            return true
                        }
                        guard proceed else { throw CancellationError() }
                        return .done(try await body(connection))
                    }
                    if case .done(let value) = attempt { return value }
                    // The pool has not yet seen that connection close: give it a moment.
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            group.addTask {
                // Not `Task.sleep`: this timer is cancelled on nearly every call, and a
                // cancelled `Task.sleep` keeps its memory until its deadline (see `DispatchTimers`).
                try await DispatchTimers.shared.sleep(for: timeout)
                let expired = lease.withLock { state in
                    guard state == .waiting else { return false }
                    state = .abandoned
                    return true
                }
                guard expired else { return nil }
                throw PostgresTokenStoreError(.connectionFailed, "no connection to the database within \(timeout)")
            }
            while let result = try await group.next() {
                if let value = result {
                    group.cancelAll()
                    return value
                }
            }
            throw CancellationError()  // unreachable: the lease's task always answers or throws
        }
    }

    /// Runs `body` (queries on `connection`), throwing
    /// ``PostgresTokenStoreError/Code/connectionFailed`` if it has not answered within
    /// `timeout` (``Configuration/queryTimeout`` unless given). A query that the database
    /// never answers is left behind, not waited for (PostgresNIO does not end one on
    /// cancellation), and `connection` is closed before the error is thrown: its state is
    /// unknown — a `COMMIT` or `ROLLBACK` held up on the way would leave it inside a
    /// transaction, holding its advisory lock — so it never goes back to the pool. Its
    /// server process ends (and rolls back what it had not committed) when the connection
    /// reaches it closed.
    func withDeadline<T: Sendable>(
        _ operation: String, on connection: PostgresConnection, timeout: Duration? = nil, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let timeout = timeout ?? configuration.queryTimeout
        // A cancelled caller still waits for the query (within the deadline): the connection
        // must not go back to the pool with a query, perhaps a transaction, still on it.
        return try await OAuth2Internals.withDeadline(timeout, waitsForOperationWhenCancelled: true, onTimeout: {
            // Closed before the caller hears of it, and so before the pool can lend it again.
            let _: EventLoopFuture<Void> = connection.close()
            throw PostgresTokenStoreError(.connectionFailed, "\(operation) failed: no answer from the database within \(timeout)")
        }, operation: body)
    }

    /// Rolls back the transaction on `connection`, if the connection is still there (a
    /// connection that closed took its transaction with it).
    func rollback(_ connection: PostgresConnection) async {
        _ = try? await withDeadline("rolling back", on: connection) { [logger] in
            try await connection.run("ROLLBACK", logger: logger)
        }
    }
}
#endif
