import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Crash safety: a child process saves documents of over 64 KB in a loop, each with the
/// next sequence number, and is killed with SIGKILL at a random moment, 200 times. After
/// every kill the store must load, and hold the last sequence number the child reported
/// as saved, or the one after it (killed between the rename and the report) — never an
/// error, nothing, an older number, or a document that mixes two writes.
@Suite struct FileTokenStoreCrashTests {
    static let kills = 200
    let key = SessionKey(issuer: "https://crash.example", clientID: "writer")

    /// What one round saw.
    struct Round: Sendable {
        var reported: Int64?  // the last number the child printed, if any
        var killedBySIGKILL: Bool
        var exitDescription: String
        var temporaryFilesLeft: Int
    }

    /// Starts `write-loop` from `first`, kills it at a random moment, reaps it.
    static func runChild(directory: URL, first: Int64) throws -> Round {
        let (process, output) = try Worker.start(["write-loop", directory.path, String(first)])
        let descriptor = output.fileHandleForReading.fileDescriptor
        if Int.random(in: 0..<4) == 0 {
            // Anywhere from start-up to the first writes.
            usleep(UInt32.random(in: 0...40_000))
        } else {
            // In the middle of the writing: after the first save, plus up to 20 ms.
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, 10_000)
            usleep(UInt32.random(in: 0...20_000))
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return Round(
            reported: text.split(separator: "\n").last.flatMap { Int64($0) },
            killedBySIGKILL: process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL,
            exitDescription: "reason \(process.terminationReason.rawValue), status \(process.terminationStatus)",
            temporaryFilesLeft: names.filter { $0.contains(".tmp-") }.count)
    }

    /// The sequence number of `session`, after checking every byte the child wrote for it.
    func sequence(of session: StoredSession) -> Int64? {
        guard let seq = session.additionalFields["seq"]?.integerValue else { return nil }
        let unit = "seq=\(seq);"
        let intact =
            session.key == key
            && session.tokens.accessToken == String(repeating: unit, count: 65_536 / unit.utf8.count + 1)
            && session.tokens.refreshToken == "refresh-\(seq)"
            && session.tokens.expiresAt == Date(timeIntervalSince1970: 1_800_000_000 + Double(seq))
            && session.updatedAt == Date(timeIntervalSince1970: 1_700_000_000 + Double(seq))
        return intact ? seq : nil
    }

    @Test(.timeLimit(.minutes(10)))
    func survives200KillsAtRandomMoments() async throws {
        try await withTemporaryDirectory { directory in
            var last: Int64 = 0  // the number the store holds; 0: nothing yet
            var sameAsReported = 0, oneAhead = 0, killsWithoutAWrite = 0, killsMidWrite = 0
            let started = ContinuousClock.now

            for round in 1...Self.kills {
                let child = try await onThread { [last] in try Self.runChild(directory: directory, first: last + 1) }
                try #require(child.killedBySIGKILL, "round \(round): the child ended on its own (\(child.exitDescription))")
                if child.temporaryFilesLeft > 0 { killsMidWrite += 1 }

                // Opening the store cleans up after the dead writer; then it must load.
                let store = try FileTokenStore(directory: directory)
                let expected = child.reported ?? last
                let loaded = try await store.load(key)
                if expected == 0 && loaded == nil {
                    killsWithoutAWrite += 1
                    continue
                }
                let session = try #require(loaded, "round \(round): the store is empty, \(expected) was saved")
                let seq = try #require(sequence(of: session), "round \(round): the document is not one the child wrote whole")
                #expect(seq == expected || seq == expected + 1, "round \(round): holds \(seq), \(expected) was the last saved")
                if seq == expected { sameAsReported += 1 } else { oneAhead += 1 }
                if child.reported == nil { killsWithoutAWrite += 1 }
                last = seq
            }

            let elapsed = ContinuousClock.now - started
            let leftovers = try fileNames(directory).filter { $0.contains(".tmp-") }
            #expect(leftovers.isEmpty, "temporary files of dead writers are removed when a store opens")
            #expect(last > Int64(Self.kills), "the child saved more than once per round on average")
            #expect(killsMidWrite > 0, "some kills landed between creating and renaming a temporary file")
            print(
                "crash test: \(Self.kills) kills in \(elapsed); last sequence number \(last); "
                    + "store held the last reported number \(sameAsReported)×, the next one \(oneAhead)×; "
                    + "kills before the round's first save completed: \(killsWithoutAWrite); "
                    + "kills that left a half-written temporary file: \(killsMidWrite)")
        }
    }
}
