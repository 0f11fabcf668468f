#if Postgres
import CoreMetrics
import Foundation
import MetricsTestKit
import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import OAuth2Testing
import Testing

/// The headline: replicas (separate stores, separate connection pools, separate clients and
/// sessions) sharing one expired session, against a provider that rotates refresh tokens.
@Suite("PostgresTokenStore: one refresh for the fleet")
struct FleetRefreshTests {
    static let replicas = 4
    static let callersPerReplica = 100

    @Test("4 replicas × 100 concurrent callers on an expired session: exactly one refresh, every caller gets the new token", arguments: 1...10)
    func oneRefreshForTheFleet(round: Int) async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("fleet")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            try await TestProvider.withProvider(configuration: .demo) { provider in
                #expect(TestProvider.Configuration.demo.rotatesRefreshTokens)
                let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
                let (signIn, tokens) = try await PostgresFixture.signIn(provider)
                let firstRefreshToken = try #require(tokens.refreshToken)
                // Expired an hour ago, as far as every replica can tell (the provider's access
                // token itself is still valid: only the refresh is under test).
                var expired = tokens
                expired.expiresAt = Date().addingTimeInterval(-3600)
                expired.issuedAt = Date().addingTimeInterval(-7200)
                let key = TokenSession.key(for: signIn)
                let expiredSession = StoredTokenSession(key: key, tokens: expired)
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                    try await store.save(expiredSession)
                }
                provider.resetRequestCounts()

                let metrics = TestMetrics()
                let (results, statistics) = try await withMetricsFactory(metrics) {
                    try await PostgresFixture.fleet(schema: schema, ring: ring, replicas: Self.replicas, callers: Self.callersPerReplica) { store in
                        TokenSession(client: try await PostgresFixture.client(provider), store: store)
                    }
                }
                let lockedReads = statistics.map(\.lockedReads)
                #expect(provider.requestCount(.token) == 1)
                // Each replica renewed once (single flight inside it), under the lock: one read
                // of the row each, one write for the fleet (the replica that refreshed).
                #expect(lockedReads == [1, 1, 1, 1])
                let dimensions = [("schema", schema)]
                #expect(metrics.counterTotal(label: "oauth2_postgres_locked_writes_total", dimensions: dimensions) == 1)
                #expect(try metrics.expectTimer("oauth2_postgres_lock_wait_seconds", dimensions).values.count == Self.replicas)
                // The library's own figures of the run: one exchange with the token endpoint, one
                // renewal at the server, and the other replicas' renewals found in the store.
                #expect(metrics.counterTotal(label: "oauth2_exchanges_total", dimensions: [("endpoint", "token"), ("outcome", "2xx")]) == 1)
                #expect(metrics.counterTotal(label: "oauth2_session_renewals_total", dimensions: [("outcome", "refreshed")]) == 1)
                #expect(metrics.counterTotal(label: "oauth2_session_renewals_total", dimensions: [("outcome", "stored")]) == Int64(Self.replicas - 1))
                let failures = results.compactMap { if case .failure(let error) = $0 { "\(error)" } else { nil } }
                #expect(failures.isEmpty, "\(failures.prefix(3))")
                let accessTokens = Set(results.compactMap { try? $0.get() })
                #expect(accessTokens.count == 1)
                let renewed = try #require(accessTokens.first)
                #expect(renewed != tokens.accessToken)
                #expect(provider.isActive(token: renewed))
                #expect(!provider.isActive(token: firstRefreshToken))  // rotated, and never presented twice
                // The store holds what every caller got, with the rotated refresh token.
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                    let stored = try #require(try await store.load(key))
                    #expect(stored.tokens.accessToken == renewed)
                    #expect(stored.tokens.refreshToken != firstRefreshToken)
                    #expect(provider.isActive(token: try #require(stored.tokens.refreshToken)))
                }
            }
        }
    }
}
#endif
