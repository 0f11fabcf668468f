import Foundation

/// A clock for tests whose sleeps return at once: each one moves the clock's time forward
/// to its deadline and is recorded, so a test proves how long code waited without waiting.
/// Sleeping still honours cancellation. Sleeps past the optional horizon end only when
/// the test calls ``passHorizon()``.
public final class ImmediateClock: Clock, @unchecked Sendable {
    /// A point in the clock's time: the duration since it was created.
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock's start.
        public var offset: Duration

        /// This instant moved by `duration`.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The time from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Earlier than.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let lock = NSLock()
    private var current = Instant(offset: .zero)
    private var recorded: [Duration] = []

    private let horizon: Duration?
    private var released = false

    /// Lets the sleeps past the horizon end (now, and from now on): time moves on.
    public func passHorizon() { lock.withLock { released = true } }

    /// A clock at time zero. With a `horizon`, time stops there: a sleep that would end
    /// later waits until its task is cancelled (a deadline that must not pass while the
    /// code under test sleeps its shorter waits).
    public init(horizon: Duration? = nil) {
        self.horizon = horizon
    }

    /// The clock's time: where the latest sleep ended.
    public var now: Instant { lock.withLock { current } }
    /// Zero: any duration can be slept.
    public var minimumResolution: Duration { .zero }

    /// Every sleep so far, as the duration from the time it began to its deadline.
    public var sleeps: [Duration] { lock.withLock { recorded } }
    /// Time passed on this clock.
    public var elapsed: Duration { lock.withLock { current.offset } }

    /// Records the sleep and moves the time to `deadline` at once; throws
    /// `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        if let horizon, deadline.offset > horizon {
            lock.withLock { recorded.append(deadline.offset - current.offset) }
            // Until cancelled, or until the test moves time past the horizon.
            while !lock.withLock({ released }) { try await Task.sleep(for: .milliseconds(5)) }
            lock.withLock { if deadline > current { current = deadline } }
            return
        }
        lock.withLock {
            recorded.append(deadline.offset - current.offset)
            if deadline > current { current = deadline }
        }
        await Task.yield()
        try Task.checkCancellation()
    }
}
