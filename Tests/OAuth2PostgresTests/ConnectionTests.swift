#if Postgres
import Foundation
import OAuth2
@testable import OAuth2Postgres
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
            for try await value in try await client.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").decode(Bool.self) {
                ssl.append(value)
            }
            #expect(ssl == [true])
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
        configuration.options.maximumConnections = 1
        configuration.options.connectTimeout = .seconds(10)
        let store = try PostgresTokenStore(
            postgres: configuration, configuration: .init(schema: PostgresFixture.schemaName("tls"), connectionTimeout: .seconds(2)),
            keyRing: .init(current: PostgresFixture.ringKey("k1")), logger: PostgresFixture.logger)
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
        #expect(PostgresTokenStore.redacting(url: "postgres://fleet:s3cr%40t@db.example.com/tokens") == "postgres://fleet:***@db.example.com/tokens")
        for bad in ["http://fleet:s3cret@db", "postgres://:s3cret@db/x", "postgres://fleet:s3cret@db/x?sslmode=s3cret-mode"] {
            let error = #expect(throws: PostgresTokenStoreError.self) { try PostgresTokenStore.clientConfiguration(url: bad) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error.map { !"\($0)".contains("s3cret") } == true)
        }
        #expect(throws: PostgresTokenStoreError.self) {
            try PostgresTokenStore(
                postgres: configuration, configuration: .init(schema: "Robert'); DROP TABLE x;--"),
                keyRing: .init(current: PostgresFixture.ringKey("k")))
        }
    }
}
#endif
