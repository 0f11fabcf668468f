import Foundation

/// The clock the pipeline measures deadlines and back-offs on: any `Clock` measured in
/// `Duration`, type-erased (tests inject one whose sleeps return at once).
package struct PipelineClock: Sendable {
    /// The time since the clock was wrapped.
    package let elapsed: @Sendable () -> Duration
    /// Sleeps for the duration; throws `CancellationError` when cancelled.
    package let sleep: @Sendable (Duration) async throws -> Void

    package init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        elapsed = { origin.duration(to: clock.now) }
        sleep = { duration in try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil) }
    }

    /// The real, monotonic clock: `ContinuousClock` for the time, and sleeps on
    /// ``DispatchTimers``, whose cancelled timers go at once (a cancelled `ContinuousClock.sleep`
    /// keeps its timer, and its memory, until the deadline it was given).
    package static let continuous = PipelineClock(ContinuousClock(), timers: .shared)

    /// `clock` for the time, and sleeps on `timers` (Dispatch's monotonic clock, which runs
    /// at the same rate).
    package init(_ clock: ContinuousClock, timers: DispatchTimers) {
        let origin = clock.now
        elapsed = { origin.duration(to: clock.now) }
        sleep = { duration in try await timers.sleep(for: duration) }
    }
}
