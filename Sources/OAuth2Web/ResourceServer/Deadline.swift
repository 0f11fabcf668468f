import OAuth2
import OAuth2JOSE

/// The deadline of ``withDeadline(_:clock:_:)`` passed first.
struct DeadlineExceeded: Error {}

/// The result of `operation`, or ``DeadlineExceeded`` when it has not finished after
/// `deadline` on `clock`.
///
/// Unlike a task group, it does not wait for `operation` to end when the deadline passes:
/// `operation` may be waiting for a fetch that other callers share (the JWKS cache's), which
/// cancellation does not stop. The operation is cancelled and left to finish on its own.
/// Cancelling the caller ends the wait with `CancellationError`.
func withDeadline<T: Sendable>(
    _ deadline: Duration, clock: PipelineClock, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let state = Locked<DeadlineState<T>>(DeadlineState())
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let work = Task { () -> Void in
                do {
                    let value = try await operation()
                    DeadlineState.finish(state, with: .success(value))
                } catch {
                    DeadlineState.finish(state, with: .failure(error))
                }
            }
            let timer = Task { () -> Void in
                do { try await clock.sleep(deadline) } catch { return }
                DeadlineState.finish(state, with: .failure(DeadlineExceeded()))
            }
            let pending: Result<T, any Error>? = state.withLock { state in
                state.work = work
                state.timer = timer
                if let result = state.result { return result }
                state.continuation = continuation
                return nil
            }
            if let pending {
                work.cancel()
                timer.cancel()
                continuation.resume(with: pending)
            }
        }
    } onCancel: {
        DeadlineState.finish(state, with: .failure(CancellationError()))
    }
}

/// What ``withDeadline(_:clock:_:)`` keeps while it waits.
struct DeadlineState<T: Sendable> {
    var continuation: CheckedContinuation<T, any Error>?
    var result: Result<T, any Error>?
    var work: Task<Void, Never>?
    var timer: Task<Void, Never>?

    /// Settles the wait once: resumes the caller (or keeps the result until it waits) and
    /// cancels whichever of the operation and the timer is still running.
    static func finish(_ state: Locked<DeadlineState>, with result: Result<T, any Error>) {
        let (continuation, work, timer): (CheckedContinuation<T, any Error>?, Task<Void, Never>?, Task<Void, Never>?) = state.withLock { state in
            guard state.result == nil else { return (nil, nil, nil) }
            state.result = result
            defer { state.continuation = nil }
            return (state.continuation, state.work, state.timer)
        }
        work?.cancel()
        timer?.cancel()
        continuation?.resume(with: result)
    }
}
