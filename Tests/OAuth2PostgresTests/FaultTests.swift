#if Postgres
import Foundation
import HTTPTypes
import OAuth2
@testable import OAuth2Postgres
import OAuth2Testing
import OAuth2TestSupport
import PostgresNIO
import Testing

/// Holds the token endpoint's answer (received: the server has rotated the refresh token)
/// until the test releases it.
struct HoldTokenResponses: HTTPInterceptor {
    let received: Gate
    let release: Gate
    func didReceive(_ response: HTTPResponse, body: Data, for request: HTTPRequest, kind: RequestKind) async {
        guard kind == .token else { return }
        await received.release()
        await release.wait()
    }

    /// A renewal to hold: a sign-in at `provider` (its tokens), the same session with its
    /// access token expired (to save), and a client of the provider whose token responses
    /// are held (`received` opens when one arrives; it goes on once `release` opens).
    static func renewal(at provider: TestProvider) async throws
        -> (tokens: TokenSet, expired: StoredTokenSession, client: OAuth2Client, received: Gate, release: Gate)
    {
        let (signIn, tokens) = try await PostgresFixture.signIn(provider)
        var expired = tokens
        expired.expiresAt = Date().addingTimeInterval(-3600)
        expired.issuedAt = Date().addingTimeInterval(-7200)
        let (received, release) = (Gate(), Gate())
        let client = try await OAuth2Client(
            server: .issuer(provider.issuer), configuration: signIn.configuration,
            environment: HTTPEnvironment(
                transport: URLSessionTransport.shared, interceptors: [HoldTokenResponses(received: received, release: release)],
                metadataCache: MetadataCache()))
        return (tokens, StoredTokenSession(key: TokenSession.key(for: signIn), tokens: expired), client, received, release)
    }
}

