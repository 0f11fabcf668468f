#if Postgres
import Foundation
import OAuth2
import OAuth2TestSupport
@testable import OAuth2Postgres
import Testing

/// The shared store suites (`StoreConformance`, `RegistrationStoreConformance`), run by the
/// memory, file and keyring stores too, against PostgreSQL: with the cache and without it.
@Suite("PostgresTokenStore: the shared store suite")
struct PostgresStoreConformanceTests {
    @Test("The shared store suite passes", arguments: [64, 0])
    func sharedSuite(cacheCapacity: Int) async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("conformance")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: cacheCapacity) { store in
                let failures = await StoreConformance.run(store)
                #expect(failures.isEmpty, "\(failures)")
            }
        }
    }

    @Test("The shared registration suite passes, old records moved on load", arguments: [64, 0])
    func registrationSuite(cacheCapacity: Int) async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("registrations")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: cacheCapacity) { store in
                let failures = await RegistrationStoreConformance.run(store)
                #expect(failures.isEmpty, "\(failures)")
            }
        }
    }
}
#endif
