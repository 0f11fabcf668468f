#if Postgres
import Foundation
import OAuth2
import OAuth2Internals
@testable import OAuth2Postgres
import OAuth2TestSupport
import OAuth2Testing
import Testing

/// Sessions of one user on two replicas: what one does, the other's callers see.
@Suite("PostgresTokenStore: a session's renewal and sign-out reach the other replicas")
struct SessionAcrossReplicasTests {
    @Test("A renewal on one replica is adopted by the other without a request; a sign-out there makes its callers sign in again")
    func renewalAndSignOutReachTheOtherReplica() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("replicas")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            try await TestProvider.withProvider(configuration: .demo) { provider in
                let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
                let (_, tokens) = try await PostgresFixture.signIn(provider)
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { a in
                    try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { b in
                        let onA = try await TokenSession(client: try await PostgresFixture.client(provider), tokens: tokens, store: a)
                        let onB = try #require(try await TokenSession.restore(client: try await PostgresFixture.client(provider), store: b))
                        let seen = Locked<[TokenSessionEvent]>([])
                        let stream = onB.events()  // subscribed now, before any change
                        let listening = Task { for await event in stream { seen.withLock { $0.append(event) } } }
                        defer { listening.cancel() }
                        #expect(try await onB.freshAccessToken() == tokens.accessToken)
                        provider.resetRequestCounts()

                        // Replica A renews: B hears of it and takes A's tokens from the store.
                        let renewed = try await onA.refresh()
                        try await PostgresFixture.eventually("B hears of the renewal") {
                            seen.withLock { $0.contains { if case .refreshed(let t) = $0 { t.accessToken == renewed.accessToken } else { false } } }
                        }
                        #expect(try await onB.freshAccessToken() == renewed.accessToken)
                        #expect(provider.requestCount(.token) == 1)  // A's renewal only

                        // Replica A signs out: B's callers must sign in again.
                        _ = await onA.signOut(.revokeAndRemove)
                        try await PostgresFixture.eventually("B hears of the sign-out") {
                            seen.withLock { $0.contains { if case .signedOut(let error) = $0 { error?.signInReason == .signedOutElsewhere } else { false } } }
                        }
                        let error = await #expect(throws: OAuth2Error.self) { try await onB.freshAccessToken() }
                        #expect(error?.code == .signInRequired)
                    }
                }
            }
        }
    }
}
#endif
