#if Postgres
import Foundation
import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import OAuth2Web
import PostgresNIO
import Testing

@Suite("PostgresWebSessionStore: key rotation, and rows that cannot be opened")
struct WebSessionKeyRotationTests {
    typealias Web = WebSessionStoreTests

    @Test("Web sessions and pending sign-ins written under key A: rotated to B, keyUsage names A for them, resealRows moves them to B, and once A is retired they still open")
    func rotation() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("webkeys")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let a = try PostgresFixture.ringKey("a"), b = try PostgresFixture.ringKey("b")
            let now = PostgresFixture.now
            let records = [Web.record("one", now: now), Web.record("two", sid: "sid-2", now: now)]
            let pendings = [try await Web.pending(now: now), try await Web.pending(now: now)]

            try await PostgresFixture.withStore(schema: schema, encryptionKeys: .init(current: a)) { (store: PostgresTokenStore) async throws in
                let web = PostgresWebSessionStore(store: store)
                for record in records { try await web.save(record) }
                for pending in pendings { try await web.insert(pending) }
                #expect(try await store.keyUsage() == ["a": 4])
            }
            // Rotated: B seals, A still opens.
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: .init(current: b, previous: [a])) { (store: PostgresTokenStore) async throws in
                let web = PostgresWebSessionStore(store: store)
                #expect(try await store.keyUsage() == ["a": 4])
                #expect(try await web.session(records[0].idHash, idleLifetime: Web.idle, now: now) == records[0])
                #expect(try await store.resealRows(limit: 3) == 3)
                #expect(try await store.keyUsage() == ["a": 1, "b": 3])
                #expect(try await store.resealRows() == 1)
                #expect(try await store.resealRows() == 0)
                #expect(try await store.keyUsage() == ["b": 4])
            }
            // A retired: everything still opens.
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: .init(current: b)) { (store: PostgresTokenStore) async throws in
                let web = PostgresWebSessionStore(store: store)
                for record in records {
                    #expect(try await web.session(record.idHash, idleLifetime: Web.idle, now: now) == record)
                }
                #expect(try await web.sessions(issuer: Web.issuer, subject: "user-1", providerSessionID: nil).count == 2)
                for pending in pendings {
                    #expect(try await web.takePendingSignIn(state: pending.request.state, now: now) == pending)
                }
                #expect(try await store.keyUsage() == ["b": 2])
            }
        }
    }

    @Test("A rolling two-phase rotation — the new key added everywhere as a previous one, then made current replica by replica — loses no token session and no web session; the one-step rollout loses the web sessions the new replicas write")
    func twoPhaseRotation() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("twophase")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let old = try PostgresFixture.ringKey("old"), new = try PostgresFixture.ringKey("new")
            let now = PostgresFixture.now
            let before = try PostgresTokenStore.EncryptionKeys(current: old)
            let added = try PostgresTokenStore.EncryptionKeys(current: old, previous: [new])
            let promoted = try PostgresTokenStore.EncryptionKeys(current: new, previous: [old])
            let retired = try PostgresTokenStore.EncryptionKeys(current: new)
            let written = Written()

            // Two replicas on the rings of one step of the deployment, open at once: each writes
            // a token session and a web session, then each reads what every replica wrote so far.
            @Sendable func step(_ first: PostgresTokenStore.EncryptionKeys, _ second: PostgresTokenStore.EncryptionKeys) async throws {
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: first, cacheCapacity: 0) { (one: PostgresTokenStore) async throws in
                    try await PostgresFixture.withStore(schema: schema, encryptionKeys: second, cacheCapacity: 0) { (two: PostgresTokenStore) async throws in
                        for store in [one, two] {
                            let session = PostgresFixture.session(PostgresFixture.key(UUID().uuidString))
                            let record = Web.record(now: now)
                            try await store.save(session)
                            try await PostgresWebSessionStore(store: store).save(record)
                            await written.add(session, record)
                        }
                        for store in [one, two] {
                            let web = PostgresWebSessionStore(store: store)
                            for session in await written.sessions { #expect(try await store.load(session.key) == session) }
                            for record in await written.records {
                                #expect(try await web.session(record.idHash, idleLifetime: Web.idle, now: now) == record)
                            }
                        }
                    }
                }
            }
            try await step(before, before)
            try await step(before, added)  // phase 1, rolling
            try await step(added, added)
            try await step(added, promoted)  // phase 2, rolling
            try await step(promoted, promoted)
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: promoted, cacheCapacity: 0) { store in
                while try await store.resealRows(limit: 100) > 0 {}
                let rows = await written.sessions.count + written.records.count
                #expect(try await store.keyUsage() == ["new": rows])
            }
            try await step(retired, retired)  // the old key removed

            // The one-step rollout: a replica still on the old ring meets a web session sealed
            // under a key it does not hold, takes it for no session and deletes it.
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: retired, cacheCapacity: 0) { (newer: PostgresTokenStore) async throws in
                let record = Web.record(now: now)
                try await PostgresWebSessionStore(store: newer).save(record)
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: before, cacheCapacity: 0) { (older: PostgresTokenStore) async throws in
                    #expect(try await PostgresWebSessionStore(store: older).session(record.idHash, idleLifetime: Web.idle, now: now) == nil)
                }
                #expect(try await PostgresWebSessionStore(store: newer).session(record.idHash, idleLifetime: Web.idle, now: now) == nil)
            }
        }
    }

    /// What the replicas of ``twoPhaseRotation()`` wrote, step after step.
    private actor Written {
        var sessions: [StoredTokenSession] = []
        var records: [WebSessionRecord] = []
        func add(_ session: StoredTokenSession, _ record: WebSessionRecord) {
            sessions.append(session)
            records.append(record)
        }
    }

    @Test("A web row that cannot be opened — its key retired, its record altered, another session's record — is no session: nil, the row deleted, nothing thrown, a debug line that quotes nothing of it")
    func unopenableRows() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("webkeys")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let a = try PostgresFixture.ringKey("a"), b = try PostgresFixture.ringKey("b")
            let now = PostgresFixture.now
            let sessionsTable = "\(schema).oauth2_web_sessions", pendingTable = "\(schema).oauth2_web_pending_sign_ins"
            let kept = Web.record("kept", now: now), altered = Web.record("altered", now: now)
            let copied = Web.record("copied", now: now), removed = Web.record("removed", now: now)
            let loggedOut = Web.record("logged-out", sid: "sid-9", now: now)
            let retired = Web.record("retired", now: now)
            let pendingAltered = try await Web.pending(now: now), pendingRetired = try await Web.pending(now: now)
            let log = CapturedLog()

            try await PostgresFixture.withStore(schema: schema, encryptionKeys: .init(current: a), logger: log.logger(level: .debug)) { (store: PostgresTokenStore) async throws in
                let web = PostgresWebSessionStore(store: store)
                for record in [kept, altered, copied, removed, loggedOut, retired] { try await web.save(record) }
                for pending in [pendingAltered, pendingRetired] { try await web.insert(pending) }
                try await database.execute(PostgresQuery(unsafeSQL: """
                    UPDATE \(sessionsTable) SET record = convert_to('{"csrfToken":"secret-csrf-value"', 'UTF8') WHERE id_hash = '\(altered.idHash)'
                    """))
                try await database.execute(PostgresQuery(unsafeSQL: """
                    UPDATE \(sessionsTable) SET record = (SELECT record FROM \(sessionsTable) WHERE id_hash = '\(kept.idHash)')
                    WHERE id_hash = '\(copied.idHash)'
                    """))
                try await database.execute(PostgresQuery(unsafeSQL: """
                    UPDATE \(pendingTable) SET record = substring(record FROM 1 FOR length(record) - 1)
                    WHERE state_hash = '\(PostgresWebSessionStore.hash(pendingAltered.request.state))'
                    """))

                #expect(try await web.session(altered.idHash, idleLifetime: Web.idle, now: now) == nil)
                #expect(try await web.session(copied.idHash, idleLifetime: Web.idle, now: now) == nil)
                #expect(try await web.takePendingSignIn(state: pendingAltered.request.state, now: now) == nil)
                #expect(try await web.session(kept.idHash, idleLifetime: Web.idle, now: now) == kept)
                #expect(try await Web.count(database, sessionsTable) == 4)
                #expect(try await Web.count(database, pendingTable) == 1)
            }
            let reasons = log.lines.filter { $0.contains("cannot be opened") }
            #expect(reasons.count == 3)
            for line in reasons {
                #expect(line.hasPrefix("debug "))
                for value in ["secret-csrf-value", altered.idHash, copied.idHash, kept.csrfToken, pendingAltered.request.state] {
                    #expect(!line.contains(value))
                }
            }

            // Key A retired (not even a previous key): its rows are no sessions, and go.
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: .init(current: b)) { (store: PostgresTokenStore) async throws in
                let web = PostgresWebSessionStore(store: store)
                #expect(try await store.keyUsage() == ["a": 5])
                #expect(try await store.resealRows() == 0, "rows of a key the ring no longer holds are left")
                #expect(try await web.session(retired.idHash, idleLifetime: Web.idle, now: now) == nil)
                #expect(try await web.takePendingSignIn(state: pendingRetired.request.state, now: now) == nil)
                #expect(try await web.remove(removed.idHash) == nil)
                #expect(try await web.sessions(issuer: Web.issuer, subject: nil, providerSessionID: "sid-9") == [])
                #expect(try await web.removeSessions(issuer: Web.issuer, subject: nil, providerSessionID: "sid-9") == [])
                #expect(try await store.keyUsage() == ["a": 1])
                // A new sign-in under the same cookie id replaces what was there.
                try await web.save(kept)
                #expect(try await web.session(kept.idHash, idleLifetime: Web.idle, now: now) == kept)
            }
            #expect(try await Web.count(database, sessionsTable) == 1)
            #expect(try await Web.count(database, pendingTable) == 0)
        }
    }

    @Test("A schema at version 5 migrates to 6: the web rows get their key id from their sealed value and still open; a row that is no sealed value goes")
    func migrationFromVersion5() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("v5")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            try await database.execute(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"))
            try await database.execute(PostgresQuery(unsafeSQL: """
                CREATE TABLE \(schema).oauth2_schema_migrations (
                    version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                """))
            for migration in StoreSchema.migrations where migration.version <= 5 {
                for statement in migration.statements(schema) { try await database.execute(PostgresQuery(unsafeSQL: statement)) }
                try await database.execute(PostgresQuery(unsafeSQL: """
                    INSERT INTO \(schema).oauth2_schema_migrations (version, description) VALUES (\(migration.version), '\(migration.description)')
                    """))
            }
            // Rows as version 5 wrote them: the key id only inside the sealed value.
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("2026-11"))
            let cipher = RowCipher(ring: ring)
            let now = PostgresFixture.now
            let record = Web.record("old", now: now), pending = try await Web.pending(now: now)
            // The sealed value: 1, the key id's length, the key id, nonce + ciphertext + tag.
            func envelope(_ value: some Encodable, _ kind: String) throws -> [UInt8] {
                let (keyID, sealed) = try cipher.seal(try JSONEncoder().encode(value), binding: ["swift-oauth2 postgres \(kind)"])
                return [1, UInt8(keyID.utf8.count)] + Array(keyID.utf8) + Array(sealed)
            }
            let sealedRecord = try envelope(record, "web session"), sealedPending = try envelope(pending, "pending sign-in")
            try await database.execute("""
                INSERT INTO \(unescaped: schema).oauth2_web_sessions (id_hash, issuer, subject, provider_session_id, record, last_seen_at, absolute_expiry)
                VALUES (\(record.idHash), \(record.issuer), \(record.subject), \(record.providerSessionID), \(ByteBuffer(bytes: sealedRecord)),
                    \(record.lastSeenAt), \(record.absoluteExpiry)),
                    ('garbage', 'https://id.example.com', 'x', NULL, convert_to('{"plain": true}', 'UTF8'), \(now), \(now.addingTimeInterval(600))),
                    ('empty', 'https://id.example.com', 'x', NULL, ''::bytea, \(now), \(now.addingTimeInterval(600)))
                """)
            try await database.execute("""
                INSERT INTO \(unescaped: schema).oauth2_web_pending_sign_ins (state_hash, record, expires_at)
                VALUES (\(PostgresWebSessionStore.hash(pending.request.state)), \(ByteBuffer(bytes: sealedPending)), \(pending.expiresAt)),
                    ('garbage', '\\x0105'::bytea, \(pending.expiresAt))
                """)

            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { (store: PostgresTokenStore) async throws in
                #expect(try await store.migrate() == [6, 7, 8])
                #expect(try await store.keyUsage() == ["2026-11": 2])
                let web = PostgresWebSessionStore(store: store)
                #expect(try await web.session(record.idHash, idleLifetime: Web.idle, now: now) == record)
                #expect(try await web.takePendingSignIn(state: pending.request.state, now: now) == pending)
            }
            #expect(try await Web.count(database, "\(schema).oauth2_web_sessions") == 1)
            #expect(try await Web.count(database, "\(schema).oauth2_web_pending_sign_ins") == 0)
            let nullable = try await database.execute(PostgresQuery(unsafeSQL: """
                SELECT is_nullable FROM information_schema.columns
                WHERE table_schema = '\(schema)' AND table_name LIKE 'oauth2_web_%' AND column_name = 'key_id'
                """)).decode(String.self)
            #expect(nullable == ["NO", "NO"])
        }
    }
}
#endif
