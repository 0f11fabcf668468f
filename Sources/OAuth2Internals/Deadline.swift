/// The result of `operation`, or what `onTimeout` returns or throws when `operation` has not
/// finished after `duration` on `clock`: the one way this package races work against a
/// deadline. Each caller throws its own typed error from `onTimeout` (or returns a value it
/// kept, as the HTTP pipeline does with the latest attempt's answer); `onTimeout` may also
/// act before the caller hears of it (the PostgreSQL store closes the connection there).
///
/// Unlike a task group, it does not wait for `operation` to end when the deadline passes:
/// `operation` is cancelled and left to finish on its own, so an operation that ignores
/// cancellation — a wait for a fetch that other callers share, a query the database never
/// answers — cannot hold the caller past its deadline. Errors of `operation` come out as
/// they are. Cancelling the caller cancels `operation` and ends the wait at once with
/// `CancellationError` — or, with `waitsForOperationWhenCancelled`, when `operation` ends
/// (with its own result) or the deadline passes, whichever is first: for an operation that
/// must not be left running behind a caller who goes on (a query on a connection the caller
/// hands back to its pool).
///
/// - Parameters:
///   - duration: how long `operation` may take.
///   - clock: the clock the deadline is measured on (tests inject one whose sleeps end at once).
///   - waitsForOperationWhenCancelled: whether a cancelled caller still waits for `operation`
///     (within the deadline).
///   - onTimeout: runs once, only when the deadline passes first.
///   - operation: the work.
package func withDeadline<T: Sendable>(
    _ duration: Duration, clock: PipelineClock = .continuous, waitsForOperationWhenCancelled: Bool = false,
    onTimeout: @escaping @Sendable () throws -> T,
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let state = Locked<DeadlineState<T>>(DeadlineState())
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let work = Task { () -> Void in
                let result: Result<T, any Error>
                do { result = .success(try await operation()) } catch { result = .failure(error) }
                DeadlineState.finish(state) { result }
            }
            let timer = Task { () -> Void in
                do { try await clock.sleep(duration) } catch { return }
                DeadlineState.finish(state) { Result { try onTimeout() } }
            }
            let (pending, settled, cancelled): (Result<T, any Error>?, Bool, Bool) = state.withLock { state in
                state.work = work
                state.timer = timer
                if let result = state.result { return (result, true, state.cancelled) }
                state.continuation = continuation
                return (nil, state.settled, state.cancelled)
            }
            if settled {
                work.cancel()
                timer.cancel()
            } else if cancelled {
                work.cancel()
            }
            if let pending { continuation.resume(with: pending) }
        }
    } onCancel: {
        if waitsForOperationWhenCancelled {
            // The operation ends the wait (or the deadline does); the task may not exist yet.
            state.withLock { state -> Task<Void, Never>? in
                state.cancelled = true
                return state.work
            }?.cancel()
        } else {
            DeadlineState.finish(state) { .failure(CancellationError()) }
        }
    }
}

/// What ``withDeadline(_:clock:onTimeout:operation:)`` keeps while it waits.
struct DeadlineState<T: Sendable> {
    var continuation: CheckedContinuation<T, any Error>?
    /// Whether the operation, the timer or the caller's cancellation has ended the wait.
    var settled = false
    /// Whether the caller was cancelled (with `waitsForOperationWhenCancelled`).
    var cancelled = false
    var result: Result<T, any Error>?
    var work: Task<Void, Never>?
    var timer: Task<Void, Never>?

    /// Settles the wait once: the first caller cancels whichever of the operation and the
    /// timer is still running, computes the result (so `onTimeout` runs only when the timer
    /// wins) and resumes the caller, or keeps the result until the caller waits.
    static func finish(_ state: Locked<DeadlineState>, with result: () -> Result<T, any Error>) {
        let (won, work, timer): (Bool, Task<Void, Never>?, Task<Void, Never>?) = state.withLock { state in
            guard !state.settled else { return (false, nil, nil) }
            state.settled = true
            return (true, state.work, state.timer)
        }
        guard won else { return }
        work?.cancel()
        timer?.cancel()
        let result = result()
        let continuation: CheckedContinuation<T, any Error>? = state.withLock { state in
            state.result = result
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }
}

/// The deadline of ``withDeadline(_:clock:onTimeout:operation:)`` passed first (for callers
/// whose own error says so elsewhere, as OAuth2Web's key and introspection waits do).
package struct DeadlineExceeded: Error {
    package init() {}
}
