import Foundation

/// A session's mutable state behind one lock: its current tokens, the renewal in flight
/// with everyone waiting for it, the back-off after a transient failure, and the epoch.
///
/// It lives outside the actor's isolation so that the hot paths never hop onto the actor:
/// ``Session/freshTokens()`` on a fresh token is one lock and one clock read, and the
/// 10,000 callers of a burst join and leave the renewal in parallel instead of queueing on
/// the actor three times each. Every critical section is short and never suspends.
///
/// Hand-written (a lock around a few values) because the core module takes no SwiftNIO,
/// and `Synchronization.Mutex` needs newer Apple platforms than the package supports.
final class SessionState: @unchecked Sendable {
    struct Snapshot: Sendable {
        var tokens: TokenSet
        var expiry: TokenExpiry
    }

    struct Flight {
        /// The epoch when the renewal started.
        var epoch: UInt64
        var waiters: [UInt64: Waiter] = [:]
    }

    struct Waiter {
        var continuation: CheckedContinuation<TokenSet, any Error>
        /// The access token the caller saw refused (a 401), which it must not get back;
        /// `nil` for a caller that only found the token due.
        var rejected: String?
    }

    private let lock = NSLock()
    // Guarded by `lock`:
    private var _snapshot: Snapshot?
    var flight: Flight?
    var nextWaiterID: UInt64 = 0
    /// After a transient failure with `Retry-After`: no new request before `until`.
    var backoff: (until: Date, error: OAuth2Error)?
    /// Changes whenever the tokens are replaced other than by a renewal (sign-in,
    /// sign-out, a refused grant), so that a renewal started before cannot bring old
    /// tokens back.
    var epoch: UInt64 = 0

    /// The current tokens (takes the lock).
    var snapshot: Snapshot? {
        lock.lock()
        defer { lock.unlock() }
        return _snapshot
    }

    /// Runs `body` holding the lock; `body` must not suspend or take the lock again.
    func locked<T>(_ body: (SessionState) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(self)
    }

    /// The tokens, for use inside ``locked(_:)`` only.
    var current: Snapshot? {
        get { _snapshot }
        set { _snapshot = newValue }
    }
}
