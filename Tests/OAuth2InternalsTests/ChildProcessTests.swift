import Foundation
import OAuth2Internals
import Testing

/// `ChildProcess.run`: what a child writes is collected whole, its input is delivered, and
/// the project starts no child any other way.
@Suite struct ChildProcessTests {
    @Test func theInputGoesInAndBothOutputsComeBack() async throws {
        let input = Data((0..<200_000).map { UInt8($0 % 251) })   // beyond a pipe's buffer
        let run = try await ChildProcess.run(
            "/bin/sh", arguments: ["-c", "cat; echo to-stderr >&2; exit 3"], input: input)
        #expect(run.termination == .exited(3))
        #expect(!run.succeeded)
        #expect(run.standardOutput == input)
        #expect(run.errorText == "to-stderr\n")
    }

    @Test func aChildThatReadsNoInputEndsTheWriteQuietly() async throws {
        let run = try await ChildProcess.run("/bin/true", arguments: [], input: Data(count: 1 << 20))
        #expect(run.succeeded, "the test process survived the closed pipe, and the child's status came back")
    }

    @Test func standardErrorCanJoinStandardOutput() async throws {
        let run = try await ChildProcess.run("/bin/sh", arguments: ["-c", "echo one; echo two >&2"], joinStandardError: true)
        #expect(run.succeeded)
        #expect(run.text == "one\ntwo\n")
        #expect(run.standardError.isEmpty)
    }

    @Test func aChildThatOutlivesItsHangBoundIsKilled() async throws {
        let run = try await ChildProcess.run("/bin/sleep", arguments: ["600"], hangBound: .milliseconds(100))
        #expect(run.termination == .signalled(SIGKILL))
    }

    @Test func aMissingExecutableIsASpawnError() async {
        await #expect(throws: ChildProcess.SpawnError.self) {
            _ = try await ChildProcess.run("/no/such/program", arguments: [])
        }
    }

    /// Foundation's `Process` can crash the test process on Linux when it starts a child (see
    /// `ChildProcess`), and waiting for it blocks a thread of the cooperative pool: neither the
    /// library, its examples, snippets, benchmarks nor tests use it (comments aside).
    @Test func noSwiftFileOfTheProjectStartsAFoundationProcess() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let use = try Regex(#"(^|[^A-Za-z])Process(\(\)|\.run\(|\.launchedProcess)"#)
        var offenders: [String] = []
        for folder in ["Sources", "Tests", "Examples", "Snippets", "Benchmarks"] {
            let base = root.appendingPathComponent(folder)
            guard let files = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" && !file.path.contains("/.build") {
                let code = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
                    .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
                for line in code where line.contains(use) {
                    offenders.append("\(file.path.dropFirst(root.path.count + 1)): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(offenders.isEmpty, "use ChildProcess (OAuth2Internals) instead: \(offenders)")
    }
}
