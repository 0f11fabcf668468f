#if Postgres
import Foundation
import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import PostgresNIO
import Testing

@Suite("PostgresTokenStore: connection settings and TLS")
struct ConnectionTests {
    @Test("The store's connections use TLS, verified against the test CA")
    func verifiedTLS() async throws {
        IntegrationLog.record()
        let client = PostgresClient(configuration: try PostgresFixture.clientConfiguration(maximumConnections: 1), backgroundLogger: PostgresFixture.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            var ssl: [Bool] = []
            for value in try await client.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").decode(Bool.self) {
                ssl.append(value)
            }
            #expect(ssl == [true])
        }
    }

    @Test("Idle connections the server ended are not used: the next reads and a lock get live ones")
    func endedIdleConnections() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("ended")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            // No cache: every load reads the database.
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { store in
                let session = PostgresFixture.session(PostgresFixture.key())
                try await store.save(session)
                // Several connections of the store's pool, idle now.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 { group.addTask { _ = try await store.load(session.key) } }
                    try await group.waitForAll()
                }
                #expect(store.listenerProcessID == nil)  // no cache, no listener
                let idle = try await database.execute(
                    "SELECT pid FROM pg_stat_activity WHERE state = 'idle' AND query LIKE \("%" + schema + ".oauth2_sessions%")"
                ).decode(Int32.self)
                #expect(!idle.isEmpty)
                for pid in idle { try await database.execute("SELECT pg_terminate_backend(\(pid))") }
                for _ in 0..<3 { #expect(try await store.load(session.key) == session) }
                #expect(try await store.withExclusiveAccess(to: session.key) { try await store.load(session.key) } == session)
            }
        }
    }

    @Test("A server certificate from a CA the store does not trust is refused")
    func untrustedCertificate() async throws {
        IntegrationLog.record()
        // The fault suite's CA (Tests/Fixtures/tls): not the one that issued PostgreSQL's certificate.
        let otherCA = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tls/ca.pem").path
        var components = try #require(URLComponents(string: try PostgresFixture.url()))
        components.queryItems = [URLQueryItem(name: "sslmode", value: "verify-full"), URLQueryItem(name: "sslrootcert", value: otherCA)]
        var configuration = try PostgresTokenStore.clientConfiguration(url: try #require(components.string))
        configuration.options.minimumConnections = 0
        configuration.options.maximumConnections = 1
        configuration.options.connectTimeout = .seconds(10)
        let store = try PostgresTokenStore(
            postgres: configuration, configuration: .init(schema: PostgresFixture.schemaName("tls"), connectionTimeout: .seconds(2)),
            encryptionKeys: .init(current: PostgresFixture.ringKey("k1")), logger: PostgresFixture.logger)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await store.run() }
            defer { group.cancelAll() }
            let error = await #expect(throws: PostgresTokenStoreError.self) { try await store.list() }
            #expect(error?.code == .connectionFailed)
        }
    }

    @Test("A postgres:// URL gives host, port, user, password, database and TLS; no message repeats the password")
    func url() throws {
        let configuration = try PostgresTokenStore.clientConfiguration(
            url: "postgres://fleet:s3cr%40t@db.example.com:6543/tokens?sslmode=verify-full&sslrootcert=/etc/ca.pem")
        #expect(configuration.host == "db.example.com")
        #expect(configuration.port == 6543)
        #expect(configuration.username == "fleet")
        #expect(configuration.password == "s3cr@t")
        #expect(configuration.database == "tokens")
        // A fixed pool with no keep-alive: no timers scheduled each time a connection returns.
        #expect(configuration.options.minimumConnections == PostgresTokenStore.defaultPoolSize)
        #expect(configuration.options.maximumConnections == PostgresTokenStore.defaultPoolSize)
        #expect(configuration.options.keepAliveBehavior == nil)
        #expect(PostgresTokenStore.redacting(url: "postgres://fleet:s3cr%40t@db.example.com/tokens") == "postgres://fleet:***@db.example.com/tokens")
        for bad in ["http://fleet:s3cret@db", "postgres://:s3cret@db/x", "postgres://fleet:s3cret@db/x?sslmode=s3cret-mode"] {
            let error = #expect(throws: PostgresTokenStoreError.self) { try PostgresTokenStore.clientConfiguration(url: bad) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error.map { !"\($0)".contains("s3cret") } == true)
        }
        #expect(throws: PostgresTokenStoreError.self) {
            try PostgresTokenStore(
                postgres: configuration, configuration: .init(schema: "Robert'); DROP TABLE x;--"),
                encryptionKeys: .init(current: PostgresFixture.ringKey("k")))
        }
    }
}
#endif
