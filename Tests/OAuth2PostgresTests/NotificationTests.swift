#if Postgres
import Foundation
import OAuth2
import OAuth2Internals
@testable import OAuth2Postgres
import OAuth2TestSupport
import PostgresNIO
import Testing

@Suite("PostgresTokenStore: the in-process cache and notifications")
struct NotificationTests {
    @Test("A fresh load costs no round trip; another replica's write reaches this replica's cache by notification")
    func invalidatedByAnotherReplica() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("notify")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { a in
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { b in
                    let key = PostgresFixture.key()
                    try await b.save(PostgresFixture.session(key, access: "v0"))
                    try await PostgresFixture.eventually("a hears b's first write") { a.statistics.notifications == 1 }
                    #expect(try await a.load(key)?.tokens.accessToken == "v0")
                    #expect(try await a.load(key)?.tokens.accessToken == "v0")
                    #expect(a.statistics.cacheHits == 1)
                    #expect(a.statistics.cacheMisses == 1)

                    let heard = a.statistics.notifications
                    try await b.save(PostgresFixture.session(key, access: "v1"))
                    try await PostgresFixture.eventually("a hears b's write") { a.statistics.notifications > heard }
                    #expect(try await a.load(key)?.tokens.accessToken == "v1")

                    // Sign-out on b reaches a at once.
                    let heardBefore = a.statistics.notifications
                    try await b.remove(key)
                    try await PostgresFixture.eventually("a hears b's removal") { a.statistics.notifications > heardBefore }
                    #expect(try await a.load(key) == nil)
                }
            }
        }
    }

    @Test("When the listening connection drops (pg_terminate_backend), the cache is emptied before it serves again, and observers hear that changes may have been missed")
    func listenerDropEmptiesCache() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("drop")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let key = PostgresFixture.key()
                try await store.save(PostgresFixture.session(key))
                // The store hears its own write too: wait for it, so that it cannot empty the
                // cache entry the next load makes.
                try await PostgresFixture.eventually("the store hears its write") { store.statistics.notifications == 1 }
                #expect(try await store.load(key) != nil)
                // Deleted behind the store's back, without a notification: the cache still
                // has it (what a missed notification would do).
                try await database.execute(PostgresQuery(unsafeSQL: "DELETE FROM \(schema).oauth2_sessions"))
                #expect(try await store.load(key) != nil)
                #expect(store.statistics.cacheHits == 1)
                let heard = Locked<[TokenStoreChange]>([])
                let observation = store.observeChanges(of: key) { change in heard.withLock { $0.append(change) } }
                defer { observation.cancel() }

                let pid = try #require(store.listenerProcessID)
                try await database.execute("SELECT pg_terminate_backend(\(pid))")
                await store.waitForListener(connections: 2)
                #expect(store.listenerProcessID != pid)
                #expect(try await store.load(key) == nil)
                #expect(store.statistics.cacheHits == 1)
                try await PostgresFixture.eventually("the observer hears of the reconnection") { !heard.withLock(\.isEmpty) }
                #expect(heard.withLock { $0 } == [.changesMayHaveBeenMissed])
            }
        }
    }

    @Test("Removing every session of an account on one replica empties it from the other replicas' caches")
    func signOutEverywhere() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("signout")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { a in
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { b in
                    let alice = PostgresFixture.key("alice")
                    let bob = PostgresFixture.key("bob")
                    try await b.save(PostgresFixture.session(alice))
                    try await b.save(PostgresFixture.session(bob))
                    try await PostgresFixture.eventually("a hears both writes") { a.statistics.notifications == 2 }
                    #expect(try await a.load(alice) != nil)
                    #expect(try await a.load(bob) != nil)
                    #expect(try await a.load(alice) != nil)
                    #expect(a.statistics.cacheHits == 1)

                    #expect(try await b.removeAll(issuer: alice.issuer, clientID: alice.clientID, account: "alice") == 1)
                    try await PostgresFixture.eventually("a hears the sign-out") { a.statistics.notifications == 3 }
                    #expect(try await a.load(alice) == nil)
                    #expect(try await a.load(bob) != nil)
                    #expect(try await b.removeAll(issuer: alice.issuer, clientID: alice.clientID) == 1)
                    try await PostgresFixture.eventually("a hears the second sign-out") { a.statistics.notifications == 4 }
                    #expect(try await a.load(bob) == nil)
                }
            }
        }
    }

    @Test("With the cache switched off, every load reads the database")
    func cacheOff() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("nocache")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { store in
                let key = PostgresFixture.key()
                try await store.save(PostgresFixture.session(key))
                #expect(try await store.load(key) != nil)
                try await database.execute(PostgresQuery(unsafeSQL: "DELETE FROM \(schema).oauth2_sessions"))
                #expect(try await store.load(key) == nil)
                #expect(store.statistics.cacheHits == 0)
            }
        }
    }

    @Test("The cache holds at most its capacity")
    func bounded() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("bounded")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 3) { store in
                let keys = (0..<5).map { PostgresFixture.key("user-\($0)") }
                for key in keys { try await store.save(PostgresFixture.session(key)) }
                // Its own writes come back as notifications, each dropping its key's entry:
                // they must all be in before the cache is filled.
                try await PostgresFixture.eventually("the store hears its five writes") { store.statistics.notifications == 5 }
                for key in keys { _ = try await store.load(key) }
                #expect(store.state.withLock { $0.cache.entries.count } == 3)
                // The two oldest went; the three newest are served from memory.
                for key in keys.suffix(3) { _ = try await store.load(key) }
                #expect(store.statistics.cacheHits == 3)
            }
        }
    }
}
#endif
