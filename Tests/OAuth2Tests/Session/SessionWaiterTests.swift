import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// The waiters of a renewal: an array in arrival order whose slots a cancelled caller
/// leaves as tombstones, emptied when renewals end.
@Suite struct SessionWaiterTests {
    /// Starts `count` callers of `freshAccessToken()` and waits until every one of them
    /// waits for the renewal.
    static func callers(_ count: Int, of session: TokenSession, forcing: Bool = false) async -> [Task<String, any Error>] {
        let before = session.waitingCallers
        let tasks = (0..<count).map { _ in
            Task { forcing ? try await session.refresh().accessToken : try await session.freshAccessToken() }
        }
        await waitUntil { session.waitingCallers == before + count }
        return tasks
    }

    /// Polls `condition` (a 30 s watchdog): what the test asserts is the state, never
    /// the time it took.
    static func waitUntil(_ condition: () -> Bool) async {
        for _ in 0..<15000 where !condition() { try? await Task.sleep(for: .milliseconds(2)) }
    }

    static func expectCancelled(_ task: Task<String, any Error>) async {
        do {
            _ = try await task.value
            Issue.record("a cancelled caller got a token")
        } catch let error as OAuth2Error {
            #expect(error.code == .cancelled)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func aCallerCancelledInTheMiddleLeavesTheOthersInPlace() async throws {
        let gate = Gate()
        let provider = ScriptedProvider()
        provider.onToken { _, count in
            await gate.pass()
            return tokenResponse("at-\(count)", refreshToken: "rt-\(count)")
        }
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens())
        let tasks = await Self.callers(20, of: session)
        #expect(session.waitingCallers == 20)
        await gate.waitForArrivals()
        for index in [0, 7, 8, 19] { tasks[index].cancel() }
        for index in [0, 7, 8, 19] { await Self.expectCancelled(tasks[index]) }
        #expect(session.waitingCallers == 16)
        gate.release()
        for (index, task) in tasks.enumerated() where ![0, 7, 8, 19].contains(index) {
            #expect(try await task.value == "at-1")
        }
        #expect(session.waitingCallers == 0)
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func manyCancellationsLeaveOneCallerAndTheRenewalRunsToItsEnd() async throws {
        let gate = Gate()
        let provider = ScriptedProvider()
        provider.onToken { _, count in
            await gate.pass()
            return tokenResponse("at-\(count)", refreshToken: "rt-\(count)")
        }
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        let tasks = await Self.callers(300, of: session)
        await gate.waitForArrivals()
        for task in tasks.dropLast() { task.cancel() }
        for task in tasks.dropLast() { await Self.expectCancelled(task) }
        #expect(session.waitingCallers == 1)
        gate.release()
        #expect(try await tasks.last!.value == "at-1")
        #expect(try await store.load(session.key)?.tokens.refreshToken == "rt-1")
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func everyCallerCancelledStillSavesTheRenewal() async throws {
        let gate = Gate()
        let provider = ScriptedProvider()
        provider.onToken { _, count in
            await gate.pass()
            return tokenResponse("at-\(count)", refreshToken: "rt-\(count)")
        }
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        let tasks = await Self.callers(50, of: session)
        await gate.waitForArrivals()
        for task in tasks { task.cancel() }
        for task in tasks { await Self.expectCancelled(task) }
        #expect(session.waitingCallers == 0)
        #expect(session.tokens?.accessToken == "at-0")
        gate.release()
        await Self.waitUntil { session.tokens?.accessToken == "at-1" }
        #expect(session.tokens?.accessToken == "at-1")
        #expect(try await store.load(session.key)?.tokens.refreshToken == "rt-1")
        #expect(try await session.freshAccessToken() == "at-1")
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func slotsOfOneRenewalAreNotConfusedWithTheNextOnes() async throws {
        // Two renewals one after the other, each with callers cancelled in the middle: a
        // cancellation reaches its own caller only, never the one that took its place.
        let gates = [Gate(), Gate()]
        let provider = ScriptedProvider()
        provider.onToken { _, count in
            await gates[count - 1].pass()
            return tokenResponse("at-\(count)", refreshToken: "rt-\(count)")
        }
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens())
        let first = await Self.callers(10, of: session)
        await gates[0].waitForArrivals()
        first[3].cancel()
        await Self.expectCancelled(first[3])
        gates[0].release()
        for (index, task) in first.enumerated() where index != 3 { #expect(try await task.value == "at-1") }
        #expect(session.waitingCallers == 0)

        // Forced renewals (each refuses at-1), sharing one request.
        let second = await Self.callers(10, of: session, forcing: true)
        await gates[1].waitForArrivals()
        first[4].cancel()  // already answered: nothing happens to the second renewal's callers
        second[4].cancel()
        await Self.expectCancelled(second[4])
        #expect(session.waitingCallers == 9)
        gates[1].release()
        for (index, task) in second.enumerated() where index != 4 { #expect(try await task.value == "at-2") }
        #expect(session.waitingCallers == 0)
        #expect(provider.tokenRequestCount == 2)
    }

    @Test func waiterSlotsAreCompactedAfterEachRenewal() async throws {
        let provider = ScriptedProvider()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens())
        for round in 1...3 {
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<100 { group.addTask { try await session.refresh().accessToken } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            // Every caller of a round got a token from this round's renewals, and none is left.
            #expect(!tokens.isEmpty)
            #expect(session.waitingCallers == 0)
            #expect(session.waiterSlots == 0, "round \(round)")
        }
    }

    @Test func aMemoryStoreKeepsNoLockForAnIdleKey() async throws {
        let store = MemoryTokenStore()
        let key = TokenSessionKey(issuer: "https://as.example.com", clientID: "c")
        let gate = Gate()
        let holder = Task {
            try await store.withExclusiveAccess(to: key) { await gate.pass() }
        }
        await gate.waitForArrivals()
        #expect(await store.lockCount == 1)
        let waiter = Task { try await store.withExclusiveAccess(to: key) { 42 } }
        let cancelled = Task { try await store.withExclusiveAccess(to: key) { 0 } }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(await store.lockCount == 1)
        gate.release()
        try await holder.value
        #expect(try await waiter.value == 42)
        #expect(await store.lockCount == 0)
        // Mutual exclusion still holds with the lock made anew for each burst of use.
        let counter = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await store.withExclusiveAccess(to: key) {
                        let inside = counter.enter()
                        #expect(inside == 1)
                        await Task.yield()
                        counter.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(await store.lockCount == 0)
    }
}

/// How many tasks are inside a critical section.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var inside = 0

    func enter() -> Int { lock.withLock { inside += 1; return inside } }
    func leave() { lock.withLock { inside -= 1 } }
}
