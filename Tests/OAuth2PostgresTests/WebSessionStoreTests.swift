#if Postgres
import Foundation
import OAuth2
import OAuth2JOSE
@testable import OAuth2Postgres
import OAuth2TestSupport
import OAuth2Web
import PostgresNIO
import Testing

@Suite("PostgresWebSessionStore: a web app's sessions and pending sign-ins shared by its replicas")
struct WebSessionStoreTests {
    static let issuer = "https://id.example.com"
    static let idle: TimeInterval = 3600

    /// A session record of `subject` (provider session `sid`) last used at `now`, ending
    /// absolutely a day later; dates in whole seconds (they read back exactly).
    static func record(
        _ id: String = UUID().uuidString, issuer: String = issuer, subject: String = "user-1", sid: String? = "sid-1", now: Date
    ) -> WebSessionRecord {
        WebSessionRecord(
            idHash: PostgresWebSessionStore.hash(id), account: "web-\(id)", issuer: issuer, subject: subject, providerSessionID: sid,
            claims: ["sub": .string(subject), "name": "Ada", "email_verified": true, "n": 7],
            scopes: ["openid", "profile"], csrfToken: "csrf-\(id)", createdAt: now, lastSeenAt: now,
            absoluteExpiry: now.addingTimeInterval(24 * 3600))
    }

    /// A pending sign-in started at `now` (a real authorization request of a client that
    /// needs no server), expiring 10 minutes later.
    static func pending(now: Date) async throws -> PendingSignIn {
        let client = try await OAuth2Client(
            server: .metadata(ServerMetadata(
                issuer: URL(string: issuer)!, authorizationEndpoint: URL(string: "\(issuer)/authorize")!,
                tokenEndpoint: URL(string: "\(issuer)/token")!)),
            configuration: ClientConfiguration(clientID: "web-app", redirectURI: URL(string: "https://app.example.com/auth/callback")!))
        let request = try await client.startAuthorization(AuthorizationOptions(scopes: ["openid", "profile"]))
        return PendingSignIn(
            request: request, browserBindingHash: PostgresWebSessionStore.hash(UUID().uuidString), returnTo: "/orders?page=2",
            requirement: WebAccessRequirement(scopes: ["orders:read"]), expiresAt: now.addingTimeInterval(600))
    }

    static func count(_ database: PostgresClient, _ table: String) async throws -> Int64 {
        try await database.execute(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)")).decode(Int64.self).first ?? -1
    }

    @Test("A session reads back as saved; a touch moves its last use forward, never back; a save replaces it")
    func saveLoadTouch() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("web")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let sessions = PostgresWebSessionStore(store: store)
                let now = PostgresFixture.now
                let saved = Self.record("a", now: now)
                try await sessions.save(saved)
                #expect(try await sessions.session(saved.idHash, idleLifetime: Self.idle, now: now) == saved)
                #expect(try await sessions.session(PostgresWebSessionStore.hash("unknown"), idleLifetime: Self.idle, now: now) == nil)

                // Touched later: the new last use, and only that, changes.
                try await sessions.touch(saved.idHash, now: now.addingTimeInterval(120))
                var touched = saved
                touched.lastSeenAt = now.addingTimeInterval(120)
                #expect(try await sessions.session(saved.idHash, idleLifetime: Self.idle, now: now.addingTimeInterval(130)) == touched)
                // A replica with an older request does not move it back.
                try await sessions.touch(saved.idHash, now: now.addingTimeInterval(60))
                #expect(try await sessions.session(saved.idHash, idleLifetime: Self.idle, now: now.addingTimeInterval(130)) == touched)
                // Touching an unknown session makes none.
                try await sessions.touch(PostgresWebSessionStore.hash("unknown"), now: now)
                #expect(try await Self.count(database, "\(schema).oauth2_web_sessions") == 1)

