import Foundation
import OAuth2Internals

/// A ``TokenStore`` that other processes or replicas change too, and that hears of their
/// changes — the PostgreSQL store of `OAuth2Postgres`, through `LISTEN`/`NOTIFY`.
///
/// A ``TokenSession`` on such a store reads its record again whenever it changed elsewhere: tokens
/// another replica renewed are adopted (``TokenSessionEvent/refreshed(_:)``), and a record another
/// replica removed signs this session out too (``TokenSessionEvent/signedOut(_:)`` with
/// ``OAuth2Error/SignInReason/signedOutElsewhere``; its callers then get
/// ``OAuth2Error/Code/signInRequired``).
///
/// After the store may have missed changes (it lost its connection), a session does not read
/// its record at once — every session of a replica would, together — but before it next
/// answers from memory: its next caller's renewal reads the record under the store's lock,
/// and goes to the server only if the record needs it.
public protocol TokenStoreChangeObserving: TokenStore {
    /// Calls `handler` with ``TokenStoreChange/recordChanged`` each time the record of `key`
    /// was written or removed, here or elsewhere, and with
    /// ``TokenStoreChange/changesMayHaveBeenMissed`` whenever the store may have missed
    /// changes, until the returned observation is cancelled or released. `handler` must
    /// return quickly: it runs on the store's notification path.
    func observeChanges(of key: TokenSessionKey, _ handler: @escaping @Sendable (TokenStoreChange) -> Void) -> TokenStoreObservation
}

/// What a ``TokenStoreChangeObserving`` store tells the observers of a record.
public enum TokenStoreChange: Sendable, Hashable {
    /// The record was written or removed.
    case recordChanged
    /// The store may have missed changes to the record (it lost, then regained, its
    /// connection to where changes are announced).
    case changesMayHaveBeenMissed
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
