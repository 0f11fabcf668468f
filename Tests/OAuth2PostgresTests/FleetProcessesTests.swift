#if Postgres
import Crypto
import Foundation
@_spi(Tooling) import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import PostgresNIO
import Testing

/// Replicas as processes of their own (`OAuth2TestWorker fleet-refresh`), sharing one session
/// through PostgreSQL, against django-oauth-toolkit, which rotates refresh tokens: a second
/// refresh with the old one would fail, and a lost new one would end the session. The refreshes
/// are counted in DOT's own database (`dot.sh refreshes`), not by the library; both tests count
/// the same client, so they run one after the other.
@Suite("PostgreSQL fleet: replica processes against django-oauth-toolkit", .serialized)
struct FleetProcessesTests {
    @Test("4 replica processes × 100 callers on one expired session, 20 rounds: one refresh a round at DOT, no failure, one token")
    func fourProcesses() async throws {
        try await DOTFleet.run(replicas: 4, callers: 100) { fleet in
            var previous = fleet.tokens
            for round in 1...20 {
                if round > 1 { try await fleet.expire() }
                let before = try await DOTFleet.refreshCount()
                let reports = try await fleet.round(round, of: fleet.workers)
                #expect(try await DOTFleet.refreshCount() - before == 1, "round \(round): one refresh reached DOT")
                #expect(reports.map(\.refreshes).reduce(0, +) == 1, "round \(round): one replica sent it")
                #expect(reports.map(\.failures).reduce(0, +) == 0, "round \(round): no caller failed")
                // A replica reads the row under the lock at most once (its callers share one
                // renewal; a replica that starts late may find the renewed row without the lock).
                #expect(reports.allSatisfy { $0.lockedReads <= 1 }, "round \(round): \(reports.map(\.lockedReads))")
                let stored = try await fleet.stored()
                #expect(Set(reports.flatMap(\.tokens)) == [DOTFleet.fingerprint(stored.accessToken)], "round \(round): every caller got the stored token")
                #expect(stored.refreshToken != previous.refreshToken, "round \(round): the rotated refresh token is saved")
                previous = stored
            }
            for worker in fleet.workers { #expect(try await worker.waitForExit(timeout: .seconds(60)) == 0, "\(worker.errorOutput)") }
            // The first refresh token is dead; the saved one works.
            await #expect(throws: OAuth2Error.self) { try await fleet.client.refresh(fleet.tokens) }
            #expect(!(try await fleet.client.refresh(previous).accessToken.isEmpty))
        }
    }

    @Test("A replica killed with SIGKILL while it holds the lock: the waiting replicas go on, and one of them refreshes")
    func killedLockHolder() async throws {
        try await DOTFleet.run(replicas: 3, callers: 100, holder: true) { fleet in
            let holder = try #require(fleet.holder)
            let before = try await DOTFleet.refreshCount()
            // The holder takes the lock and stops before its token request.
            try await fleet.prime(1, holder)
            try fleet.release(1, holder)
            try await holder.waitForLine("holding", timeout: .seconds(60))
            // The others queue behind it, then it dies.
            for worker in fleet.workers { try await fleet.prime(1, worker) }
            for worker in fleet.workers { try fleet.release(1, worker) }
            try await fleet.waitForLockWaiters(fleet.workers.count)
            let killed = ContinuousClock.now
            holder.send(SIGKILL)
            let reports = try await fleet.reports(1, of: fleet.workers)
            let served = ContinuousClock.now - killed
            print("FleetProcessesTests: every caller served \(served) after the lock holder was killed")
            #expect(try await holder.waitForExit(timeout: .seconds(60)) == 128 + SIGKILL)
            #expect(try await DOTFleet.refreshCount() - before == 1, "one refresh reached DOT")
            #expect(reports.map(\.refreshes).reduce(0, +) == 1)
            #expect(reports.map(\.failures).reduce(0, +) == 0)
            let stored = try await fleet.stored()
            #expect(Set(reports.flatMap(\.tokens)) == [DOTFleet.fingerprint(stored.accessToken)])
            #expect(stored.refreshToken != fleet.tokens.refreshToken)
        }
    }
}

/// The fleet of ``FleetProcessesTests``: a sign-in at DOT saved expired in a fresh schema, and
/// replica processes started on it.
struct DOTFleet: Sendable {
    /// What a replica printed for one round.
    struct Report: Sendable {
        var refreshes: Int
        var failures: Int
        var lockedReads: Int
        var tokens: [String]
    }