@Suite("PostgresTokenStore: faults during a renewal")
struct FaultTests {
    @Test("The lock's connection killed while the rotated tokens are in flight: a typed transient error, the new tokens kept, the next renewal saves them")
    func connectionKilledDuringRefresh() async throws {
        IntegrationLog.record()
        let schema = PostgresFixture.schemaName("fault")
        try await PostgresFixture.withDatabase(dropping: schema) { database in
            try await TestProvider.withProvider(configuration: .demo) { provider in
                let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
                let (tokens, expiredSession, client, received, release) = try await HoldTokenResponses.renewal(at: provider)
                let key = expiredSession.key
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring) { store in
                    try await store.save(expiredSession)
                    provider.resetRequestCounts()
                    let session = TokenSession(client: client, store: store)
                    async let first: Result<String, any Error> = {
                        do { return .success(try await session.freshAccessToken()) } catch { return .failure(error) }
                    }()
                    try await PostgresFixture.within(.seconds(30), "the renewal to reach the token endpoint") { await received.wait() }
                    // The server has rotated the refresh token; the replica's lock connection dies.
                    var holder: Int32?
                    let lockID = store.lockID(key)
                    for pid in try await database.execute("""
                        SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                            AND classid::bigint = \(Int64(UInt32(truncatingIfNeeded: lockID >> 32)))
                            AND objid::bigint = \(Int64(UInt32(truncatingIfNeeded: lockID)))
                        """).decode(Int32.self) {
                        holder = pid
                    }
                    try await database.execute("SELECT pg_terminate_backend(\(try #require(holder)))")
                    await release.release()

                    let outcome = await first
                    let error = try #require(throws: PostgresTokenStoreError.self) { try outcome.get() }
                    #expect(error.isTransient)
                    #expect(provider.requestCount(.token) == 1)
                    // The rotated tokens were kept in memory: the next caller gets them, no request.
                    let renewed = try await session.freshAccessToken()
                    #expect(renewed != tokens.accessToken)
                    #expect(provider.isActive(token: renewed))
                    #expect(provider.requestCount(.token) == 1)
                    // The next renewal uses the rotated refresh token (not the dead one) and saves.
                    let again = try await session.refresh()
                    #expect(provider.requestCount(.token) == 2)
                    #expect(provider.isActive(token: again.accessToken))
                    let stored = try #require(try await store.withExclusiveAccess(to: key) { try await store.load(key) })
                    #expect(stored.tokens.accessToken == again.accessToken)
                    #expect(provider.isActive(token: try #require(stored.tokens.refreshToken)))
                }
            }
        }
    }

    @Test("PostgreSQL stopped while the rotated tokens are in flight: typed transient errors while it is down, the new tokens kept, the first renewal after its restart saves them")
    func databaseStoppedDuringRefresh() async throws {
        IntegrationLog.record()
        let url = try PostgresFixture.url("OAUTH2_TEST_POSTGRES_FAULT_URL")
        let schema = PostgresFixture.schemaName("stopped")
        try await PostgresFixture.withDatabase(dropping: schema, url: url) { _ in
            try await TestProvider.withProvider(configuration: .demo) { provider in
                let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
                let (tokens, expiredSession, client, received, release) = try await HoldTokenResponses.renewal(at: provider)
                let key = expiredSession.key
                try await PostgresFixture.withStore(schema: schema, encryptionKeys: ring, url: url) { store in
                    try await store.save(expiredSession)
                    provider.resetRequestCounts()
                    let session = TokenSession(client: client, store: store)
                    async let first: Result<String, any Error> = {
                        do { return .success(try await session.freshAccessToken()) } catch { return .failure(error) }
                    }()
                    try await PostgresFixture.within(.seconds(30), "the renewal to reach the token endpoint") { await received.wait() }
                    // The server has rotated the refresh token; PostgreSQL stops (fast shutdown:
                    // every connection ends, new ones are refused).
                    try await FaultCluster.run("stop")
                    await release.release()
                    let outcome = await first
                    let error = try #require(throws: PostgresTokenStoreError.self) { try outcome.get() }
                    #expect(error.isTransient)

                    // While it is down: the new tokens serve from memory; what needs the
                    // database is a typed transient error, and sends nothing.
                    let renewed = try await session.freshAccessToken()
                    #expect(renewed != tokens.accessToken)
                    #expect(provider.isActive(token: renewed))
                    let down = try await #require(throws: PostgresTokenStoreError.self) { try await session.refresh() }
                    #expect(down.isTransient)
                    #expect(provider.requestCount(.token) == 1)

                    // Back: the first renewal uses the rotated refresh token and saves.
                    try await FaultCluster.run("start")
                    // The pool reconnects on its own schedule (its backoff grew while the server
                    // was down): a renewal before it has a connection fails as the ones above, and
                    // sends nothing; at most six of them (a minute) before one succeeds.
                    var renewal: TokenSet?
                    for _ in 0..<6 where renewal == nil {
                        do {
                            renewal = try await session.refresh()
                        } catch let error as PostgresTokenStoreError where error.isTransient {
                            continue
                        }
                    }
                    let again = try #require(renewal, "no renewal succeeded within six attempts after the restart")
                    #expect(provider.requestCount(.token) == 2)
                    #expect(provider.isActive(token: again.accessToken))
                    let stored = try #require(try await store.withExclusiveAccess(to: key) { try await store.load(key) })
                    #expect(stored.tokens.accessToken == again.accessToken)
                    #expect(provider.isActive(token: try #require(stored.tokens.refreshToken)))
                }
            }
        }
    }
}

/// The PostgreSQL cluster that the fault tests stop and start (`postgres.sh … fault`); no
/// other test uses it.
enum FaultCluster {
    /// Runs `postgres.sh <command> fault`; fails the test when the script fails.
    static func run(_ command: String) async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/test-servers/postgres.sh")
        let (status, output) = try await Worker.run([script.path, command, "fault"], executable: URL(fileURLWithPath: "/bin/bash"), withErrors: true)
        try #require(status == 0, "postgres.sh \(command) fault: \(output)")
    }
}
#endif
