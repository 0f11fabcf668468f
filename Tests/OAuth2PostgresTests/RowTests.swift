#if Postgres
import Foundation
import OAuth2
import OAuth2TestSupport
@testable import OAuth2Postgres
import PostgresNIO
import Testing

@Suite("PostgresTokenStore: rows, versions, encryption at rest")
struct RowTests {
    @Test("A session reads back as written, and list and remove see it")
    func roundTrip() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("rows")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let first = PostgresFixture.session(PostgresFixture.key("alice"))
                let second = PostgresFixture.session(PostgresFixture.key("bob"), refresh: nil)
                try await store.save(first)
                try await store.save(second)
                #expect(try await store.load(first.key) == first)
                #expect(try await store.load(second.key) == second)
                #expect(try await store.list() == [first.key, second.key])
                try await store.remove(first.key)
                try await store.remove(first.key)  // a missing row is no error
                #expect(try await store.load(first.key) == nil)
                #expect(try await store.list() == [second.key])
            }
        }
    }

    @Test("A compare-and-set write on a version that moved on is refused and writes nothing")
    func compareAndSet() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("cas")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let key = PostgresFixture.key()
                let created = try await store.save(PostgresFixture.session(key), ifVersion: nil)
                #expect(created == 1)
                let conflictOnInsert = await #expect(throws: PostgresTokenStoreError.self) {
                    try await store.save(PostgresFixture.session(key), ifVersion: nil)
                }
                #expect(conflictOnInsert?.code == .conflict)

                let (read, version) = try #require(try await store.loadVersioned(key))
                var winner = read
                winner.tokens.accessToken = "winner"
                #expect(try await store.save(winner, ifVersion: version) == version + 1)
                var loser = read
                loser.tokens.accessToken = "loser"
                let error = await #expect(throws: PostgresTokenStoreError.self) {
                    try await store.save(loser, ifVersion: version)
                }
                #expect(error?.code == .conflict)
                #expect(error?.isTransient == false)
                #expect(try await store.load(key)?.tokens.accessToken == "winner")
            }
        }
    }

    @Test("Inside the lock, a write that another writer went around is a conflict, not an overwrite")
    func conflictInsideTheLock() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("caslock")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { a in
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { b in
                    let key = PostgresFixture.key()
                    try await a.save(PostgresFixture.session(key, access: "original"))
                    let error = await #expect(throws: PostgresTokenStoreError.self) {
                        try await a.withExclusiveAccess(to: key) {
                            var session = try #require(try await a.load(key))
                            // Another replica writes without taking the lock.
                            try await b.save(PostgresFixture.session(key, access: "around-the-lock"))
                            session.tokens.accessToken = "renewed"
                            try await a.save(session)
                        }
                    }
                    #expect(error?.code == .conflict)
                    #expect(try await b.load(key)?.tokens.accessToken == "around-the-lock")
                }
            }
        }
    }

    @Test("The raw row holds no token, secret or ID token; a ciphertext copied to another row does not open")
    func encryptedAtRest() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("crypt")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let alice = PostgresFixture.session(PostgresFixture.key("alice"))
                let bob = PostgresFixture.session(PostgresFixture.key("bob"))
                try await store.save(alice)
                try await store.save(bob)

                var rows: [String] = []
                for (text, sealed) in try await database.execute(
                    PostgresQuery(unsafeSQL: "SELECT t::text, t.sealed FROM \(schema).oauth2_sessions t")
                ).decode((String, ByteBuffer).self) {
                    rows.append(text)
                    rows.append(String(decoding: sealed.readableBytesView, as: UTF8.self))
                }
                #expect(rows.count == 4)
                let secrets = [alice, bob].flatMap {
                    [$0.tokens.accessToken, $0.tokens.refreshToken!, $0.tokens.idToken!]
                }
                for row in rows {
                    for secret in secrets { #expect(!row.contains(secret)) }
                    #expect(!row.contains("subject-1"))
                }

                // Bob's ciphertext pasted into Alice's row: authentication fails.
                try await database.execute(
                    PostgresQuery(
                        unsafeSQL: """
                            UPDATE \(schema).oauth2_sessions SET sealed = (SELECT sealed FROM \(schema).oauth2_sessions WHERE account = 'bob')
                            WHERE account = 'alice'
                            """))
                try await database.execute(PostgresQuery(unsafeSQL: "NOTIFY \(schema)_oauth2_sessions, '*'"))
                let error = await #expect(throws: PostgresTokenStoreError.self) {
                    try await store.withExclusiveAccess(to: alice.key) { try await store.load(alice.key) }
                }
                #expect(error?.code == .corrupt)
                #expect(try await store.load(bob.key) == bob)
            }
        }
    }

    @Test("Key rotation: old rows still open, new writes use the new key, resealing retires the old one")
    func keyRotation() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("rotate")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let old = try PostgresFixture.ringKey("2026-10")
            let new = try PostgresFixture.ringKey("2026-11")
            let first = PostgresFixture.session(PostgresFixture.key("first"))
            let second = PostgresFixture.session(PostgresFixture.key("second"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: .init(current: old)) { store in
                try await store.save(first)
            }
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: .init(current: new, previous: [old])) { store in
                #expect(try await store.load(first.key) == first)
                try await store.save(second)
                #expect(try await store.keyUsage() == ["2026-10": 1, "2026-11": 1])
                #expect(try await store.resealRows() == 1)
                #expect(try await store.keyUsage() == ["2026-11": 2])
                #expect(try await store.load(first.key) == first)
            }
            // A replica that has only the new key opens every row now.
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: .init(current: new)) { store async throws in
                #expect(try await store.load(first.key) == first)
                #expect(try await store.load(second.key) == second)
            }
            // One that has only the old key cannot, and says which key it lacks.
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: .init(current: old)) { store async throws in
                let error = await #expect(throws: PostgresTokenStoreError.self) { try await store.load(second.key) }
                #expect(error?.code == .unknownKey)
                #expect(error?.message.contains("2026-11") == true)
            }
        }
    }

    @Test("Expired rows are removed by the injected clock's time, and only those")
    func removeExpired() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("expiry")
        let clock = ManualDate(Date(timeIntervalSince1970: 1_800_000_000))
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, now: { clock.now }) { store in
                let start = clock.now
                let accessOnly = PostgresFixture.session(PostgresFixture.key("access-only"), refresh: nil, expiresAt: start.addingTimeInterval(60))
                let refreshable = PostgresFixture.session(PostgresFixture.key("refreshable"), expiresAt: start.addingTimeInterval(60))
                var bounded = PostgresFixture.session(PostgresFixture.key("bounded"), expiresAt: start.addingTimeInterval(60), issuedAt: start)
                bounded.tokens.additionalFields["refresh_expires_in"] = .integer(600)
                for session in [accessOnly, refreshable, bounded] { try await store.save(session) }

                #expect(try await store.removeExpired() == 0)
                clock.advance(by: 120)
                #expect(try await store.removeExpired() == 1)
                #expect(try await store.list() == [bounded.key, refreshable.key])
                clock.advance(by: 600)
                #expect(try await store.removeExpired(grace: 3600) == 0)
                #expect(try await store.removeExpired() == 1)
                #expect(try await store.list() == [refreshable.key])
            }
        }
    }
}

#endif
