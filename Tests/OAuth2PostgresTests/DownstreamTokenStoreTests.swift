#if Postgres
import Foundation
import Logging
import OAuth2
import OAuth2Internals
@testable import OAuth2Postgres
import OAuth2TestSupport
import PostgresNIO
import ServiceLifecycle
import Testing

@Suite("PostgresDownstreamTokenStore: downstream tokens sealed in PostgreSQL, renewed once per fleet, dropped at session end")
struct DownstreamTokenStoreTests {
    static func key(_ session: String? = "s1", audience: String = "orders", scopes: [String] = ["read"]) -> DownstreamTokenKey {
        DownstreamTokenKey(session: session, grant: .tokenExchange, issuer: "https://as.example.com", clientID: "gw", audiences: [audience], scopes: scopes)
    }

    static func token(_ value: String, expiresIn: TimeInterval = 600) -> DownstreamToken {
        let now = PostgresFixture.now
        return DownstreamToken(token: value, tokenType: "Bearer", issuedTokenType: .accessToken, scopes: ["read"], expiresAt: now.addingTimeInterval(expiresIn), issuedAt: now)
    }

    /// Runs `body` with a downstream store over `store`, its listener running and connected.
    static func withDownstream<T: Sendable>(
        _ store: PostgresTokenStore, capacity: Int = 100_000, _ body: @Sendable (PostgresDownstreamTokenStore) async throws -> T
    ) async throws -> T {
        let downstream = PostgresDownstreamTokenStore(store: store, capacity: capacity)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await downstream.run() }
            defer { group.cancelAll() }
            try await PostgresFixture.eventually("the downstream listener connects") { downstream.listenerConnectionCount >= 1 }
            return try await body(downstream)
        }
    }

    @Test("A token round-trips sealed: the row holds no token, names its key, and does not open as another key's row")
    func sealedRows() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("downstream")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let downstream = PostgresDownstreamTokenStore(store: store)
                let token = Self.token("downstream-secret-token")
                try await downstream.save(token, for: Self.key())
                #expect(try await downstream.load(Self.key()) == token)
                #expect(try await downstream.load(Self.key(scopes: ["read", "write"])) == nil, "another scope set is another row")
                let rows = try await database.execute(PostgresQuery(unsafeSQL: "SELECT key_hash, session_hash, key_id, sealed FROM \(schema).oauth2_downstream_tokens"))
                    .decode((String, String?, String, ByteBuffer).self)
                #expect(rows.count == 1)
                let (keyHash, sessionHash, keyID, sealed) = try #require(rows.first)
                #expect(keyHash == Self.key().storageID)
                #expect(sessionHash == DownstreamTokenKey.sessionID("s1"))
                #expect(keyID == "k1")
                #expect(!String(decoding: sealed.readableBytesView, as: UTF8.self).contains("downstream-secret-token"))
                #expect(try await store.keyUsage()["k1"] == 1)
                // The sealed token moved to another key's row does not open there.
                let other = Self.key("s2")
                _ = try await database.execute(PostgresQuery(unsafeSQL: """
                    INSERT INTO \(schema).oauth2_downstream_tokens SELECT '\(other.storageID)', session_hash, key_id, sealed, expires_at, updated_at
                    FROM \(schema).oauth2_downstream_tokens WHERE key_hash = '\(keyHash)'
                    """))
                await #expect(throws: PostgresTokenStoreError.self) { try await downstream.load(other) }
                do {
                    _ = try await downstream.load(other)
                } catch let error as PostgresTokenStoreError {
                    #expect(error.code == .corrupt)
                    #expect(!"\(error)".contains("downstream-secret-token"))
                }
            }
        }
    }

    @Test("The table is bounded: a write beyond the capacity removes the rows expiring soonest; removeExpired empties expired rows")
    func bounded() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("downstream")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let downstream = PostgresDownstreamTokenStore(store: store, capacity: 2)
                try await downstream.save(Self.token("a", expiresIn: 100), for: Self.key("a"))
                try await downstream.save(Self.token("b", expiresIn: 10), for: Self.key("b"))
                try await downstream.save(Self.token("c", expiresIn: 1000), for: Self.key("c"))
                #expect(try await downstream.count() == 2)
                #expect(try await downstream.load(Self.key("b")) == nil)
                #expect(try await downstream.load(Self.key("a"))?.token == "a")
                #expect(try await downstream.removeExpired(now: PostgresFixture.now.addingTimeInterval(500)) == 1)
                #expect(try await downstream.load(Self.key("c"))?.token == "c")
            }
        }
    }

    @Test("Key rotation: keyUsage counts the downstream rows, resealRows seals them with the new key")
    func keyRotation() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("downstream")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let k1 = try PostgresFixture.ringKey("k1")
            let k2 = try PostgresFixture.ringKey("k2")
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: try .init(current: k1)) { store in
                let downstream = PostgresDownstreamTokenStore(store: store)
                for name in ["a", "b", "c"] { try await downstream.save(Self.token(name), for: Self.key(name)) }
            }
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: try .init(current: k2, previous: [k1])) { store in
                let before = try await store.keyUsage()
                #expect(before == ["k1": 3])
                let resealed = try await store.resealRows()
                #expect(resealed == 3)
                let after = try await store.keyUsage()
                #expect(after == ["k2": 3])
                let again = try await store.resealRows()
                #expect(again == 0)
                let downstream = PostgresDownstreamTokenStore(store: store)
                let token = try await downstream.load(Self.key("b"))
                #expect(token?.token == "b")
            }
        }
    }

    @Test("A session ended on one replica is dropped from every replica's memory and from the table; others stay")
    func sessionEndAcrossReplicas() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("downstream")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            let fetches = Locked(0)
            let fetch: @Sendable () async throws -> DownstreamToken = {
                let n = fetches.withLock { count -> Int in
                    count += 1
                    return count
                }
                return Self.token("token-\(n)")
            }
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { storeA in
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { storeB in
                    try await Self.withDownstream(storeA) { downstreamA in
                        try await Self.withDownstream(storeB) { downstreamB in
                            let replicaA = DownstreamTokens(store: downstreamA)
                            let replicaB = DownstreamTokens(store: downstreamB)
                            for key in [Self.key("s1"), Self.key("s2")] {
                                _ = try await replicaA.token(for: key, fetch: fetch)
                                _ = try await replicaB.token(for: key, fetch: fetch)
                            }
                            #expect(fetches.withLock { $0 } == 2, "the second replica read the first's tokens")
                            #expect(replicaB.memoryCount == 2)
                            try await replicaA.endSession("s1")
                            try await PostgresFixture.eventually("replica B hears of the end") { replicaB.memoryCount == 1 }
                            #expect(try await downstreamB.count() == 1)
                            #expect(try await replicaB.token(for: Self.key("s1"), fetch: fetch).token == "token-3")
                            #expect(try await replicaB.token(for: Self.key("s2"), fetch: fetch).token == "token-2")
                        }
                    }
                }
            }
        }
    }

    @Test("4 replicas × 100 callers on a cold key: one fetch for the whole fleet")
    func oneFetchPerFleet() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("downstream")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            let fetches = Locked(0)
            let tokens = try await Self.fleet(schema: schema, ring: ring, key: Self.key()) {
                fetches.withLock { $0 += 1 }
                // Long enough that every replica is waiting on the lock meanwhile.
                try await Task.sleep(for: .milliseconds(200))
                return Self.token("fleet-token")
            }
            #expect(tokens.count == 400)
            #expect(Set(tokens) == ["fleet-token"])
            #expect(fetches.withLock { $0 } == 1)
        }
    }

    /// `replicas` stores of `schema` (each its own pool and `DownstreamTokens`), then `callers`
    /// concurrent calls for `key` on each, all released at once; every caller's token.
    static func fleet(
        schema: String, ring: PostgresTokenStore.EncryptionKeys, replicas: Int = 4, callers: Int = 100, key: DownstreamTokenKey,
        fetch: @escaping @Sendable () async throws -> DownstreamToken
    ) async throws -> [String] {
        let start = Gate()
        return try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<replicas {
                group.addTask {
                    try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { store in
                        try await store.migrate()
                        let cache = DownstreamTokens(store: PostgresDownstreamTokenStore(store: store))
                        await start.wait()
                        return try await withThrowingTaskGroup(of: String.self) { group in
                            for _ in 0..<callers {
                                group.addTask { try await cache.token(for: key, fetch: fetch).token }
                            }
                            return try await group.reduce(into: []) { $0.append($1) }
                        }
                    }
                }
            }
            try await PostgresFixture.eventually("the replicas are ready") { await start.waiting == replicas }
            await start.release()
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }
}
#endif
