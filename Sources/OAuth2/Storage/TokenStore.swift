import Foundation

/// Where sessions are kept between runs.
///
/// Implementations: ``MemoryTokenStore``; ``FileTokenStore`` (a protected directory,
/// atomic writes, shared by processes through lock files, optionally encrypted);
/// `SecretServiceTokenStore` in `OAuth2SecretService` (the desktop keyring); and
/// `KeychainTokenStore` on Apple platforms. All of them keep a session as the same
/// versioned JSON document.
///
/// Every method is safe to call concurrently. A store never loses a record: a failed
/// write leaves the previous one in place. Stores throw ``TokenStoreError``.
public protocol TokenStore: Sendable {
    /// The record for `key`, or `nil` when there is none.
    func load(_ key: TokenSessionKey) async throws -> StoredTokenSession?
    /// Writes `session` under `session.key`, replacing any previous record.
    func save(_ session: StoredTokenSession) async throws
    /// Removes the record for `key`; removing a missing record is not an error.
    func remove(_ key: TokenSessionKey) async throws
    /// The keys of every stored session.
    func list() async throws -> [TokenSessionKey]
    /// Runs `body` while holding the store's exclusive lock for `key`, so that a
    /// read-refresh-write sequence runs once at a time — across processes, for stores
    /// that several processes share.
    ///
    /// `body` may call ``load(_:)``, ``save(_:)`` and ``remove(_:)``; it must not call
    /// `withExclusiveAccess` for the same key again (the lock is not reentrant: that
    /// waits forever). Cancelling the task while it waits for the lock ends the wait with
    /// `CancellationError`.
    func withExclusiveAccess<T: Sendable>(
        to key: TokenSessionKey, _ body: @Sendable () async throws -> T
    ) async throws -> T
}
