#if Postgres
import Foundation
import NIOCore
import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import PostgresNIO
import Testing

@Suite("PostgresTokenStore: registrations")
struct PostgresRegistrationTests {
    static let issuer = "https://id.example.com"

    @Test("A schema at version 4 with a registration kept as a session: version 5 adds the table, the row moves on first load")
    func fromVersion4() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("v4reg")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            try await database.execute(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"))
            try await database.execute(PostgresQuery(unsafeSQL: """
                CREATE TABLE \(schema).oauth2_schema_migrations (
                    version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                """))
            for migration in StoreSchema.migrations where migration.version <= 4 {
                for statement in migration.statements(schema) { try await database.execute(PostgresQuery(unsafeSQL: statement)) }
                try await database.execute(PostgresQuery(unsafeSQL: """
                    INSERT INTO \(schema).oauth2_schema_migrations (version, description) VALUES (\(migration.version), '\(migration.description)')
                    """))
            }
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            // The row version 4 wrote for a registration: a sealed token document under `.registration`.
            let registration = RegistrationStoreConformance.registration("c-1", secret: "sec-ret")
            let old = LegacyRegistrationRecord.session(registration, issuer: Self.issuer, now: PostgresFixture.now)
            let (keyID, sealed) = try RowCipher(ring: ring).seal(try TokenDocument(session: old).encoded(), for: old.key)
            try await database.execute("""
                INSERT INTO \(unescaped: schema).oauth2_sessions (issuer, client_id, account, version, key_id, sealed, expires_at, updated_at)
                VALUES (\(old.key.issuer), \(old.key.clientID), \(old.key.account), 1, \(keyID), \(ByteBuffer(bytes: sealed)), NULL, now())
                """)

            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { (store) async throws in
                #expect(try await store.migrate() == [5, 6, 7, 8])
                #expect(try await store.list() == [old.key], "not moved by the migration: SQL cannot open it")
                #expect(try await store.loadRegistration(issuer: Self.issuer, clientID: "c-1") == registration)
                #expect(try await store.list() == [], "moved on first load")
                #expect(try await store.keyUsage() == ["k1": 1], "one row: the registration's")
            }
            var rows: [String] = []
            for clientID in try await database.execute(
                PostgresQuery(unsafeSQL: "SELECT client_id FROM \(schema).oauth2_registrations")
            ).decode(String.self) {
                rows.append(clientID)
            }
            #expect(rows == ["c-1"])
        }
    }

    @Test("A registration row is sealed, bound to its issuer and client id, and sealed again after a rotation")
    func sealedAndRotated() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("regkeys")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let oldKey = try PostgresFixture.ringKey("old")
            let old = try PostgresTokenStore.EncryptionKeys(current: oldKey)
            let first = RegistrationStoreConformance.registration("c-1", secret: "sec-ret")
            let second = RegistrationStoreConformance.registration("c-2", secret: "other")
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: old, cacheCapacity: 0) { (store) async throws in
                try await store.saveRegistration(first, issuer: Self.issuer)
                try await store.saveRegistration(second, issuer: Self.issuer)
            }
            var sealed: [ByteBuffer] = []
            for bytes in try await database.execute(
                PostgresQuery(unsafeSQL: "SELECT sealed FROM \(schema).oauth2_registrations ORDER BY client_id")
            ).decode(ByteBuffer.self) {
                sealed.append(bytes)
            }
            #expect(sealed.count == 2)
            #expect(!sealed.contains { String(decoding: $0.readableBytesView, as: UTF8.self).contains("sec-ret") }, "no secret in clear")

            let rotated = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("new"), previous: [oldKey])
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: rotated, cacheCapacity: 0) { (store) async throws in
                #expect(try await store.keyUsage() == ["old": 2])
                #expect(try await store.resealRows() == 2)
                #expect(try await store.keyUsage() == ["new": 2])
                #expect(try await store.loadRegistration(issuer: Self.issuer, clientID: "c-1") == first)
            }
            // The first row's ciphertext over the second's does not open.
            try await database.execute(PostgresQuery(unsafeSQL: """
                UPDATE \(schema).oauth2_registrations SET sealed = (SELECT sealed FROM \(schema).oauth2_registrations WHERE client_id = 'c-1')
                WHERE client_id = 'c-2'
                """))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: rotated, cacheCapacity: 0) { (store) async throws in
                let error = await #expect(throws: PostgresTokenStoreError.self) {
                    _ = try await store.loadRegistration(issuer: Self.issuer, clientID: "c-2")
                }
                #expect(error?.code == .corrupt)
                #expect(!"\(String(describing: error))".contains("sec-ret"))
            }
        }
    }
}
#endif
