#if Postgres
import Foundation
import Logging
import OAuth2
import PostgresNIO

extension PostgresTokenStore {
    /// Listens on the schema's channel until the task is cancelled: each notification names
    /// the lock id of a session key that changed (or `*`, every key), whose cache entries go.
    ///
    /// The cache serves only while the listener is connected: when its connection drops (the
    /// server ended it, the network failed) the cache empties before anything is served from
    /// it again, and the listener connects again after
    /// ``Configuration/listenerReconnectDelay``.
    func listen() async {
        while !Task.isCancelled {
            do {
                // Through the lease deadline: with the database out of reach, the listener
                // tries again after the reconnect delay.
                try await withLease { [logger, channel] connection in
                    let pid = try await self.withDeadline("starting the listener", on: connection) {
                        var pid: Int32 = 0
                        for try await value in try await connection.rows("SELECT pg_backend_pid()", logger: logger).decode(Int32.self) {
                            pid = value
                        }
                        return pid
                    }
                    try await connection.listen(on: channel) { notifications in
                        // LISTEN is in effect: what changes from now on is notified.
                        self.listenerConnected(pid: pid)
                        for try await notification in notifications {
                            self.received(notification.payload)
                        }
                    }
                }
            } catch {
                if !Task.isCancelled {
                    logger.warning("notification listener of schema \(schema) lost its connection: \(PostgresTokenStoreError.mapping(error, during: "listening"))")
                }
            }
            listenerDropped()
            if Task.isCancelled { break }
            try? await Task.sleep(for: configuration.listenerReconnectDelay)
        }
    }

    func listenerConnected(pid: Int32) {
        let (waiters, observers) = state.withLock { state in
            state.listenerPID = pid
            state.listenerConnections += 1
            state.cache.setLive(true)
            let count = state.listenerConnections
            let ready = state.listenerWaiters.filter { $0.count <= count }.map(\.continuation)
            state.listenerWaiters.removeAll { $0.count <= count }
            // Connected again: changes may have been missed meanwhile.
            return (ready, count > 1 ? state.observers.values.flatMap(\.values) : [])
        }
        for waiter in waiters { waiter.resume() }
        for observer in observers { observer(.changesMayHaveBeenMissed) }
    }

    func listenerDropped() {
        let wasLive = state.withLock { state in
            defer {
                state.listenerPID = nil
                state.cache.setLive(false)
            }
            return state.listenerPID != nil
        }
        if wasLive { metrics.listenerDrop() }
    }

    func received(_ payload: String) {
        metrics.notification()
        let (observers, change) = state.withLock { state -> ([@Sendable (TokenStoreChange) -> Void], TokenStoreChange) in
            state.statistics.notifications += 1
            if let lockID = Int64(payload) {
                state.cache.invalidate(lockID: lockID)
                return (state.observers[lockID].map { Array($0.values) } ?? [], .recordChanged)
            }
            // Not one of ours: which rows it concerns is unknown.
            state.cache.removeAll()
            return (state.observers.values.flatMap(\.values), .changesMayHaveBeenMissed)
        }
        for observer in observers { observer(change) }
    }

    /// Calls `handler` with `.recordChanged` whenever the row of `key` changes — written or
    /// removed by any replica, this one included — and with `.changesMayHaveBeenMissed` after
    /// the listener connected again, until the observation ends. Nothing is heard while the
    /// listener is off (a store without a cache).
    public func observeChanges(of key: TokenSessionKey, _ handler: @escaping @Sendable (TokenStoreChange) -> Void) -> TokenStoreObservation {
        let lockID = lockID(key)
        let id = state.withLock { state in
            state.nextObserverID += 1
            state.observers[lockID, default: [:]][state.nextObserverID] = handler
            return state.nextObserverID
        }
        return TokenStoreObservation { [weak self] in
            self?.state.withLock { state in
                state.observers[lockID]?[id] = nil
                if state.observers[lockID]?.isEmpty == true { state.observers[lockID] = nil }
            }
        }
    }

    /// The listener's backend process id while it is connected (for fault tests that end it
    /// with `pg_terminate_backend`).
    package var listenerProcessID: Int32? { state.withLock { $0.listenerPID } }

    /// How many times the listener has connected.
    package var listenerConnectionCount: Int { state.withLock { $0.listenerConnections } }

    /// What the store has done so far.
    package var statistics: Statistics { state.withLock { $0.statistics } }

    /// Waits until the listener has connected `count` times in all (returns at once if it has).
    package func waitForListener(connections count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.listenerConnections >= count { return true }
                state.listenerWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
#endif
