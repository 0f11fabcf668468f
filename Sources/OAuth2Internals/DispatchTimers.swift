import Dispatch

/// Sleeps on Dispatch timer sources, which a cancellation takes down at once: the sleep of
/// ``PipelineClock/continuous``, and so of every deadline this package races work against.
///
/// Hand-written because `Task.sleep` (and `ContinuousClock.sleep`, which calls it) on Linux
/// hands its wake-up to `dispatch_after`, which cannot be withdrawn: a cancelled sleep throws
/// at once, but its wake-up job — a task and a timer source, some 700 bytes — stays in
/// libdispatch's timer heap until the deadline it was given. A deadline raced against work
/// that ends long before it (the PostgreSQL stores race 10 s for a connection and 30 s for
/// the query against every query, which takes a millisecond) then keeps that much memory
/// per call for the whole deadline: under load the process grew by about 1.4 KB per query.
/// A `DispatchSourceTimer` is unregistered, and freed, when it is cancelled.
package final class DispatchTimers: Sendable {
    /// The timers of the whole process.
    package static let shared = DispatchTimers()

    /// Timers scheduled whose sleep has not yet ended, and sleeps begun in all.
    private let live = Locked(0)
    private let begun = Locked(0)

    /// A set of timers of its own (tests count one).
    package init() {}

    /// How many sleeps are scheduled and have not ended: a sleep ends once its timer is gone
    /// from Dispatch (fired, or cancelled).
    package var count: Int { live.withLock { $0 } }

    /// How many sleeps have begun, ended or not.
    package var scheduled: Int { begun.withLock { $0 } }

    /// Sleeps for `duration` (at least; rounded up to whole nanoseconds); throws
    /// `CancellationError` when the task is cancelled — only once the timer has been taken
    /// down. A duration past about 290 years sleeps until the task is cancelled.
    package func sleep(for duration: Duration) async throws {
        let timer = SleepTimer(source: DispatchSource.makeTimerSource(queue: .global()))
        let state = Locked(TimerState())
        timer.source.setEventHandler {
            state.withLock { $0.fired = true }
            timer.source.cancel()
        }
        timer.source.setCancelHandler { [live] in
            // Dispatch has unregistered the timer; its handlers (and this closure's hold on
            // the source) go once this returns.
            live.withLock { $0 -= 1 }
            let (continuation, fired) = state.withLock { state in
                defer { state.continuation = nil }
                return (state.continuation, state.fired)
            }
            if fired { continuation?.resume() } else { continuation?.resume(throwing: CancellationError()) }
        }
        timer.source.schedule(deadline: Self.deadline(after: duration))
        live.withLock { $0 += 1 }
        begun.withLock { $0 += 1 }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Set before the source runs: no handler of an inactive source runs, not even
                // the cancel handler of one cancelled already.
                state.withLock { $0.continuation = continuation }
                timer.source.activate()
            }
        } onCancel: {
            timer.source.cancel()
        }
    }

    /// The Dispatch deadline `duration` from now, rounded up to whole nanoseconds.
    static func deadline(after duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return .now() }
        guard seconds < Int64.max / 1_000_000_000 - 1 else { return .distantFuture }
        let nanoseconds = seconds * 1_000_000_000 + (attoseconds + 999_999_999) / 1_000_000_000
        return .now() + .nanoseconds(Int(nanoseconds))
    }
}

/// What one sleep of ``DispatchTimers`` keeps: the caller's continuation, and whether the
/// timer fired (rather than being cancelled).
private struct TimerState {
    var continuation: CheckedContinuation<Void, any Error>?
    var fired = false
}

/// A Dispatch timer source, which Dispatch lets any thread schedule, activate and cancel.
private struct SleepTimer: @unchecked Sendable {
    let source: any DispatchSourceTimer
}
