import Foundation
import OAuth2Internals
import Testing
@_spi(Tooling) @testable import OAuth2
import OAuth2TestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Crash safety: four child processes share one store — three save documents of over
/// 64 KB in a loop (each its own record, each save with the next sequence number), one
/// plants version-1 documents and has the store migrate them — and each is killed with
/// SIGKILL at a random moment, round after round. After every round the store must load
/// every record, and each must hold the last sequence number its child reported as done,
/// or the one after it (killed between the rename and the report): never an error,
/// nothing, an older number, or a document that mixes two writes.
///
/// `OAUTH2_CRASH_KILLS` sets the number of kills (default 200, the CI gate);
/// scripts/crash-test runs 1,000 and docs/crash-safety.md has the figures.
@Suite struct FileTokenStoreCrashTests {
    static let kills = ProcessInfo.processInfo.environment["OAUTH2_CRASH_KILLS"].flatMap(Int.init) ?? 200
    static let writers = ["writer-1", "writer-2", "writer-3"]
    static let migrator = "migrator"

    static func key(_ account: String) -> TokenSessionKey {
        TokenSessionKey(issuer: "https://crash.example", clientID: "writer", account: account)
    }

    /// The sequence number of `session`, after checking every byte its child wrote for it.
    static func sequence(of session: StoredTokenSession, account: String) -> Int64? {
        let token = session.tokens.accessToken
        guard token.hasPrefix("seq="), let end = token.firstIndex(of: ";"), let seq = Int64(token[token.index(token.startIndex, offsetBy: 4)..<end])
        else { return nil }
        let unit = "seq=\(seq);"
        var intact =
            session.key == key(account)
            && token == String(repeating: unit, count: 65_536 / unit.utf8.count + 1)
            && session.tokens.refreshToken == "refresh-\(seq)"
            && session.tokens.expiresAt == Date(timeIntervalSince1970: 1_800_000_000 + Double(seq))
        if account != migrator {
            intact = intact && session.additionalFields["seq"]?.integerValue == seq
                && session.updatedAt == Date(timeIntervalSince1970: 1_700_000_000 + Double(seq))
        }
        return intact ? seq : nil
    }

    /// One child of a round, and what it reported before it was killed.
    struct Child {
        var account: String
        var process: ChildProcess
    }

    /// Starts every child from the numbers after `last`, kills each at its own random
    /// moment, reaps them; returns the last number each reported, and the temporary files
    /// left behind (kills inside a write: between creating and renaming a temporary file).
    static func runRound(directory: URL, last: [String: Int64]) throws -> (reported: [String: Int64?], temporaryFiles: Int) {
        var children: [Child] = []
        for account in writers + [migrator] {
            let first = String((last[account] ?? 0) + 1)
            let arguments = account == migrator
                ? ["migrate-loop", directory.path, first, account] : ["write-loop", directory.path, first, account]
            children.append(Child(account: account, process: try Worker.start(arguments)))
        }
        // One round in four kills anywhere from start-up on. The others wait for every
        // child's first save (however slow the machine); then one in three of them kills
        // every child as soon as a temporary file is seen, so that kills inside a write
        // happen whatever the machine's speed, and the rest kill the children one by one,
        // each after its own random pause: anywhere in a save, a migration, a rename.
        let strategy = Int.random(in: 0..<4)
        if strategy == 0 {
            usleep(UInt32.random(in: 0...40_000))
        } else {
            for child in children {
                var poller = pollfd(fd: child.process.standardOutput!.fileDescriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&poller, 1, 30_000)
            }
        }
        if strategy == 1 {
            let watchdog = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < watchdog,
                !((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).contains(where: { $0.contains(".tmp-") })
            {
                sched_yield()
            }
            for child in children { child.process.send(SIGKILL) }
        } else {
            for child in children.shuffled() {
                usleep(UInt32.random(in: 0...8_000))
                child.process.send(SIGKILL)
            }
        }
        var reported: [String: Int64?] = [:]
        for child in children {
            let termination = child.process.waitUntilExit()
            guard termination == .signalled(SIGKILL) else { throw CrashTestError.endedOnItsOwn(child.account, termination) }
            let text = String(decoding: child.process.standardOutput!.readDataToEndOfFile(), as: UTF8.self)
            reported[child.account] = text.split(separator: "\n").last.flatMap { Int64($0) }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return (reported, names.filter { $0.contains(".tmp-") }.count)
    }

    enum CrashTestError: Error { case endedOnItsOwn(String, ChildProcess.Termination) }

    @Test(.timeLimit(.minutes(30)))
    func survivesKillsAtRandomMomentsOfSeveralWritersAndAMigration() async throws {
        try await withTemporaryDirectory { directory in
            let perRound = Self.writers.count + 1
            let rounds = (Self.kills + perRound - 1) / perRound
            var last: [String: Int64] = [:]  // the number each record holds; absent: nothing yet
            var sameAsReported = 0, oneAhead = 0, temporaryFiles = 0, empty = 0
            let started = ContinuousClock.now

            for round in 1...rounds {
                let (reported, leftovers) = try await onThread { [last] in try Self.runRound(directory: directory, last: last) }
                temporaryFiles += leftovers
                // Opening the store cleans up after the dead writers; then every record must load.
                let store = try FileTokenStore(directory: directory)
                for account in Self.writers + [Self.migrator] {
                    let expected = (reported[account] ?? nil) ?? last[account] ?? 0
                    let loaded = try await store.load(Self.key(account))
                    if expected == 0 && loaded == nil {
                        empty += 1
                        continue
                    }
                    let session = try #require(loaded, "round \(round), \(account): the record is gone, \(expected) was saved")
                    let seq = try #require(
                        Self.sequence(of: session, account: account), "round \(round), \(account): not a document its child wrote whole")
                    #expect(seq == expected || seq == expected + 1, "round \(round), \(account): holds \(seq), \(expected) was the last saved")
                    if seq == expected { sameAsReported += 1 } else { oneAhead += 1 }
                    last[account] = seq
                }
            }

            let kills = rounds * perRound
            let elapsed = ContinuousClock.now - started
            #expect(try fileNames(directory).filter { $0.contains(".tmp-") }.isEmpty, "temporary files of dead writers are removed when a store opens")
            #expect(temporaryFiles > 0, "some kills land inside a write (\(temporaryFiles) of \(kills))")
            #expect((Self.writers + [Self.migrator]).allSatisfy { (last[$0] ?? 0) > 0 }, "every child saved")
            print(
                "crash test: \(kills) kills (\(rounds) rounds of \(Self.writers.count) writers and 1 migration) in \(elapsed); "
                    + "records holding the last reported number \(sameAsReported)×, the next one \(oneAhead)×, none yet \(empty)×; "
                    + "kills inside a write (temporary files left): \(temporaryFiles) (\(temporaryFiles * 100 / max(kills, 1)) %); "
                    + "last numbers \(last.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
        }
    }
}
