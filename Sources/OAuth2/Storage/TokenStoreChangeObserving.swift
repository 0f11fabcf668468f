import Foundation

/// A ``TokenStore`` that other processes or replicas change too, and that hears of their
/// changes — the PostgreSQL store of `OAuth2Postgres`, through `LISTEN`/`NOTIFY`.
///
/// A ``Session`` on such a store reads its record again whenever it changed elsewhere: tokens
/// another replica renewed are adopted (``SessionEvent/refreshed(_:)``), and a record another
/// replica removed signs this session out too (``SessionEvent/signedOut(_:)`` with
/// ``OAuth2Error/SignInReason/signedOutElsewhere``; its callers then get
/// ``OAuth2Error/Code/signInRequired``).
public protocol TokenStoreChangeObserving: TokenStore {
    /// Calls `handler` each time the record of `key` may have changed — written or removed,
    /// here or elsewhere — and whenever the store may have missed changes (after it lost its
    /// connection), until the returned observation is cancelled or released. `handler` must
    /// return quickly: it runs on the store's notification path.
    func observeChanges(of key: SessionKey, _ handler: @escaping @Sendable () -> Void) -> TokenStoreObservation
}

/// One registration of ``TokenStoreChangeObserving/observeChanges(of:_:)``: it ends when
/// cancelled, or when released.
public final class TokenStoreObservation: Sendable {
    private let onCancel: Locked<(@Sendable () -> Void)?>

    /// An observation that runs `onCancel` once, when it is cancelled or released.
    public init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Locked(onCancel)
    }

    /// Ends the observation (once; later calls do nothing).
    public func cancel() {
        let action = onCancel.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit { cancel() }
}
