import OAuth2Internals
import Testing

/// The sleeps behind every deadline: a cancelled one takes its timer down before it throws,
/// instead of leaving it (and its memory) with Dispatch until the deadline it was given.
@Suite(.timeLimit(.minutes(1))) struct DispatchTimersTests {
    @Test func aCancelledSleepLeavesNoTimerBehind() async throws {
        let timers = DispatchTimers()
        let sleeper = Task { try await timers.sleep(for: .seconds(3600)) }
        // Scheduled before it is cancelled (else the test would prove nothing).
        while timers.count == 0 { await Task.yield() }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(timers.count == 0)
    }

    @Test func aSleepOfATaskCancelledBeforehandThrowsAndLeavesNoTimer() async throws {
        let timers = DispatchTimers()
        await withTaskGroup(of: Void.self) { group in
            group.cancelAll()
            group.addTask {
                await #expect(throws: CancellationError.self) { try await timers.sleep(for: .seconds(3600)) }
            }
        }
        #expect(timers.count == 0)
    }

    @Test func aSleepThatRunsOutReturns() async throws {
        let timers = DispatchTimers()
        try await timers.sleep(for: .zero)
        try await timers.sleep(for: .nanoseconds(1))
        #expect(timers.count == 0)
    }

    @Test func manyDeadlinesThatTheirOperationsBeatLeaveNoTimerBehind() async throws {
        // The PostgreSQL stores' pattern: a long deadline per query, the query done at once.
        let timers = DispatchTimers()
        let clock = PipelineClock(ContinuousClock(), timers: timers)
        for index in 0..<200 {
            let value = try await withDeadline(.seconds(3600), clock: clock, onTimeout: { -1 }) { index }
            #expect(value == index)
        }
        // Each deadline's timer task was cancelled when its operation ended, perhaps before it
        // began its sleep; once all 200 have begun, none may stay (a cancelled `Task.sleep`
        // would stay for the hour: this loop would then run into the time limit).
        while timers.scheduled < 200 || timers.count > 0 { await Task.yield() }
        #expect(timers.scheduled == 200)
        #expect(timers.count == 0)
    }
}
