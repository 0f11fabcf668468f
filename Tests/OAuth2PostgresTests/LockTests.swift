#if Postgres
import Foundation
import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import PostgresNIO
import Testing

/// A gate a test opens when it chooses: tasks that wait on it go on only then.
actor Gate {
    private var open = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// How many tasks wait now.
    var waiting: Int { waiters.count }

    func wait() async {
        if open { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        open = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

/// Things that happened, in order.
actor Journal {
    private(set) var entries: [String] = []
    func note(_ entry: String) { entries.append(entry) }
}

@Suite("PostgresTokenStore: the advisory lock across replicas")
struct LockTests {
    /// How many sessions of the test database wait for the advisory lock `lockID` now (a
    /// 64-bit key shows in `pg_locks` as its high half in `classid`, its low half in `objid`).
    static func lockWaiters(_ database: PostgresClient, _ lockID: Int64) async throws -> Int {
        let high = Int64(UInt32(truncatingIfNeeded: lockID >> 32))
        let low = Int64(UInt32(truncatingIfNeeded: lockID))
        var count = 0
        for value in try await database.execute("""
            SELECT count(*) FROM pg_locks
            WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
                AND classid::bigint = \(high) AND objid::bigint = \(low)
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """
        ).decode(Int64.self) {
            count = Int(value)
        }
        return count
    }

    @Test("Two stores with separate pools take a key's lock one after the other; the second reads what the first wrote")
    func serialises() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("lock")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { a in
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { b in
                    let key = PostgresFixture.key()
                    try await a.save(PostgresFixture.session(key, access: "v0"))
                    try await b.migrate()
                    let journal = Journal()
                    let gate = Gate()
                    let aHolds = Gate()
                    async let first: Void = a.withExclusiveAccess(to: key) {
                        await journal.note("a in")
                        await aHolds.release()
                        await gate.wait()
                        var session = try #require(try await a.load(key))
                        session.tokens.accessToken = "v1"
                        try await a.save(session)
                        await journal.note("a out")
                    }
                    await aHolds.wait()
                    async let second: String? = b.withExclusiveAccess(to: key) {
                        await journal.note("b in")
                        return try await b.load(key)?.tokens.accessToken
                    }
                    // b's transaction is waiting for the lock in PostgreSQL itself.
                    try await PostgresFixture.eventually("b waits for the lock") {
                        try await Self.lockWaiters(database, a.lockID(key)) == 1
                    }
                    #expect(await journal.entries == ["a in"])
                    await gate.release()
                    try await first
                    #expect(try await second == "v1")
                    #expect(await journal.entries == ["a in", "a out", "b in"])
                }
            }
        }
    }

    @Test("A lock holder whose connection dies releases the lock; its writes are rolled back and it gets a transient error")
    func holderDies() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("dies")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { a in
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { b in
                    let key = PostgresFixture.key()
                    try await a.save(PostgresFixture.session(key, access: "v0"))
                    try await b.migrate()
                    let holderPID = PIDBox()
                    let holds = Gate()
                    let gate = Gate()
                    async let doomed: Void = a.withExclusiveAccess(to: key) {
                        let connection = try #require(PostgresTokenStore.transaction?.connection)
                        for try await pid in try await connection.query("SELECT pg_backend_pid()", logger: PostgresFixture.logger).decode(Int32.self) {
                            await holderPID.set(pid)
                        }
                        var session = try #require(try await a.load(key))
                        session.tokens.accessToken = "never-committed"
                        try await a.save(session)
                        await holds.release()
                        await gate.wait()
                        _ = try await a.load(key)  // the connection is gone by now
                    }
                    await holds.wait()
                    async let survivor: String? = b.withExclusiveAccess(to: key) {
                        var session = try #require(try await b.load(key))
                        let seen = session.tokens.accessToken
                        session.tokens.accessToken = "v1"
                        try await b.save(session)
                        return seen
                    }
                    try await PostgresFixture.eventually("b waits for the lock") { try await Self.lockWaiters(database, a.lockID(key)) >= 1 }
                    let pid = try #require(await holderPID.value)
                    try await database.execute("SELECT pg_terminate_backend(\(pid))")
                    #expect(try await survivor == "v0")
                    await gate.release()
                    do {
                        try await doomed
                        Issue.record("the holder whose connection died succeeded")
                    } catch let error as PostgresTokenStoreError {
                        #expect(error.code == .connectionFailed)
                        #expect(error.isTransient)
                    }
                    #expect(try await b.withExclusiveAccess(to: key) { try await b.load(key)?.tokens.accessToken } == "v1")
                }
            }
        }
    }

    @Test("A lock not granted within the lock timeout is a transient lockTimeout, and leaves the holder alone")
    func lockTimeout() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("timeout")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { a in
                let impatient = try PostgresTokenStore(
                    postgres: PostgresFixture.clientConfiguration(),
                    configuration: .init(schema: schema, lockTimeout: .milliseconds(100)), encryptionKeys: ring, logger: PostgresFixture.logger)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await impatient.run() }
                    defer { group.cancelAll() }
                    let key = PostgresFixture.key()
                    try await impatient.migrate()
                    let holds = Gate()
                    let gate = Gate()
                    async let holder: Void = a.withExclusiveAccess(to: key) {
                        await holds.release()
                        await gate.wait()
                        try await a.save(PostgresFixture.session(key, access: "holder"))
                    }
                    await holds.wait()
                    let error = await #expect(throws: PostgresTokenStoreError.self) {
                        try await impatient.withExclusiveAccess(to: key) { "entered" }
                    }
                    #expect(error?.code == .lockTimeout)
                    #expect(error?.isTransient == true)
                    await gate.release()
                    try await holder
                    #expect(try await impatient.withExclusiveAccess(to: key) { try await impatient.load(key)?.tokens.accessToken } == "holder")
                }
            }
        }
    }

    @Test("A caller cancelled while it waits for the lock stops waiting")
    func cancelledWhileWaiting() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("cancel")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { a in
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { b in
                    let key = PostgresFixture.key()
                    try await a.migrate()
                    try await b.migrate()
                    let holds = Gate()
                    let gate = Gate()
                    async let holder: Void = a.withExclusiveAccess(to: key) {
                        await holds.release()
                        await gate.wait()
                    }
                    await holds.wait()
                    let waiter = Task { try await b.withExclusiveAccess(to: key) { "entered" } }
                    try await PostgresFixture.eventually("b waits for the lock") { try await Self.lockWaiters(database, a.lockID(key)) == 1 }
                    waiter.cancel()
                    await #expect(throws: CancellationError.self) { try await waiter.value }
                    try await PostgresFixture.eventually("b no longer waits") { try await Self.lockWaiters(database, a.lockID(key)) == 0 }
                    await gate.release()
                    try await holder
                }
            }
        }
    }
}

actor PIDBox {
    private(set) var value: Int32?
    func set(_ pid: Int32) { value = pid }
}
#endif