                // A save replaces the record (a new sign-in's subject and provider session).
                var replaced = Self.record("a", subject: "user-2", sid: nil, now: now.addingTimeInterval(200))
                replaced.claims["name"] = "Grace"
                try await sessions.save(replaced)
                #expect(try await sessions.session(saved.idHash, idleLifetime: Self.idle, now: now.addingTimeInterval(200)) == replaced)
                let columns = try await database.execute(PostgresQuery(unsafeSQL: """
                    SELECT subject, provider_session_id FROM \(schema).oauth2_web_sessions
                    """)).decode((String, String?).self)
                #expect(columns.map(\.0) == ["user-2"])
                #expect(columns.map(\.1) == [nil])
                // The row is keyed by the hash: no cookie value in it.
                let keys = try await database.execute(PostgresQuery(unsafeSQL: "SELECT id_hash FROM \(schema).oauth2_web_sessions")).decode(String.self)
                #expect(keys == [PostgresWebSessionStore.hash("a")])
            }
        }
    }

    @Test("A session ends idleLifetime after its last use, and at its absolute expiry however recently used; removeExpired deletes the rest")
    func expiry() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("web")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            let clock = ManualDate(PostgresFixture.now)
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, now: clock.function) { store in
                let sessions = PostgresWebSessionStore(store: store)
                let start = clock.now
                let table = "\(schema).oauth2_web_sessions"

                // Idle: alive a second before idleLifetime has passed, gone at it (and deleted).
                let idle = Self.record("idle", now: start)
                try await sessions.save(idle)
                #expect(try await sessions.session(idle.idHash, idleLifetime: Self.idle, now: start.addingTimeInterval(Self.idle - 1)) != nil)
                #expect(try await sessions.session(idle.idHash, idleLifetime: Self.idle, now: start.addingTimeInterval(Self.idle)) == nil)
                #expect(try await Self.count(database, table) == 0)

                // Absolute: used every 30 minutes, it still ends at its absolute expiry.
                let busy = Self.record("busy", now: start)
                try await sessions.save(busy)
                var now = start
                while now.addingTimeInterval(1800) < busy.absoluteExpiry {
                    now = now.addingTimeInterval(1800)
                    #expect(try await sessions.session(busy.idHash, idleLifetime: Self.idle, now: now) != nil)
                    try await sessions.touch(busy.idHash, now: now)
                }
                #expect(try await sessions.session(busy.idHash, idleLifetime: Self.idle, now: busy.absoluteExpiry.addingTimeInterval(-1)) != nil)
                #expect(try await sessions.session(busy.idHash, idleLifetime: Self.idle, now: busy.absoluteExpiry) == nil)
                #expect(try await Self.count(database, table) == 0)

                // removeExpired, on the store's clock: the idle one and the pending sign-in that
                // expired go; the live ones stay.
                let stale = Self.record("stale", now: start)
                let live = Self.record("live", now: start.addingTimeInterval(Self.idle))
                let ended = Self.record("ended", now: start)
                var endedEarly = ended
                endedEarly.absoluteExpiry = start.addingTimeInterval(60)
                for record in [stale, live, endedEarly] { try await sessions.save(record) }
                let expiring = try await Self.pending(now: start)
                var lasting = try await Self.pending(now: start)
                lasting.expiresAt = start.addingTimeInterval(2 * Self.idle)
                try await sessions.insert(expiring)
                try await sessions.insert(lasting)
                clock.advance(by: Self.idle + 1)
                #expect(try await sessions.removeExpired(idleLifetime: Self.idle) == 3, "stale, ended, the expired sign-in")
                let left = try await database.execute(PostgresQuery(unsafeSQL: "SELECT id_hash FROM \(table)")).decode(String.self)
                #expect(left == [live.idHash])
                #expect(try await Self.count(database, "\(schema).oauth2_web_pending_sign_ins") == 1)
                #expect(try await sessions.takePendingSignIn(state: lasting.request.state, now: clock.now) == lasting)
                #expect(try await sessions.removeExpired(idleLifetime: Self.idle, now: clock.now) == 0)
            }
        }
    }

    @Test("remove returns the session once; sessions finds and removeSessions ends the sessions of a provider session, of a subject, or of both, at one issuer")
    func removal() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("web")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let sessions = PostgresWebSessionStore(store: store)
                let now = PostgresFixture.now
                let one = Self.record("one", now: now)
                try await sessions.save(one)
                #expect(try await sessions.remove(one.idHash) == one)
                #expect(try await sessions.remove(one.idHash) == nil)
                #expect(try await sessions.session(one.idHash, idleLifetime: Self.idle, now: now) == nil)

                // Two browsers of user-1 in provider session sid-1, one in sid-2; user-2 in
                // sid-3; and user-1 at another issuer, in a provider session also named sid-1.
                let a = Self.record("a", subject: "user-1", sid: "sid-1", now: now)
                let b = Self.record("b", subject: "user-1", sid: "sid-1", now: now)
                let c = Self.record("c", subject: "user-1", sid: "sid-2", now: now)
                let d = Self.record("d", subject: "user-2", sid: "sid-3", now: now)
                let elsewhere = Self.record("e", issuer: "https://other.example.com", subject: "user-1", sid: "sid-1", now: now)
                let noSID = Self.record("f", subject: "user-2", sid: nil, now: now)
                for record in [a, b, c, d, elsewhere, noSID] { try await sessions.save(record) }

                // Found, by the same rules, without removing them.
                #expect(try await sessions.sessions(issuer: Self.issuer, subject: nil, providerSessionID: nil) == [])
                #expect(Set(try await sessions.sessions(issuer: Self.issuer, subject: nil, providerSessionID: "sid-1")) == [a, b])
                #expect(Set(try await sessions.sessions(issuer: Self.issuer, subject: "user-1", providerSessionID: nil)) == [a, b, c])
                #expect(try await sessions.sessions(issuer: Self.issuer, subject: "user-1", providerSessionID: "sid-2") == [c])

                #expect(try await sessions.removeSessions(issuer: Self.issuer, subject: nil, providerSessionID: nil) == [])
                let bySID = try await sessions.removeSessions(issuer: Self.issuer, subject: nil, providerSessionID: "sid-1")
                #expect(Set(bySID) == [a, b])
                #expect(try await sessions.sessions(issuer: Self.issuer, subject: nil, providerSessionID: "sid-1") == [])
                // Both given: both must match.
                #expect(try await sessions.removeSessions(issuer: Self.issuer, subject: "user-2", providerSessionID: "sid-2") == [])
                #expect(try await sessions.removeSessions(issuer: Self.issuer, subject: "user-1", providerSessionID: "sid-2") == [c])
                let bySubject = try await sessions.removeSessions(issuer: Self.issuer, subject: "user-2", providerSessionID: nil)
                #expect(Set(bySubject) == [d, noSID])
                // The other issuer's session stays.
                #expect(try await sessions.session(elsewhere.idHash, idleLifetime: Self.idle, now: now) == elsewhere)
                #expect(try await sessions.removeSessions(issuer: Self.issuer, subject: "user-1", providerSessionID: nil) == [])
            }
        }
    }

    @Test("A pending sign-in is taken once, under the hash of its state; an expired one is not taken")
    func pendingSignIns() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("web")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let sessions = PostgresWebSessionStore(store: store)
                let now = PostgresFixture.now
                let pending = try await Self.pending(now: now)
                try await sessions.insert(pending)
                let keys = try await database.execute(
                    PostgresQuery(unsafeSQL: "SELECT state_hash FROM \(schema).oauth2_web_pending_sign_ins")
                ).decode(String.self)
                #expect(keys == [PostgresWebSessionStore.hash(pending.request.state)])
                #expect(!keys.contains(pending.request.state))

                #expect(try await sessions.takePendingSignIn(state: "another-state", now: now) == nil)
                #expect(try await sessions.takePendingSignIn(state: pending.request.state, now: now.addingTimeInterval(60)) == pending)
                #expect(try await sessions.takePendingSignIn(state: pending.request.state, now: now.addingTimeInterval(60)) == nil)

                let late = try await Self.pending(now: now)
                try await sessions.insert(late)
                #expect(try await sessions.takePendingSignIn(state: late.request.state, now: late.expiresAt) == nil)
                #expect(try await Self.count(database, "\(schema).oauth2_web_pending_sign_ins") == 1, "left for removeExpired")
            }
        }
    }

    @Test("Each new pending sign-in removes at most 16 expired ones, oldest first: after a flood of 40 has expired, three new ones leave only themselves")
    func insertRemovesExpiredPendingSignIns() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("web")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            let clock = ManualDate(PostgresFixture.now)
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, now: clock.function) { store in
                let sessions = PostgresWebSessionStore(store: store)
                let table = "\(schema).oauth2_web_pending_sign_ins"
                // The flood: 40 login hits, each pending for 10 minutes, one second apart.
                let start = clock.now
                var flood: [PendingSignIn] = []
                for index in 0..<40 {
                    var pending = try await Self.pending(now: start.addingTimeInterval(TimeInterval(index)))
                    pending.expiresAt = start.addingTimeInterval(TimeInterval(600 + index))
                    flood.append(pending)
                    try await sessions.insert(pending)
                }
                #expect(try await Self.count(database, table) == 40, "nothing had expired yet")

                // Well after: each real sign-in's insert removes 16 of them, the oldest first.
                clock.advance(by: 3600)
                var live: [PendingSignIn] = []
                for expected: Int64 in [25, 10, 3] {
                    let pending = try await Self.pending(now: clock.now)
                    live.append(pending)
                    try await sessions.insert(pending)
                    #expect(try await Self.count(database, table) == expected)
                    if live.count == 1 {
                        let left = try await database.execute(PostgresQuery(unsafeSQL: "SELECT state_hash FROM \(table)")).decode(String.self)
                        let expired = Set(flood[16...].map { PostgresWebSessionStore.hash($0.request.state) })
                        #expect(Set(left) == expired.union([PostgresWebSessionStore.hash(pending.request.state)]), "the 16 oldest went")
                    }
                }
                let left = try await database.execute(PostgresQuery(unsafeSQL: "SELECT state_hash FROM \(table)")).decode(String.self)
                #expect(Set(left) == Set(live.map { PostgresWebSessionStore.hash($0.request.state) }))
                for pending in live {
                    #expect(try await sessions.takePendingSignIn(state: pending.request.state, now: clock.now) == pending)
                }
            }
        }
    }

    @Test("Two replicas (two pools) race 20 takes of each of 10 states: each state is taken exactly once")
    func pendingSignInTakenOnceAcrossReplicas() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("web")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            let now = PostgresFixture.now
            var pendings: [PendingSignIn] = []
            for _ in 0..<10 { pendings.append(try await Self.pending(now: now)) }
            let all = pendings
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { store in
                for pending in all { try await PostgresWebSessionStore(store: store).insert(pending) }
            }
            let start = Gate()
            // Each replica: 10 concurrent takes of every state, released with the other replica's.
            let taken = try await withThrowingTaskGroup(of: [PendingSignIn?].self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { store in
                            let sessions = PostgresWebSessionStore(store: store)
                            try await store.migrate()
                            await start.wait()
                            return try await withThrowingTaskGroup(of: PendingSignIn?.self) { takes in
                                for pending in all {
                                    for _ in 0..<10 {
                                        takes.addTask { try await sessions.takePendingSignIn(state: pending.request.state, now: now.addingTimeInterval(5)) }
                                    }
                                }
                                return try await takes.reduce(into: []) { $0.append($1) }
                            }
                        }
                    }
                }
                try await PostgresFixture.eventually("both replicas are ready") { await start.waiting == 2 }
                await start.release()
                return try await group.reduce(into: [PendingSignIn?]()) { $0 += $1 }
            }
            #expect(taken.count == 200)
            let winners = taken.compactMap { $0 }
            #expect(winners.count == 10)
            #expect(Set(winners) == Set(all))
        }
    }

    @Test("A schema at version 3 migrates to 4: the web tables appear, the token and replay rows stay")
    func migrationFromVersion3() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("v3")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            // Version 3 as its migrations made it.
            try await database.execute(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"))
            try await database.execute(PostgresQuery(unsafeSQL: """
                CREATE TABLE \(schema).oauth2_schema_migrations (
                    version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                """))
            for migration in StoreSchema.migrations where migration.version <= 3 {
                for statement in migration.statements(schema) { try await database.execute(PostgresQuery(unsafeSQL: statement)) }
                try await database.execute(PostgresQuery(unsafeSQL: """
                    INSERT INTO \(schema).oauth2_schema_migrations (version, description) VALUES (\(migration.version), '\(migration.description)')
                    """))
            }
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            // A token row as version 3 wrote it, and a one-time value.
            let session = PostgresFixture.session(PostgresFixture.key("alice"))
            let (keyID, sealed) = try RowCipher(ring: ring).seal(try TokenDocument(session: session).encoded(), for: session.key)
            let bytes = ByteBuffer(bytes: sealed)
            try await database.execute("""
                INSERT INTO \(unescaped: schema).oauth2_sessions (issuer, client_id, account, version, key_id, sealed, expires_at, updated_at)
                VALUES (\(session.key.issuer), \(session.key.clientID), \(session.key.account), 1, \(keyID), \(bytes), NULL, now())
                """)
            let now = PostgresFixture.now
            try await database.execute("""
                INSERT INTO \(unescaped: schema).oauth2_replay_records (key, expires_at) VALUES ('jti-1', \(now.addingTimeInterval(600)))
                """)

            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                #expect(try await store.migrate() == [4, 5, 6, 7, 8])
                #expect(try await store.load(session.key) == session)
                #expect(try await !PostgresReplayStore(store: store).insertIfAbsent("jti-1", expiresAt: now.addingTimeInterval(600), now: now))
                let sessions = PostgresWebSessionStore(store: store)
                let record = Self.record(now: now)
                try await sessions.save(record)
                #expect(try await sessions.session(record.idHash, idleLifetime: Self.idle, now: now) == record)
            }
            let versions = try await database.execute(
                PostgresQuery(unsafeSQL: "SELECT version FROM \(schema).oauth2_schema_migrations ORDER BY 1")
            ).decode(Int32.self)
            #expect(versions == [1, 2, 3, 4, 5, 6, 7, 8])
            let indexes = try await database.execute(PostgresQuery(unsafeSQL: """
                SELECT indexname FROM pg_indexes WHERE schemaname = '\(schema)' AND tablename LIKE 'oauth2_web_%' ORDER BY 1
                """)).decode(String.self)
            #expect(indexes == [
                "oauth2_web_pending_sign_ins_expires_at", "oauth2_web_pending_sign_ins_key_id", "oauth2_web_pending_sign_ins_pkey",
                "oauth2_web_sessions_absolute_expiry", "oauth2_web_sessions_key_id", "oauth2_web_sessions_pkey",
                "oauth2_web_sessions_provider_session", "oauth2_web_sessions_subject",
            ])
        }
    }

    @Test("A record that cannot be read is no session: nil, and its row goes")
    func corruptRecord() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("web")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let sessions = PostgresWebSessionStore(store: store)
                let now = PostgresFixture.now
                let record = Self.record("broken", now: now)
                try await sessions.save(record)
                try await database.execute(PostgresQuery(unsafeSQL: """
                    UPDATE \(schema).oauth2_web_sessions SET record = convert_to('{"csrfToken":"secret-csrf-value"', 'UTF8')
                    """))
                #expect(try await sessions.session(record.idHash, idleLifetime: Self.idle, now: now) == nil)
                #expect(try await Self.count(database, "\(schema).oauth2_web_sessions") == 0)
            }
        }
    }

    @Test("Rows are sealed with the key ring: nothing of a record is readable in the database, a row copied into another does not open, another ring cannot read them")
    func sealedRows() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("web")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            let now = PostgresFixture.now
            let a = Self.record("a", now: now), b = Self.record("b", now: now)
            let pending = try await Self.pending(now: now)
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let sessions = PostgresWebSessionStore(store: store)
                try await sessions.save(a)
                try await sessions.save(b)
                try await sessions.insert(pending)
                let stored = try await database.execute(PostgresQuery(unsafeSQL: """
                    SELECT encode(record, 'escape') FROM \(schema).oauth2_web_sessions
                    UNION ALL SELECT encode(record, 'escape') FROM \(schema).oauth2_web_pending_sign_ins
                    """)).decode(String.self)
                #expect(stored.count == 3)
                for text in stored {
                    for secret in ["Ada", a.csrfToken, b.csrfToken, a.account, pending.request.codeVerifier, pending.request.state, "/orders"] {
                        #expect(!text.contains(secret), "a sealed row shows a record's value")
                    }
                }

                // B's sealed record copied into A's row: A is no session (and goes), B stays B.
                try await database.execute(PostgresQuery(unsafeSQL: """
                    UPDATE \(schema).oauth2_web_sessions SET record = (SELECT record FROM \(schema).oauth2_web_sessions WHERE id_hash = '\(b.idHash)')
                    WHERE id_hash = '\(a.idHash)'
                    """))
                #expect(try await sessions.session(a.idHash, idleLifetime: Self.idle, now: now) == nil)
                #expect(try await sessions.session(b.idHash, idleLifetime: Self.idle, now: now) == b)
            }
            // A replica whose ring lacks the key cannot read the rows: to it, they are no sessions.
            let other = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k2"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: other) { (store: PostgresTokenStore) async throws in
                #expect(try await PostgresWebSessionStore(store: store).session(b.idHash, idleLifetime: Self.idle, now: now) == nil)
            }
        }
    }
}
#endif
