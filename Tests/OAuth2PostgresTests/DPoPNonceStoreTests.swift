#if Postgres
import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2Internals
@testable import OAuth2Postgres
import OAuth2TestSupport
import PostgresNIO
import Testing

@Suite("PostgresDPoPNonceStore: the DPoP nonces a fleet's replicas learn, shared in PostgreSQL")
struct DPoPNonceStoreTests {
    static let origin = "https://as.example.com:443"

    /// Runs `body` with a nonce store over `store`, its listener running and connected.
    static func withNonces<T: Sendable>(
        _ store: PostgresTokenStore, capacity: Int = 1_000, lifetime: Duration = .seconds(300),
        _ body: @Sendable (PostgresDPoPNonceStore) async throws -> T
    ) async throws -> T {
        let nonces = PostgresDPoPNonceStore(store: store, capacity: capacity, lifetime: lifetime)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await nonces.run() }
            defer { group.cancelAll() }
            try await PostgresFixture.eventually("the nonce listener connects") { nonces.listenerConnectionCount >= 1 }
            return try await body(nonces)
        }
    }

    @Test("A nonce one replica learnt is read by another on its first request; the row holds the origin and the nonce")
    func anotherReplicaReadsTheRow() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("nonces")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { first in
                let a = PostgresDPoPNonceStore(store: first)
                await a.remember("nonce-1", forOrigin: Self.origin)
                #expect(await a.nonce(forOrigin: Self.origin) == "nonce-1")
                let rows = try await database.execute(PostgresQuery(unsafeSQL: "SELECT origin, nonce FROM \(schema).oauth2_dpop_nonces"))
                    .decode((String, String).self)
                #expect(rows.map(\.0) == [Self.origin])
                #expect(rows.map(\.1) == ["nonce-1"])
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { second in
                    let b = PostgresDPoPNonceStore(store: second)
                    #expect(await b.nonce(forOrigin: Self.origin) == "nonce-1")
                    #expect(await b.nonce(forOrigin: "https://other.example.com:443") == nil)
                }
                // Invalid nonces never reach the table.
                for invalid in ["", "a b", "quote\"d", String(repeating: "x", count: 1025)] {
                    await a.remember(invalid, forOrigin: "https://invalid.example.com:443")
                }
                #expect(try await a.count() == 1)
            }
        }
    }

    @Test("A changed nonce reaches a running replica through its listener, over what it kept")
    func aChangedNonceIsHeard() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("nonces")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { first in
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { second in
                    try await Self.withNonces(first) { a in
                        try await Self.withNonces(second) { b in
                            // B keeps "no nonce" for its lifetime: only the notification tells it.
                            #expect(await b.nonce(forOrigin: Self.origin) == nil)
                            await a.remember("nonce-1", forOrigin: Self.origin)
                            try await PostgresFixture.eventually("B hears nonce-1") { await b.nonce(forOrigin: Self.origin) == "nonce-1" }
                            await a.remember("nonce-2", forOrigin: Self.origin)
                            try await PostgresFixture.eventually("B hears nonce-2") { await b.nonce(forOrigin: Self.origin) == "nonce-2" }
                            // …and the other way.
                            await b.remember("nonce-3", forOrigin: Self.origin)
                            try await PostgresFixture.eventually("A hears nonce-3") { await a.nonce(forOrigin: Self.origin) == "nonce-3" }
                        }
                    }
                }
            }
        }
    }

    @Test("Rows stop being served after the lifetime (the store's clock), go with removeExpired, and stay within capacity")
    func expiryAndCapacity() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("nonces")
        let clock = Locked(PostgresFixture.now)
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0, now: { clock.withLock { $0 } }) { store in
                let a = PostgresDPoPNonceStore(store: store, capacity: 2, lifetime: .seconds(60))
                #expect(a.capacity == 2)
                await a.remember("n-1", forOrigin: "https://s1.example.com:443")
                clock.withLock { $0 += 1 }
                await a.remember("n-2", forOrigin: "https://s2.example.com:443")
                clock.withLock { $0 += 1 }
                await a.remember("n-3", forOrigin: "https://s3.example.com:443")
                let kept = try await a.count()
                #expect(kept == 2, "the row served the shortest went")
                let fresh = PostgresDPoPNonceStore(store: store, capacity: 2, lifetime: .seconds(60))
                #expect(await fresh.nonce(forOrigin: "https://s1.example.com:443") == nil)
                #expect(await fresh.nonce(forOrigin: "https://s3.example.com:443") == "n-3")
                clock.withLock { $0 += 61 }
                let later = PostgresDPoPNonceStore(store: store, capacity: 2, lifetime: .seconds(60))
                #expect(await later.nonce(forOrigin: "https://s3.example.com:443") == nil, "older than its lifetime")
                #expect(await a.nonce(forOrigin: "https://s3.example.com:443") == nil, "what a replica kept lasts as long")
                let removed = try await a.removeExpired()
                #expect(removed == 2)
                let left = try await a.count()
                #expect(left == 0)
                // The same nonce learnt again after the lifetime is written again (served anew).
                await a.remember("n-3", forOrigin: "https://s3.example.com:443")
                #expect(await later.nonce(forOrigin: "https://s3.example.com:443") == nil, "later keeps its read for the lifetime")
                #expect(await PostgresDPoPNonceStore(store: store).nonce(forOrigin: "https://s3.example.com:443") == "n-3")
            }
        }
    }
}

