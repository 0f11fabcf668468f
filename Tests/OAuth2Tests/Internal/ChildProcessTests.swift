import Foundation
@_spi(Tooling) import OAuth2
import OAuth2Internals
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The child processes the browser launcher and the tests start.
@Suite struct ChildProcessTests {
    @Test func theChildInheritsOnlyItsStandardDescriptors() throws {
        // A pipe and a file open here, without close-on-exec, must not reach the child.
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let child = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "ls /proc/$$/fd"], standardOutput: .pipe)
        let listed = String(decoding: child.standardOutput!.readDataToEndOfFile(), as: UTF8.self)
        #expect(child.waitUntilExit() == .exited(0))
        let descriptors = Set(listed.split(separator: "\n").compactMap { Int32($0) })
        #expect(descriptors.isSuperset(of: [0, 1, 2]))
        #expect(!descriptors.contains(ends[0]) && !descriptors.contains(ends[1]), "listed: \(descriptors.sorted())")
        #expect(descriptors.allSatisfy { $0 <= 2 || $0 >= 10 }, "only the shell's own above 2: \(descriptors.sorted())")
    }

    @Test func standardErrorCanJoinStandardOutputAndTheEnvironmentIsTheOneGiven() throws {
        let child = try ChildProcess.spawn(
            "/bin/sh", arguments: ["-c", "echo out; echo \"err $ONLY\" >&2; exit 7"], environment: ["ONLY": "given"],
            standardOutput: .pipe, standardError: .output)
        let output = String(decoding: child.standardOutput!.readDataToEndOfFile(), as: UTF8.self)
        #expect(child.waitUntilExit() == .exited(7))
        #expect(child.waitUntilExit() == .exited(7), "asked again, the same answer")
        #expect(output == "out\nerr given\n")
    }

    @Test func aSignalIsReportedAsSuch() async throws {
        let child = try ChildProcess.spawn("/bin/sleep", arguments: ["60"], standardOutput: .null)
        child.send(SIGKILL)
        #expect(await child.termination() == .signalled(SIGKILL))
        child.send(SIGKILL)  // reaped: nothing is sent
    }

    @Test func aMissingExecutableIsATypedError() {
        #expect(throws: ChildProcess.SpawnError.self) {
            try ChildProcess.spawn("/nonexistent/program", arguments: [])
        }
    }

    @Test func manySpawnedAtOnceFromManyThreadsAllRun() async throws {
        // Foundation's Process crashed here now and then (see ChildProcess).
        try await withThrowingTaskGroup(of: ChildProcess.Termination.self) { group in
            for index in 0..<64 {
                group.addTask {
                    let child = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "exit \(index % 5)"], standardOutput: .null)
                    return await child.termination()
                }
            }
            var exits: [ChildProcess.Termination] = []
            for try await termination in group { exits.append(termination) }
            #expect(exits.count == 64)
            #expect(exits.allSatisfy { if case .exited(let status) = $0 { status < 5 } else { false } })
        }
    }
}
