import Foundation

/// A wall clock for tests that moves only when the test moves it: give ``now`` to the code
/// under test (`OAuth2Client`'s `now:`), and a test about expiry, leeway or `Retry-After`
/// gives the same answer however slowly a busy machine runs it.
public final class ManualDate: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Date

    /// A clock standing at `start` (by default, the real time of its creation).
    public init(_ start: Date = Date()) { value = start }

    /// The clock's time.
    public var now: Date { lock.withLock { value } }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) { lock.withLock { value = value.addingTimeInterval(seconds) } }

    /// ``now`` as a function, for an injected clock (`now: date.function`).
    public var function: @Sendable () -> Date { { [self] in now } }
}
