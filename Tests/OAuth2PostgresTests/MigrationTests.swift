#if Postgres
import Foundation
import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import PostgresNIO
import Testing

@Suite("PostgresTokenStore: schema and migrations")
struct MigrationTests {
    /// Schema version 1's DDL, committed as a fixture, for `schema`.
    static func version1DDL(schema: String) throws -> [String] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/schema-v1.sql")
        let text = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "__SCHEMA__", with: schema)
        let code = text.split(separator: "\n").filter { !$0.hasPrefix("--") }.joined(separator: "\n")
        return code.split(separator: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    @Test("A version-1 schema is upgraded in place: every row readable, nothing lost")
    func fromVersion1() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("v1")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            for statement in try Self.version1DDL(schema: schema) {
                try await database.execute(PostgresQuery(unsafeSQL: statement))
            }
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("v1-key"))
            let cipher = RowCipher(ring: ring)
            // Rows as version 1 wrote them: the sealed token document in a JSON envelope.
            var sessions: [StoredTokenSession] = []
            for (index, account) in ["alice", "bob", "carol"].enumerated() {
                var session = PostgresFixture.session(PostgresFixture.key(account), refresh: index == 2 ? nil : "rt-\(account)")
                session.additionalFields["dpop_key"] = .object(["kty": .string("EC"), "note": .string("kept")])
                let document = try TokenDocument(session: session).encoded()
                let (keyID, sealed) = try cipher.seal(document, for: session.key)
                let envelope = #"{"alg":"A256GCM","kid":"\#(keyID)","data":"\#(sealed.base64EncodedString())"}"#
                try await database.execute("""
                    INSERT INTO \(unescaped: schema).oauth2_sessions (issuer, client_id, account, version, document, expires_at, updated_at)
                    VALUES (\(session.key.issuer), \(session.key.clientID), \(session.key.account), \(Int64(7 + index)), \(envelope), NULL, now())
                    """)
                sessions.append(session)
            }

            let written = sessions
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                #expect(try await store.migrate() == [2, 3, 4, 5, 6, 7, 8])
                #expect(try await store.migrate() == [2, 3, 4, 5, 6, 7, 8])  // once per store: the same answer
                for session in written {
                    let (loaded, version) = try #require(try await store.loadVersioned(session.key))
                    #expect(loaded == session)
                    #expect(version >= 7)
                }
                #expect(try await store.list() == written.map(\.key))
                #expect(try await store.keyUsage() == ["v1-key": 3])
            }
            var versions: [Int32] = []
            for version in try await database.execute(
                PostgresQuery(unsafeSQL: "SELECT version FROM \(schema).oauth2_schema_migrations ORDER BY 1")
            ).decode(Int32.self) {
                versions.append(version)
            }
            #expect(versions == [1, 2, 3, 4, 5, 6, 7, 8])
            // A second store finds the schema current.
            let applied = try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                try await store.migrate()
            }
            #expect(applied == [])
        }
    }

    @Test("A schema migrated by a newer version is neither read nor written")
    func newerSchema() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("newer")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            _ = try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                try await store.migrate()
            }
            try await database.execute(
                PostgresQuery(unsafeSQL: "INSERT INTO \(schema).oauth2_schema_migrations (version, description) VALUES (\(StoreSchema.currentVersion + 1), 'from the future')"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let error = await #expect(throws: PostgresTokenStoreError.self) { try await store.list() }
                #expect(error?.code == .unsupportedSchema)
                await #expect(throws: PostgresTokenStoreError.self) { try await store.save(PostgresFixture.session(PostgresFixture.key())) }
            }
        }
    }

    @Test("Replicas that start together migrate once")
    func concurrentMigration() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("race")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in try await store.migrate() }
                    }
                }
                return try await group.reduce(into: [[Int]]()) { $0.append($1) }
            }
            #expect(applied.filter { $0 == [1, 2, 3, 4, 5, 6, 7, 8] }.count == 1)
            #expect(applied.filter { $0 == [] }.count == 3)
        }
    }
}
#endif
