import Foundation

/// A session's current tokens, readable from any thread without a hop onto the session's
/// actor: ``Session/freshTokens()`` on a fresh token is one lock and one clock read.
///
/// Only the session's actor writes it. Hand-written (a lock around one value) because the
/// core module takes no SwiftNIO, and `Synchronization.Mutex` needs newer Apple platforms
/// than the package supports.
final class TokenState: @unchecked Sendable {
    struct Snapshot: Sendable {
        var tokens: TokenSet
        var expiry: TokenExpiry
    }

    private let lock = NSLock()
    private var value: Snapshot?

    var snapshot: Snapshot? {
        lock.lock()
        defer { lock.unlock() }
        return value
    }

    func set(_ snapshot: Snapshot?) {
        lock.lock()
        value = snapshot
        lock.unlock()
    }
}
