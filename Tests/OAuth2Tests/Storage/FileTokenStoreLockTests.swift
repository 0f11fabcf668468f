import Foundation
import Testing
@_spi(Tooling) @testable import OAuth2
import OAuth2TestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `withExclusiveAccess` excludes other tasks and other processes; a read-increment-write
/// under it never loses an update.
@Suite struct FileTokenStoreLockTests {
    /// The key the worker's `increment` and `hold-lock` use.
    let counter = TokenSessionKey(issuer: "https://lock.example", clientID: "counter")

    /// What `increment` does, in this process.
    func increment(_ store: FileTokenStore, times: Int, pause: UInt64, inside: Occupancy? = nil) async throws {
        for _ in 0..<times {
            try await store.withExclusiveAccess(to: counter) {
                await inside?.enter()
                let count = try await store.load(counter)?.additionalFields["count"]?.integerValue ?? 0
                try await Task.sleep(nanoseconds: pause * 1_000_000)
                try await store.save(
                    StoredTokenSession(key: counter, tokens: TokenSet(accessToken: "counter"), additionalFields: ["count": .integer(count + 1)]))
                await inside?.leave()
            }
        }
    }

    func count(_ store: FileTokenStore) async throws -> Int64? {
        try await store.load(counter)?.additionalFields["count"]?.integerValue
    }

    @Test func tasksOfOneProcessTakeTurns() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            let occupancy = Occupancy()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await increment(store, times: 10, pause: 1, inside: occupancy) }
                }
                try await group.waitForAll()
            }
            #expect(try await count(store) == 80)
            #expect(await occupancy.maximum == 1)
        }
    }

    @Test func twoStoresOnOneDirectoryInOneProcessTakeTurns() async throws {
        // Each store has its own in-process lock: only the file lock keeps them apart.
        try await withTemporaryDirectory { directory in
            let first = try FileTokenStore(directory: directory)
            let second = try FileTokenStore(directory: directory)
            async let a: Void = increment(first, times: 25, pause: 1)
            async let b: Void = increment(second, times: 25, pause: 1)
            _ = try await (a, b)
            #expect(try await count(first) == 50)
        }
    }

    @Test func processesAndTasksTakeTurns() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        let result = try await Worker.run(["increment", directory.path, "20", "2"])
                        #expect(result.status == 0)
                        #expect(result.output == "done\n")
                    }
                }
                for _ in 0..<2 {
                    group.addTask { try await increment(store, times: 20, pause: 2) }
                }
                try await group.waitForAll()
            }
            #expect(try await count(store) == 100, "3 processes and 2 tasks, 20 increments each, none lost")
        }
    }

    @Test func aWaiterBlockedByAnotherProcessCanBeCancelled() async throws {
        try await withTemporaryDirectory { directory in
            let holder = try Worker.start(["hold-lock", directory.path, "60000"])
            defer { holder.send(SIGKILL); holder.waitUntilExit() }
            let first = try await onThread { holder.standardOutput!.availableData }
            #expect(String(decoding: first, as: UTF8.self) == "locked\n")

            let store = try FileTokenStore(directory: directory)
            let entered = Occupancy()
            let waiter = Task { try await store.withExclusiveAccess(to: counter) { await entered.enter() } }
            try await Task.sleep(nanoseconds: 200_000_000)
            let started = ContinuousClock.now
            waiter.cancel()
            let result = await waiter.result
            #expect(throws: CancellationError.self) { try result.get() }
            // The other process holds the lock until the test kills it: any wait would be endless.
            #expect(ContinuousClock.now - started < .seconds(30), "cancelling does not wait for the other process")
            #expect(await entered.maximum == 0)
        }
    }

    @Test func aProcessKilledWhileHoldingTheLockReleasesIt() async throws {
        try await withTemporaryDirectory { directory in
            let holder = try Worker.start(["hold-lock", directory.path, "60000"])
            let first = try await onThread { holder.standardOutput!.availableData }
            #expect(String(decoding: first, as: UTF8.self) == "locked\n")

            let store = try FileTokenStore(directory: directory)
            let acquired = Task { () -> ContinuousClock.Instant in
                try await store.withExclusiveAccess(to: counter) { ContinuousClock.now }
            }
            try await Task.sleep(nanoseconds: 300_000_000)
            let killed = ContinuousClock.now
            holder.send(SIGKILL)
            let at = try await acquired.value
            await holder.termination()
            #expect(at >= killed, "it waited for the holder")
            #expect(at - killed < .seconds(5))
        }
    }

    @Test func otherKeysAreNotBlocked() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            let other = TokenSessionKey(issuer: "https://lock.example", clientID: "counter", account: "other")
            let value = try await store.withExclusiveAccess(to: counter) {
                try await store.withExclusiveAccess(to: other) { 42 }
            }
            #expect(value == 42)
        }
    }
}

/// Counts how many bodies run at once.
actor Occupancy {
    private var current = 0
    private(set) var maximum = 0

    func enter() {
        current += 1
        maximum = max(maximum, current)
    }

    func leave() { current -= 1 }
}
