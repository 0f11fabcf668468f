#if Postgres
import Foundation
import Logging
import OAuth2
import OAuth2Internals
@testable import OAuth2Postgres
import OAuth2TestSupport
import Testing

/// The fleet against a real authorization server: authgent-server (`scripts/test-servers/authgent.sh`)
/// exchanges the tokens, and its own audit log (`audit_log`, action `token.exchanged`, in its
/// SQLite database, read with the `sqlite3` tool) counts the exchanges. An unreachable server
/// or database makes the test fail, never skip.
@Suite("DownstreamTokens across a fleet against authgent-server")
struct DownstreamTokensFleetExchangeTests {
    static func environment(_ name: String) throws -> String {
        try #require(ProcessInfo.processInfo.environment[name], "source the test servers' env (\(name))")
    }

    /// How many exchanges authgent recorded for `audience`.
    static func exchanges(audience: String) async throws -> Int {
        let database = try environment("OAUTH2_TEST_STATE_DIR") + "/authgent/site/authgent.db"
        let query = "SELECT count(*) FROM audit_log WHERE action = 'token.exchanged' AND json_extract(metadata, '$.audience') = '\(audience)'"
        let run = try await ChildProcess.run("/usr/bin/env", arguments: ["sqlite3", "-readonly", "file:\(database)?mode=ro", query])
        #expect(run.succeeded, "sqlite3 read authgent's audit log: \(run.errorText)")
        return try #require(Int(run.text.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    @Test("4 replicas × 100 callers on a cold key: authgent records one exchange; every caller gets its token")
    func oneExchangeAtTheServer() async throws {
        IntegrationLog.record()
        IntegrationLog.record("authgent")
        let issuer = try URL(string: Self.environment("OAUTH2_TEST_AUTHGENT_ISSUER")).unwrap()
        let client = try await OAuth2Client(
            server: .issuer(issuer),
            configuration: ClientConfiguration(
                clientID: try Self.environment("OAUTH2_TEST_AUTHGENT_CLIENT_ID"), clientSecret: try Self.environment("OAUTH2_TEST_AUTHGENT_CLIENT_SECRET")),
            environment: HTTPEnvironment(transport: URLSessionTransport.shared, metadataCache: MetadataCache()))
        let subject = try await client.requestToken(.clientCredentials())
        // An audience of this run only: the audit log counts its exchanges alone.
        let audience = "https://downstream-fleet.example.test/" + UUID().uuidString.lowercased()
        #expect(try await Self.exchanges(audience: audience) == 0)
        let request = TokenExchangeRequest(subject: .init(subject.accessToken, type: .accessToken), audiences: [audience])
        let schema = PostgresFixture.schemaName("downstream")
        try await PostgresFixture.withDatabase(dropping: schema) { _ in
            let ring = try PostgresTokenStore.EncryptionKeys(current: PostgresFixture.ringKey("k1"))
            let key = DownstreamTokenKey(
                session: "user-1", grant: .tokenExchange, issuer: issuer.absoluteString, clientID: client.configuration.clientID, audiences: [audience])
            let tokens = try await DownstreamTokenStoreTests.fleet(schema: schema, ring: ring, key: key) {
                DownstreamToken(try await client.exchangeToken(request), lifetimeWithoutExpiry: 300)
            }
            #expect(tokens.count == 400)
            #expect(Set(tokens).count == 1, "every caller of every replica got the one token")
            let claims = try JWS(compact: try #require(tokens.first)).claims()
            #expect(claims["aud"] == .string(audience))
        }
        #expect(try await Self.exchanges(audience: audience) == 1, "one exchange at the server for the whole fleet")

        // The convenience API builds the same kind of key, and a second audience is another exchange.
        let cache = DownstreamTokens()
        let other = audience + "/other"
        let first = try await cache.exchange(
            TokenExchangeRequest(subject: .init(subject.accessToken, type: .accessToken), audiences: [other]), session: "user-1", client: client)
        let again = try await cache.exchange(
            TokenExchangeRequest(subject: .init(subject.accessToken, type: .accessToken), audiences: [other]), session: "user-1", client: client)
        #expect(first == again)
        #expect(try await Self.exchanges(audience: other) == 1)
    }
}

extension Optional {
    fileprivate func unwrap() throws -> Wrapped {
        try #require(self)
    }
}
#endif