    static let environment = ProcessInfo.processInfo.environment
    static func env(_ name: String, _ fallback: String) -> String { environment[name].flatMap { $0.isEmpty ? nil : $0 } ?? fallback }
    static let clientID = env("OAUTH2_TEST_DOT_FLEET_ID", "fleet")
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    let client: OAuth2Client
    /// The tokens of the sign-in (their refresh token is the first of the chain).
    let tokens: TokenSet
    let key: TokenSessionKey
    let store: PostgresTokenStore
    let database: PostgresClient
    let workers: [RunningWorker]
    let holder: RunningWorker?
    let directory: URL

    /// Signs in at DOT (password grant, client `fleet`), saves the session expired in a fresh
    /// schema, starts `replicas` worker processes of `callers` callers (and one that holds
    /// the lock when `holder`), waits until they are ready, runs `body`, and cleans up.
    static func run(replicas: Int, callers: Int, holder: Bool = false, _ body: @Sendable (DOTFleet) async throws -> Void) async throws {
        IntegrationLog.record()
        IntegrationLog.record("dot")
        let client = try await OAuth2Client(
            server: .issuer(URL(string: env("OAUTH2_TEST_DOT_ISSUER", "http://127.0.0.1:8000/o"))!),
            configuration: ClientConfiguration(
                clientID: clientID, clientSecret: env("OAUTH2_TEST_DOT_FLEET_SECRET", "fleet-secret"), scopes: ["read"]),
            environment: HTTPEnvironment(transport: URLSessionTransport.shared, metadataCache: MetadataCache()))
        let tokens = try await client.password(username: env("OAUTH2_TEST_USER", "alice"), password: env("OAUTH2_TEST_PASSWORD", "alice-pw"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let metadata = directory.appendingPathComponent("metadata.json")
        try JSONEncoder().encode(client.metadata).write(to: metadata)
        let keyBytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        let ring = try PostgresTokenStore.EncryptionKeys(current: .init(id: "k1", bytes: keyBytes))
        let workerEnvironment = environment.merging(["OAUTH2_TEST_FLEET_KEYS": "k1:" + keyBytes.base64EncodedString()]) { $1 }
        let schema = PostgresFixture.schemaName("procs")
        let key = TokenSession.key(for: client, account: "fleet")

        try await PostgresFixture.withDatabase(dropping: schema) { database in
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                try await store.migrate()
                var expired = tokens
                expired.expiresAt = Date().addingTimeInterval(-60)
                try await store.save(StoredTokenSession(key: key, tokens: expired))
                func start(_ name: String, callers: Int, hold: Bool = false) throws -> RunningWorker {
                    let go = directory.appendingPathComponent(name)
                    try FileManager.default.createDirectory(at: go, withIntermediateDirectories: true)
                    return try RunningWorker.start(
                        ["fleet-refresh", schema, key.account, metadata.path, go.path, "20", "\(callers)"] + (hold ? ["hold"] : []),
                        environment: workerEnvironment)
                }
                let workers = try (0..<replicas).map { try start("replica-\($0)", callers: callers) }
                let holding = holder ? try start("holder", callers: 1, hold: true) : nil
                defer { for worker in workers + [holding].compactMap({ $0 }) { worker.terminate(SIGKILL) } }
                for worker in workers + [holding].compactMap({ $0 }) { try await worker.waitForLine("ready", timeout: .seconds(60)) }
                let names = Dictionary(uniqueKeysWithValues: (workers.enumerated().map { (ObjectIdentifier($0.element), "replica-\($0.offset)") })
                    + [holding].compactMap { $0 }.map { (ObjectIdentifier($0), "holder") })
                try await body(
                    DOTFleet(
                        client: client, tokens: tokens, key: key, store: store, database: database, workers: workers, holder: holding,
                        directory: directory, names: names))
            }
        }
    }

    let names: [ObjectIdentifier: String]

    private func goFile(_ worker: RunningWorker, _ name: String) -> URL {
        directory.appendingPathComponent(names[ObjectIdentifier(worker)]!).appendingPathComponent(name)
    }

    /// Asks `worker` to get ready for `round` and waits until it sees the session expired.
    func prime(_ round: Int, _ worker: RunningWorker) async throws {
        #expect(FileManager.default.createFile(atPath: goFile(worker, "\(round).prime").path, contents: Data()))
        try await worker.waitForLine("primed \(round)", timeout: .seconds(60))
    }

    /// Lets `worker`'s callers of `round` go.
    func release(_ round: Int, _ worker: RunningWorker) throws {
        #expect(FileManager.default.createFile(atPath: goFile(worker, "\(round).go").path, contents: Data()))
    }

    /// Primes `workers` for `round`, releases them together, and returns their reports.
    func round(_ round: Int, of workers: [RunningWorker]) async throws -> [Report] {
        for worker in workers { try await prime(round, worker) }
        for worker in workers { try release(round, worker) }
        return try await reports(round, of: workers)
    }

    /// Each worker's report of `round`.
    func reports(_ round: Int, of workers: [RunningWorker]) async throws -> [Report] {
        var reports: [Report] = []
        for worker in workers {
            let line = try await worker.waitForLine(startingWith: "round \(round) ", timeout: .seconds(60))
            // round R refreshes N failures N locked-reads N tokens A,B
            let words = line.split(separator: " ").map(String.init)
            try #require(words.count == 10, "\(line) \(worker.errorOutput)")
            #expect(words[5] == "0", "failures: \(worker.errorOutput)")
            reports.append(
                Report(
                    refreshes: try #require(Int(words[3])), failures: try #require(Int(words[5])), lockedReads: try #require(Int(words[7])),
                    tokens: words[9].split(separator: ",").map(String.init)))
        }
        return reports
    }

    /// Marks the stored access token expired (the replicas hear of it by notification).
    func expire() async throws {
        try await store.withExclusiveAccess(to: key) {
            var session = try #require(try await store.load(key))
            session.tokens.expiresAt = Date().addingTimeInterval(-60)
            try await store.save(session)
        }
    }

    /// The stored tokens, read from the database (not this process's cache).
    func stored() async throws -> TokenSet {
        try await store.withExclusiveAccess(to: key) { try #require(try await store.load(key)).tokens }
    }

    /// Waits until `count` sessions wait for the session's lock.
    func waitForLockWaiters(_ count: Int) async throws {
        let lockID = store.lockID(key)
        try await PostgresFixture.eventually("\(count) replicas wait for the lock", deadline: .seconds(60)) {
            let rows = try await database.execute("""
                SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
                    AND classid::bigint = \(Int64(UInt32(truncatingIfNeeded: lockID >> 32)))
                    AND objid::bigint = \(Int64(UInt32(truncatingIfNeeded: lockID)))
                """)
            return try rows.decode(Int64.self).first == Int64(count)
        }
    }

    /// Refresh tokens DOT has issued to the fleet client (its database, through dot.sh).
    static func refreshCount() async throws -> Int {
        let script = root.appendingPathComponent("scripts/test-servers/dot.sh").path
        let (status, output) = try await Worker.run([script, "refreshes", clientID], executable: URL(fileURLWithPath: "/bin/bash"), withErrors: true)
        try #require(status == 0, "dot.sh refreshes: \(output)")
        return try #require(Int(output.trimmingCharacters(in: .whitespacesAndNewlines)), "dot.sh refreshes: \(output)")
    }

    /// The worker's fingerprint of a token: the first 16 hex digits of its SHA-256.
    static func fingerprint(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
#endif
