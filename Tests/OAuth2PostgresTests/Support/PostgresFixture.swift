#if Postgres
import Crypto
import Foundation
import Logging
import OAuth2
@testable import OAuth2Postgres
import OAuth2TestSupport
import OAuth2Testing
import PostgresNIO
import Testing

/// A continuation resumed by whichever outcome comes first.
final class FirstOutcome<T: Sendable>: @unchecked Sendable {
    let lock = NSLock()
    var continuation: CheckedContinuation<T, any Error>?
    /// Resumes with `result` unless an earlier outcome did; `true` when this one counted.
    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        let waiting: CheckedContinuation<T, any Error>? = lock.withLock {
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(with: result)
        return waiting != nil
    }
}

/// The PostgreSQL of scripts/test-servers/postgres.sh, and stores on it for the tests.
///
/// Every test works in a schema of its own (dropped at its end), so tests run in parallel
/// without sharing rows, locks or notifications. A test that cannot reach the server fails:
/// there is no stand-in and no skip.
enum PostgresFixture {
    /// `OAUTH2_TEST_POSTGRES_URL` (or another variable: `OAUTH2_TEST_POSTGRES_FAULT_URL`
    /// names the cluster that the fault tests stop); the test fails when it is missing.
    static func url(_ variable: String = "OAUTH2_TEST_POSTGRES_URL") throws -> String {
        guard let url = ProcessInfo.processInfo.environment[variable], !url.isEmpty else {
            Issue.record("\(variable) is not set: start scripts/test-servers/up.sh (or postgres.sh) and source its env")
            throw PostgresTokenStoreError(.invalidConfiguration, "\(variable) is not set")
        }
        return url
    }

    /// The client configuration of the test server (or the one at `url`), with a small pool
    /// (tests run in parallel under the server's connection limit).
    static func clientConfiguration(url: String? = nil, maximumConnections: Int = 6) throws -> PostgresClient.Configuration {
        var configuration = try PostgresTokenStore.clientConfiguration(url: url ?? self.url())
        configuration.options.minimumConnections = 0
        configuration.options.maximumConnections = maximumConnections
        return configuration
    }

    /// A fresh schema name for one test.
    static func schemaName(_ prefix: String) -> String {
        "t_\(prefix)_" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
    }

