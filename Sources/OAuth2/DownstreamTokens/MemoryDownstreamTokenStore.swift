import Foundation
import OAuth2Internals

/// A ``DownstreamTokenStore`` in this process's memory: for one process, and tests.
///
/// It keeps at most ``capacity`` tokens: beyond it, expired tokens go first, then those that
/// expire soonest.
public final class MemoryDownstreamTokenStore: DownstreamTokenStore {
    /// The most tokens kept.
    public let capacity: Int
    private let now: @Sendable () -> Date
    private let state = Locked(State())
    private let locks = KeyedLocks()

    private struct State {
        var tokens: [String: (sessionID: String?, token: DownstreamToken)] = [:]
        var observers: [UInt64: @Sendable (String?) -> Void] = [:]
        var nextObserver: UInt64 = 0
    }

    /// An empty store of at most `capacity` tokens (at least 1), with the clock `now` (which
    /// decides what has expired when the store is full).
    public init(capacity: Int = 10_000, now: @escaping @Sendable () -> Date = { Date() }) {
        self.capacity = max(1, capacity)
        self.now = now
    }

    /// How many tokens are stored.
    public var count: Int { state.withLock { $0.tokens.count } }

    /// See ``DownstreamTokenStore/load(_:)``.
    public func load(_ key: DownstreamTokenKey) async throws -> DownstreamToken? {
        state.withLock { $0.tokens[key.storageID]?.token }
    }

    /// See ``DownstreamTokenStore/save(_:for:)``.
    public func save(_ token: DownstreamToken, for key: DownstreamTokenKey) async throws {
        let now = now()
        state.withLock { state in
            state.tokens[key.storageID] = (key.session.map(DownstreamTokenKey.sessionID), token)
            guard state.tokens.count > capacity else { return }
            state.tokens = state.tokens.filter { $0.value.token.expiresAt > now || $0.key == key.storageID }
            let excess = state.tokens.count - capacity
            if excess > 0 {
                let soonest = state.tokens.filter { $0.key != key.storageID }.sorted { $0.value.token.expiresAt < $1.value.token.expiresAt }
                for (id, _) in soonest.prefix(excess) { state.tokens[id] = nil }
            }
        }
    }

    /// See ``DownstreamTokenStore/removeSession(_:)``.
    @discardableResult
    public func removeSession(_ session: String) async throws -> Int {
        let id = DownstreamTokenKey.sessionID(session)
        let (removed, observers) = state.withLock { state in
            let before = state.tokens.count
            state.tokens = state.tokens.filter { $0.value.sessionID != id }
            return (before - state.tokens.count, Array(state.observers.values))
        }
        for observer in observers { observer(id) }
        return removed
    }

    /// See ``DownstreamTokenStore/withExclusiveAccess(to:_:)``: a lock of this process.
    public func withExclusiveAccess<T: Sendable>(to key: DownstreamTokenKey, _ body: @Sendable () async throws -> T) async throws -> T {
        try await locks.withLock(key.storageID, body)
    }

    /// See ``DownstreamTokenStore/observeSessionEnds(_:)``.
    public func observeSessionEnds(_ handler: @escaping @Sendable (String?) -> Void) -> TokenStoreObservation {
        let id = state.withLock { state in
            state.nextObserver += 1
            state.observers[state.nextObserver] = handler
            return state.nextObserver
        }
        return TokenStoreObservation { [weak self] in
            self?.state.withLock { _ = $0.observers.removeValue(forKey: id) }
        }
    }
}

/// Locks of this process by name, each kept only while someone holds or waits for it (so the
/// table stays as small as the keys in use).
final class KeyedLocks: Sendable {
    private let locks = Locked<[String: (lock: AsyncLock, users: Int)]>([:])

    func withLock<T: Sendable>(_ name: String, _ body: @Sendable () async throws -> T) async throws -> T {
        let lock = locks.withLock { locks in
            let entry = locks[name] ?? (AsyncLock(), 0)
            locks[name] = (entry.lock, entry.users + 1)
            return entry.lock
        }
        defer {
            locks.withLock { locks in
                if let entry = locks[name] {
                    locks[name] = entry.users > 1 ? (entry.lock, entry.users - 1) : nil
                }
            }
        }
        return try await lock.withLock(body)
    }
}
