import OAuth2Internals
import OAuth2TestSupport
import Testing

/// The one deadline helper, on an injected clock: no test waits for real time to pass.
@Suite(.timeLimit(.minutes(1))) struct DeadlineTests {
    struct TimedOut: Error, Equatable {}
    struct Failure: Error {}

    @Test func returnsTheResultWhenTheOperationEndsFirst() async throws {
        let value = try await withDeadline(.seconds(3600), onTimeout: { throw TimedOut() }) { 42 }
        #expect(value == 42)
    }

    @Test func passesTheOperationsErrorThrough() async {
        await #expect(throws: Failure.self) {
            try await withDeadline(.seconds(3600), onTimeout: { throw TimedOut() }) { () async throws -> Int in throw Failure() }
        }
    }

    @Test func doesNotCallOnTimeoutWhenTheOperationEndsFirst() async throws {
        let calls = Locked(0)
        // Time stops before the deadline: the timer sleeps until the operation's end cancels it.
        let clock = ImmediateClock(horizon: .seconds(1))
        let value = try await withDeadline(.seconds(2), clock: PipelineClock(clock), onTimeout: {
            calls.withLock { $0 += 1 }
            return 0
        }) { 7 }
        #expect(value == 7)
        #expect(calls.withLock { $0 } == 0)
    }

    @Test func throwsTheCallersErrorAtTheDeadlineWithoutWaitingForAnOperationThatIgnoresCancellation() async throws {
        let gate = Gate()
        defer { gate.open() }
        let clock = ImmediateClock()
        let calls = Locked(0)
        await #expect(throws: TimedOut.self) {
            // `gate.pass()` ignores cancellation, like a wait for a fetch that others share.
            try await withDeadline(.seconds(2), clock: PipelineClock(clock), onTimeout: {
                calls.withLock { $0 += 1 }
                throw TimedOut()
            }) { await gate.pass() }
        }
        #expect(clock.sleeps == [.seconds(2)])
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func returnsWhatOnTimeoutReturns() async throws {
        let gate = Gate()
        defer { gate.open() }
        let value = try await withDeadline(.seconds(5), clock: PipelineClock(ImmediateClock()), onTimeout: { "kept" }) {
            await gate.pass()
            return "late"
        }
        #expect(value == "kept")
    }

    @Test func cancelsTheOperationAtTheDeadline() async throws {
        let cancelled = Locked(false)
        let gate = Gate()
        defer { gate.open() }
        await #expect(throws: TimedOut.self) {
            try await withDeadline(.seconds(1), clock: PipelineClock(ImmediateClock()), onTimeout: { throw TimedOut() }) {
                await withTaskCancellationHandler {
                    await gate.pass()
                } onCancel: {
                    cancelled.withLock { $0 = true }
                }
            }
        }
        #expect(cancelled.withLock { $0 })
    }

    @Test func endsWhenTheCallerIsCancelled() async throws {
        let gate = Gate()
        defer { gate.open() }
        let task = Task { try await withDeadline(.seconds(3600), onTimeout: { throw TimedOut() }) { await gate.pass() } }
        await gate.arrived()
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test func aCancelledCallerWaitsForTheOperationWhenAskedTo() async throws {
        let gate = Gate()
        let ended = Locked(false)
        // Time stops before the deadline: only the operation's end can end the wait.
        let clock = ImmediateClock(horizon: .seconds(1))
        let task = Task {
            try await withDeadline(.seconds(2), clock: PipelineClock(clock), waitsForOperationWhenCancelled: true, onTimeout: { () throws -> String in throw TimedOut() }) {
                await gate.pass()  // ignores cancellation, like a query PostgresNIO does not stop
                ended.withLock { $0 = true }
                return "answered"
            }
        }
        await gate.arrived()
        task.cancel()
        gate.open()
        #expect(try await task.value == "answered")
        #expect(ended.withLock { $0 })
    }

    @Test func aCancelledCallerWaitingForTheOperationStillEndsAtTheDeadline() async throws {
        let gate = Gate()
        defer { gate.open() }
        let clock = ImmediateClock(horizon: .seconds(1))
        let task = Task {
            try await withDeadline(.seconds(2), clock: PipelineClock(clock), waitsForOperationWhenCancelled: true, onTimeout: { throw TimedOut() }) {
                await gate.pass()
            }
        }
        await gate.arrived()
        task.cancel()
        clock.passHorizon()
        await #expect(throws: TimedOut.self) { try await task.value }
    }
}

/// Holds the tasks that reach ``pass()`` until ``open()``; ignores cancellation.
final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var arrivals = 0
        var passing: [CheckedContinuation<Void, Never>] = []
        var watching: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    /// Waits until ``open()``.
    func pass() async {
        await withCheckedContinuation { continuation in
            let (now, watchers): (Bool, [CheckedContinuation<Void, Never>]) = state.withLock { state in
                state.arrivals += 1
                defer { state.watching = [] }
                if state.isOpen { return (true, state.watching) }
                state.passing.append(continuation)
                return (false, state.watching)
            }
            watchers.forEach { $0.resume() }
            if now { continuation.resume() }
        }
    }

    /// Waits until a task has reached ``pass()``.
    func arrived() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if state.arrivals > 0 { return true }
                state.watching.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Lets every waiting and later task pass.
    func open() {
        let waiting = state.withLock { state in
            state.isOpen = true
            defer { state.passing = [] }
            return state.passing
        }
        waiting.forEach { $0.resume() }
    }
}
