#if Postgres
import Foundation
import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import OAuth2Testing
import Testing

/// A service token for the whole fleet: replicas (separate stores, pools, clients and
/// sessions) renewing one client-credentials token.
@Suite("PostgresTokenStore: one client-credentials token for the fleet")
struct FleetClientCredentialsTests {
    static let replicas = 4
    static let callersPerReplica = 100

    @Test("4 replicas × 100 callers: one token request when there is no token, one more when it has expired")
    func oneTokenRequestPerRenewal() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("fleetcc")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            try await TestProvider.withProvider(configuration: .demo) { provider in
                let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
                provider.resetRequestCounts()

                // No token yet: the first replica to hold the lock asks; every other caller reads it.
                let first = try await Self.fleet(schema: schema, ring: ring, provider: provider)
                #expect(provider.requestCount(.token) == 1)
                #expect(first.failures.isEmpty, "\(first.failures.prefix(3))")
                #expect(first.tokens.count == 1)
                let issued = try #require(first.tokens.first)
                #expect(provider.isActive(token: issued))

                // The stored token expires (as far as every replica can tell): one renewal.
                let key = TokenSession.key(for: try await Self.client(provider))
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                    var stored = try #require(try await store.load(key))
                    stored.tokens.expiresAt = Date().addingTimeInterval(-60)
                    try await store.save(stored)
                }
                let second = try await Self.fleet(schema: schema, ring: ring, provider: provider)
                #expect(provider.requestCount(.token) == 2)
                #expect(second.failures.isEmpty, "\(second.failures.prefix(3))")
                #expect(second.tokens.count == 1)
                #expect(second.tokens.first != issued)
            }
        }
    }

    static func client(_ provider: TestProvider) async throws -> OAuth2Client {
        try await OAuth2Client(
            server: .issuer(provider.issuer),
            configuration: ClientConfiguration(
                clientID: TestProvider.Demo.confidentialClientID, clientSecret: TestProvider.Demo.confidentialClientSecret,
                scopes: ["profile"]),
            environment: HTTPEnvironment(transport: URLSessionTransport.shared, metadataCache: MetadataCache()))
    }

    /// The fleet's callers' distinct tokens, and their errors.
    static func fleet(
        schema: String, ring: PostgresTokenStore.EncryptionKeys, provider: TestProvider
    ) async throws -> (tokens: Set<String>, failures: [String]) {
        let (results, _) = try await PostgresFixture.fleet(schema: schema, ring: ring, replicas: replicas, callers: callersPerReplica) { store in
            TokenSession(client: try await client(provider), store: store, options: TokenSession.Options(renewal: .clientCredentials()))
        }
        #expect(results.count == replicas * callersPerReplica)
        return (
            Set(results.compactMap { try? $0.get() }),
            results.compactMap { if case .failure(let error) = $0 { "\(error)" } else { nil } })
    }
}
#endif
