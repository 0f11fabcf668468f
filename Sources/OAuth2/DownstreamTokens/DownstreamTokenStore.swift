import Foundation

/// Where ``DownstreamTokens`` keeps its tokens beyond one process's memory, and how it renews
/// one key once: ``MemoryDownstreamTokenStore`` for one process; `PostgresDownstreamTokenStore`
/// (OAuth2Postgres) for a fleet, sealed in PostgreSQL, with one renewal per key for the whole
/// fleet and session ends announced to every replica.
///
/// Every method is safe to call concurrently.
public protocol DownstreamTokenStore: Sendable {
    /// The token stored under `key`, if any (expired or not).
    func load(_ key: DownstreamTokenKey) async throws -> DownstreamToken?
    /// Stores `token` under `key`, replacing any token there.
    func save(_ token: DownstreamToken, for key: DownstreamTokenKey) async throws
    /// Removes every token of the user session `session`, and tells every
    /// ``observeSessionEnds(_:)`` handler (of every replica, for a shared store); returns how
    /// many tokens went.
    @discardableResult
    func removeSession(_ session: String) async throws -> Int
    /// Runs `body` while holding the store's exclusive lock of `key` — across the fleet, for a
    /// shared store — so that one load-renew-save runs at a time. `body` may call ``load(_:)``
    /// and ``save(_:for:)``; it must not take the lock of the same key again.
    func withExclusiveAccess<T: Sendable>(to key: DownstreamTokenKey, _ body: @Sendable () async throws -> T) async throws -> T
    /// Calls `handler` with ``DownstreamTokenKey/sessionID(_:)`` of each session that ends
    /// (``removeSession(_:)`` on any replica), and with `nil` when ends may have been missed
    /// (a shared store's listener reconnected), until the observation ends.
    func observeSessionEnds(_ handler: @escaping @Sendable (String?) -> Void) -> TokenStoreObservation
}