/// Counts the token requests sent and the server's refusals of them for want of a DPoP nonce
/// (`400` with `use_dpop_nonce`).
final class NonceRefusalCounter: HTTPInterceptor, Sendable {
    private let counts = Locked<(refusals: Int, requests: Int)>((0, 0))

    func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws {
        if kind == .token { counts.withLock { $0.requests += 1 } }
    }

    func didReceive(_ response: HTTPResponse, body: Data, for request: HTTPRequest, kind: RequestKind) async {
        if kind == .token, response.status.code == 400, String(decoding: body, as: UTF8.self).contains("use_dpop_nonce") {
            counts.withLock { $0.refusals += 1 }
        }
    }

    var refusals: Int { counts.withLock { $0.refusals } }
    var requests: Int { counts.withLock { $0.requests } }
}

/// Two replicas against a real server that wants DPoP nonces: Glewlwyd's `oidc-nonce`
/// instance (`scripts/test-servers/glewlwyd.sh`), which refuses a token request whose proof
/// lacks its current nonce. An unreachable server or database makes the test fail, never skip.
@Suite("PostgresDPoPNonceStore: two replicas against Glewlwyd's DPoP nonces")
struct DPoPNonceFleetAgainstGlewlwydTests {
    static func environment(_ name: String, _ fallback: String) -> String {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 } ?? fallback
    }

    @Test("Replica A is refused once for want of a nonce; replica B's first token request carries it and is answered")
    func theSecondReplicaIsNotRefused() async throws {
        IntegrationLog.record()
        IntegrationLog.record("glewlwyd")
        let issuer = try #require(URL(string: Self.environment("OAUTH2_TEST_GLEWLWYD_NONCE_ISSUER", "http://127.0.0.1:4593/api/oidc-nonce")))
        let key = try DPoPKey.generate()
        let schema = PostgresFixture.schemaName("nonces")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            /// A replica: a store of its own pool, a nonce store over it, a client of its own.
            @Sendable func replica<T: Sendable>(
                _ body: @Sendable (OAuth2Client, NonceRefusalCounter, PostgresDPoPNonceStore) async throws -> T
            ) async throws -> T {
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, cacheCapacity: 0) { store in
                    try await DPoPNonceStoreTests.withNonces(store) { nonces in
                        let counter = NonceRefusalCounter()
                        var configuration = ClientConfiguration(
                            clientID: Self.environment("OAUTH2_TEST_GLEWLWYD_CONF_ID", "code-conf"),
                            clientSecret: Self.environment("OAUTH2_TEST_GLEWLWYD_CONF_SECRET", "code-conf-secret"),
                            scopes: ["openid", "read"])
                        configuration.dpop = DPoPOptions(key: key, nonceStore: nonces)
                        let client = try await OAuth2Client(
                            server: .issuer(issuer),
                            configuration: configuration,
                            environment: HTTPEnvironment(transport: URLSessionTransport.shared, interceptors: [counter], metadataCache: MetadataCache()))
                        return try await body(client, counter, nonces)
                    }
                }
            }
            let username = Self.environment("OAUTH2_TEST_USER", "alice"), password = Self.environment("OAUTH2_TEST_PASSWORD", "alice-pw")
            try await replica { a, counterA, _ in
                let tokens = try await a.password(username: username, password: password)
                #expect(tokens.tokenType == .dpop)
                #expect(counterA.refusals == 1, "replica A learns the nonce from one refusal")
                #expect(counterA.requests == 2)
                // Replica B starts after A learnt the nonce: its memory is empty.
                try await replica { b, counterB, nonces in
                    let tokens = try await b.password(username: username, password: password)
                    #expect(tokens.tokenType == .dpop)
                    #expect(tokens.accessTokenKeyThumbprint == key.thumbprint)
                    #expect(counterB.refusals == 0, "replica B's first request carried the nonce A learnt")
                    #expect(counterB.requests == 1)
                    #expect(try await nonces.count() == 1)
                }
            }
        }
    }
}
#endif
