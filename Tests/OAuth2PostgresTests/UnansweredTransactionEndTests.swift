#if Postgres
import Foundation
import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import PostgresNIO
import Testing

/// A body's ending that the network holds back.
enum HeldEnding: String, Sendable, CaseIterable, CustomTestStringConvertible {
    /// The body returns: the store sends `COMMIT`.
    case commit
    /// The body throws: the store sends `ROLLBACK`.
    case rollback
    var testDescription: String { rawValue.uppercased() }
}

struct BodyFailed: Error {}

/// The server process of the connection whose end is held back, and the relay's port to it.
actor HeldBackend {
    private(set) var value: (pid: Int32, port: Int)?
    func set(pid: Int32, port: Int) { value = (pid, port) }
}

@Suite("PostgresTokenStore: a COMMIT or ROLLBACK that the database never answers")
struct UnansweredTransactionEndTests {
    @Test(
        "The end of a locked transaction held back past the query timeout: the connection is closed, not pooled — no advisory lock stays held, no connection of the pool stays idle in a transaction, and the store goes on",
        arguments: HeldEnding.allCases)
    func heldEnding(_ ending: HeldEnding) async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("held")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let server = try #require(URLComponents(string: try PostgresFixture.url())?.port)
            let relay = try await TCPRelay(toPort: server)
            do {
                try await Self.holdEnding(ending, schema: schema, relay: relay, database: database)
                await relay.shutdown()
            } catch {
                await relay.shutdown()
                throw error
            }
        }
    }

    static func holdEnding(_ ending: HeldEnding, schema: String, relay: TCPRelay, database: PostgresClient) async throws {
        var url = try #require(URLComponents(string: try PostgresFixture.url()))
        url.port = relay.port
        let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
        // No cache, so no listener: every connection through the relay is the pool's. The
        // query timeout passes once for sure (what is held back is never sent); it is long
        // enough for the migration and the lock on a busy machine.
        let store = try PostgresTokenStore(
            postgres: PostgresFixture.clientConfiguration(url: url.string, maximumConnections: 2),
            configuration: .init(schema: schema, cacheCapacity: 0, queryTimeout: .seconds(10)),
            encryptionKeys: ring, logger: PostgresFixture.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            try await store.migrate()
            let key = PostgresFixture.key("held-\(ending.rawValue)")
            let lockID = store.lockID(key)
            let held = HeldBackend()

            let outcome: Result<Void, any Error>
            do {
                outcome = .success(try await store.withExclusiveAccess(to: key) {
                    try await store.save(PostgresFixture.session(key))
                    // This transaction's backend, and the relay's port towards it: from now
                    // on, what the store sends on it — its COMMIT or ROLLBACK — is held back.
                    let connection = try #require(PostgresTokenStore.transaction?.connection)
                    var me: (Int32, Int)?
                    for try await (pid, port) in try await connection.query(
                        "SELECT pid, client_port FROM pg_stat_activity WHERE pid = pg_backend_pid()", logger: PostgresFixture.logger
                    ).decode((Int32, Int32).self) {
                        me = (pid, Int(port))
                    }
                    let (pid, port) = try #require(me)
                    await held.set(pid: pid, port: port)
                    try #require(relay.hold(upstreamPort: port))
                    if ending == .rollback { throw BodyFailed() }
                })
            } catch {
                outcome = .failure(error)
            }
            switch ending {
            case .commit:
                // The writes' fate is unknown to the caller: a transient error.
                let error = try #require(throws: PostgresTokenStoreError.self) { try outcome.get() }
                #expect(error.code == .connectionFailed)
                #expect(error.isTransient)
            case .rollback:
                // The body's error, unchanged.
                #expect(throws: BodyFailed.self) { try outcome.get() }
            }
            let (pid, port) = try #require(await held.value)

            // The connection is closed rather than lent again: its backend ends (the relay drops
            // what it held, so the transaction rolls back), the lock goes with it.
            try await PostgresFixture.eventually("the held connection's backend to end and its lock to go") {
                let backend = try await database.execute("SELECT state FROM pg_stat_activity WHERE pid = \(pid)").decode(String?.self)
                let holders = try await database.execute("""
                    SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                        AND classid::bigint = \(Int64(UInt32(truncatingIfNeeded: lockID >> 32)))
                        AND objid::bigint = \(Int64(UInt32(truncatingIfNeeded: lockID)))
                    """).decode(Int64.self)
                return backend.isEmpty && holders == [0]
            }
            #expect(relay.links.first { $0.upstreamPort == port }?.isClosed == true)
            // No connection of the pool (every one goes through the relay) is inside a
            // transaction.
            let ports = relay.links.map { Int32($0.upstreamPort) }
            let inTransaction = try await database.execute("""
                SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY(\(ports)) AND state LIKE 'idle in transaction%'
                """).decode(Int64.self)
            #expect(inTransaction == [0])

            // The store goes on, on a new connection: the lock is free, the row never written.
            let stored = try await store.withExclusiveAccess(to: key) {
                let stored = try await store.load(key)
                try await store.save(PostgresFixture.session(key, access: "after"))
                return stored
            }
            #expect(stored == nil)
            #expect(try await store.load(key)?.tokens.accessToken == "after")
        }
    }
}
#endif
