#if Postgres
import Foundation
import HTTPTypes
import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import OAuth2Web
import PostgresNIO
import Testing

@Suite("PostgresReplayStore: one-time values shared by a fleet of APIs")
struct ReplayStoreTests {
    @Test("A key is recorded once until it expires; after that it may be recorded again; expired rows are removed")
    func insertIfAbsent() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("replay")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                let replays = PostgresReplayStore(store: store)
                let now = PostgresFixture.now
                #expect(try await replays.insertIfAbsent("a", expiresAt: now.addingTimeInterval(60), now: now))
                #expect(try await !replays.insertIfAbsent("a", expiresAt: now.addingTimeInterval(60), now: now.addingTimeInterval(30)))
                #expect(try await replays.insertIfAbsent("b", expiresAt: now.addingTimeInterval(10), now: now))
                // Expired at its own time: recorded anew.
                #expect(try await replays.insertIfAbsent("a", expiresAt: now.addingTimeInterval(120), now: now.addingTimeInterval(60)))
                #expect(try await !replays.insertIfAbsent("a", expiresAt: now.addingTimeInterval(180), now: now.addingTimeInterval(90)))
                #expect(try await replays.removeExpired(now: now.addingTimeInterval(60)) == 1, "b went, a stays")
                let keys = try await database.execute(PostgresQuery(unsafeSQL: "SELECT key FROM \(schema).oauth2_replay_records")).decode(String.self)
                #expect(keys == ["a"])
            }
        }
    }

    @Test("Two replicas checking one DPoP proof at once: exactly one accepts it; the other refuses it as replayed, and so does a third later")
    func oneProofAcrossReplicas() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("replay")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            let key = try DPoPKey.generate()
            let base = URL(string: "https://api.example.com")!
            let proofs = try (0..<20).map { _ in
                try key.proof(method: .get, url: base.appendingPathComponent("orders"), accessToken: "at-1")
            }
            typealias Outcome = Result<DPoPProofVerifier.VerifiedProof, AccessTokenError>
            // Each proof goes to two replicas at once (each its own pool): one accepts it.
            let outcomes = try await withThrowingTaskGroup(of: [Outcome].self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { store in
                            try await store.migrate()
                            // Proofs stay young for an hour: on a loaded machine the two replicas may start
                            // a minute after the proofs were made, and this test is about replays, not age.
                            let verifier = DPoPProofVerifier(
                                publicBaseURL: base, replayStore: PostgresReplayStore(store: store), maximumAge: 3600)
                            var outcomes: [Outcome] = []
                            for proof in proofs {
                                do {
                                    outcomes.append(.success(try await verifier.verify(
                                        proof, method: .get, path: "/orders", accessToken: "at-1", boundThumbprint: key.thumbprint)))
                                } catch let error as AccessTokenError {
                                    outcomes.append(.failure(error))
                                }
                            }
                            return outcomes
                        }
                    }
                }
                return try await group.reduce(into: [[Outcome]]()) { $0.append($1) }
            }
            for index in proofs.indices {
                let accepted = outcomes.filter { if case .success = $0[index] { true } else { false } }
                #expect(accepted.count == 1, "proof \(index): accepted by one replica")
                for outcome in outcomes {
                    if case .failure(let error) = outcome[index] {
                        #expect(error.code == .invalidDPoPProof)
                        #expect(error.reason == .replayed)
                    }
                }
            }
            // A third replica, later: every proof is a replay.
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { store in
                let verifier = DPoPProofVerifier(publicBaseURL: base, replayStore: PostgresReplayStore(store: store), maximumAge: 3600)
                let error = await #expect(throws: AccessTokenError.self) {
                    try await verifier.verify(proofs[0], method: .get, path: "/orders", accessToken: "at-1", boundThumbprint: key.thumbprint)
                }
                #expect(error?.reason == .replayed)
            }
        }
    }
}
#endif