    /// A key of 32 random bytes named `id`.
    static func ringKey(_ id: String) throws -> PostgresTokenStore.EncryptionKeys.Key {
        try .init(id: id, bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) })
    }

    static let logger = Logger(label: "oauth2-postgres-tests")

    /// Runs `body` with a running store of `schema` (its own connection pool), whose
    /// listener is connected (when it has a cache); stops the store afterwards.
    static func withStore<T: Sendable>(
        schema: String, encryptionKeys: PostgresTokenStore.EncryptionKeys, cacheCapacity: Int = 64, url: String? = nil,
        now: @escaping @Sendable () -> Date = { Date() }, logger: Logger = PostgresFixture.logger,
        _ body: @Sendable (PostgresTokenStore) async throws -> T
    ) async throws -> T {
        let store = try PostgresTokenStore(
            postgres: clientConfiguration(url: url),
            configuration: .init(
                schema: schema, cacheCapacity: cacheCapacity, queryTimeout: .seconds(5), listenerReconnectDelay: .milliseconds(50),
                now: now),
            encryptionKeys: encryptionKeys, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            if cacheCapacity > 0 {
                try await PostgresFixture.within(.seconds(120), "the store's listener to connect") { await store.waitForListener() }
            }
            return try await body(store)
        }
    }

    /// A fleet: `replicas` stores of `schema` (each with its own pool) and a session on each
    /// (made by `session`); once every replica is up, `callers` concurrent calls of
    /// `freshAccessToken()` on each, all released at once. Returns every caller's token or
    /// error, and each replica's statistics.
    static func fleet(
        schema: String, ring: PostgresTokenStore.EncryptionKeys, replicas: Int = 4, callers: Int = 100,
        session: @escaping @Sendable (PostgresTokenStore) async throws -> TokenSession
    ) async throws -> (results: [Result<String, any Error>], statistics: [PostgresTokenStore.Statistics]) {
        let start = Gate()
        return try await withThrowingTaskGroup(of: ([Result<String, any Error>], PostgresTokenStore.Statistics).self) { group in
            for _ in 0..<replicas {
                group.addTask {
                    try await withStore(schema: schema, encryptionKeys: ring) { store in
                        try await store.migrate()
                        let session = try await session(store)
                        await start.wait()
                        let results = await withTaskGroup(of: Result<String, any Error>.self) { group in
                            for _ in 0..<callers {
                                group.addTask {
                                    do { return .success(try await session.freshAccessToken()) } catch { return .failure(error) }
                                }
                            }
                            return await group.reduce(into: []) { $0.append($1) }
                        }
                        return (results, store.statistics)
                    }
                }
            }
            // Every replica is up (its listener connected) before any caller runs.
            try await eventually("the replicas are ready") { await start.waiting == replicas }
            await start.release()
            return try await group.reduce(into: ([], [])) { fleet, replica in
                fleet.results += replica.0
                fleet.statistics.append(replica.1)
            }
        }
    }

    /// A client of the embedded provider's public demo client, with a metadata cache of its
    /// own (a replica's).
    static func client(_ provider: TestProvider) async throws -> OAuth2Client {
        try await OAuth2Client(
            server: .issuer(provider.issuer),
            configuration: ClientConfiguration(
                clientID: TestProvider.Demo.publicClientID, redirectURI: URL(string: "http://127.0.0.1:53682/callback")!,
                scopes: ["openid", "profile", "offline_access"]),
            environment: HTTPEnvironment(transport: URLSessionTransport.shared, metadataCache: MetadataCache()))
    }

    /// A sign-in at the embedded provider (authorization code, PKCE): its client and tokens,
    /// with a refresh token.
    static func signIn(_ provider: TestProvider) async throws -> (client: OAuth2Client, tokens: TokenSet) {
        let client = try await client(provider)
        let request = try client.authorizationRequest()
        let callback = try await provider.followRedirect(from: request.url)
        return (client, try await client.completeAuthorization(callbackURL: callback, request: request))
    }

    /// Runs `body` with a plain client of the test server (the tests' view of the raw
    /// tables), and drops `schema` afterwards.
    static func withDatabase<T: Sendable>(
        dropping schema: String, url: String? = nil, _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let client = PostgresClient(configuration: try clientConfiguration(url: url, maximumConnections: 4), backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            do {
                let value = try await body(client)
                try await client.execute(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(schema) CASCADE"))
                return value
            } catch {
                _ = try? await client.execute(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(schema) CASCADE"))
                throw error
            }
        }
    }

    /// Runs `operation`, failing with `what` when it takes longer than `limit` (the
    /// operation is left running: it may not listen to cancellation).
    static func within<T: Sendable>(_ limit: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let once = FirstOutcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            once.lock.withLock { once.continuation = continuation }
            Task {
                do { once.finish(.success(try await operation())) } catch { once.finish(.failure(error)) }
            }
            Task {
                try? await Task.sleep(for: limit)
                if once.finish(.failure(CancellationError())) { Issue.record("waited \(limit) for \(what)") }
            }
        }
    }

    /// Now, in whole seconds (the token document keeps dates to the microsecond: whole
    /// seconds read back exactly).
    static var now: Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)) }

    /// A session of `key` with recognisable tokens.
    static func session(
        _ key: TokenSessionKey, access: String = "at-\(UUID().uuidString)", refresh: String? = "rt-\(UUID().uuidString)",
        expiresAt: Date? = now.addingTimeInterval(3600), issuedAt: Date = now
    ) -> StoredTokenSession {
        StoredTokenSession(
            key: key,
            tokens: TokenSet(
                accessToken: access, refreshToken: refresh, idToken: "id-\(UUID().uuidString)", expiresAt: expiresAt,
                scopes: ["openid", "offline_access"], issuedAt: issuedAt),
            subject: "subject-1",
            updatedAt: Date(timeIntervalSince1970: 1_767_222_000))
    }

    static func key(_ account: String = "default") -> TokenSessionKey {
        TokenSessionKey(issuer: "https://id.example.com", clientID: "fleet-client", account: account)
    }

    /// Waits until `condition` holds, checking it after each of `step`; fails the test after
    /// `deadline` (a watchdog for hangs, not a timing assumption: it is generous because four
    /// replicas migrating and connecting took longer than 30 s on a machine loaded to 11).
    static func eventually(
        _ what: String, deadline: Duration = .seconds(120), step: Duration = .milliseconds(10),
        _ condition: @Sendable () async throws -> Bool
    ) async throws {
        let clock = ContinuousClock()
        let end = clock.now + deadline
        while clock.now < end {
            if try await condition() { return }
            try await Task.sleep(for: step)
        }
        Issue.record("timed out waiting until \(what)")
        throw CancellationError()
    }
}

extension PostgresClient {
    /// Runs `query` on an open connection of the pool and returns its rows; the test fails
    /// after 30 s without an answer. (PostgresNIO 1.33.2 never answers a query written to a
    /// connection that has closed, and its pool can lend one: see
    /// `PostgresTokenStore+Queries.swift`.)
    @discardableResult
    func execute(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await PostgresFixture.within(.seconds(30), "the database to answer") {
            while true {
                let rows: [PostgresRow]? = try await self.withConnection { connection in
                    guard !connection.isClosed else { return nil }
                    var rows: [PostgresRow] = []
                    for try await row in try await connection.query(query, logger: PostgresFixture.logger) { rows.append(row) }
                    return rows
                }
                if let rows { return rows }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }
}

extension [PostgresRow] {
    /// Each row's columns as `types`.
    func decode<each Column: PostgresDecodable>(_ types: (repeat each Column).Type) throws -> [(repeat each Column)] {
        try map { try $0.decode(types) }
    }
}

extension IntegrationLog {
    /// Records that the current test ran against `server` (PostgreSQL unless named).
    static func record(_ server: String = "postgres") {
        append(server, test: Test.current?.id.description ?? "unknown")
    }
}
#endif
