import OAuth2
import OAuth2JOSE
import Testing

@testable import OAuth2Web

/// The deadline that bounds a wait for a shared fetch, on an injected clock.
@Suite(.timeLimit(.minutes(1))) struct DeadlineTests {
    @Test func returnsTheResultWhenTheOperationEndsFirst() async throws {
        let value = try await withDeadline(.seconds(3600), clock: .continuous) { 42 }
        #expect(value == 42)
    }

    @Test func passesTheOperationsErrorThrough() async {
        struct Failure: Error {}
        await #expect(throws: Failure.self) { try await withDeadline(.seconds(3600), clock: .continuous) { () async throws -> Int in throw Failure() } }
    }

    @Test func endsAtTheDeadlineWithoutWaitingForAnOperationThatIgnoresCancellation() async throws {
        let gate = Gate()
        defer { gate.open() }
        let clock = InstantClock()
        await #expect(throws: DeadlineExceeded.self) {
            // `gate.pass()` ignores cancellation, like a wait for a fetch that others share.
            try await withDeadline(.seconds(2), clock: PipelineClock(clock)) { await gate.pass() }
        }
        #expect(clock.sleeps == [.seconds(2)])
    }

    @Test func endsWhenTheCallerIsCancelled() async throws {
        let gate = Gate()
        defer { gate.open() }
        let task = Task { try await withDeadline(.seconds(3600), clock: .continuous) { await gate.pass() } }
        await gate.arrived()
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
