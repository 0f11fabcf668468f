import Foundation
import Logging
import OAuth2
import OAuth2Postgres
import OAuth2TestSupport
import PostgresNIO

/// The PostgreSQL the benchmarks use: scripts/test-servers/postgres.sh's, named by
/// `OAUTH2_TEST_POSTGRES_URL` (scripts/benchmarks starts it and sets the variable).
enum BenchmarkPostgres {
    /// Thrown from every benchmark's setup when `OAUTH2_TEST_POSTGRES_URL` is not set: the
    /// benchmark fails instead of measuring nothing.
    struct Unconfigured: Error, CustomStringConvertible {
        var description: String {
            "OAUTH2_TEST_POSTGRES_URL is not set: run scripts/benchmarks (it starts scripts/test-servers/postgres.sh), "
                + "or start it yourself and `source .build/test-servers/postgres/env`"
        }
    }

    /// `OAUTH2_TEST_POSTGRES_URL`.
    ///
    /// - Throws: ``Unconfigured`` when it is missing or empty.
    static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["OAUTH2_TEST_POSTGRES_URL"], !url.isEmpty else { throw Unconfigured() }
        return url
    }

    /// Warnings and errors only: a benchmark's output is its table.
    static let logger: Logger = {
        var logger = Logger(label: "oauth2-postgres-benchmarks")
        logger.logLevel = .warning
        return logger
    }()

    /// A schema name of the benchmarks' own (`bench_` and 8 hex digits), dropped at teardown.
    static func schemaName() -> String {
        "bench_" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
    }

    /// A key ring of one random key.
    static func encryptionKeys() throws -> PostgresTokenStore.EncryptionKeys {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return try .init(current: .init(id: "bench", bytes: bytes))
    }
}

/// Replicas of a fleet in one process: `count` ``PostgresTokenStore``s over one schema, each
/// with its own connection pool (and, with a cache, its own notification listener), running
/// as they would in a service.
final class Replicas: Sendable {
    let schema: String
    let stores: [PostgresTokenStore]
    private let tasks: [Task<Void, Never>]

    private init(schema: String, stores: [PostgresTokenStore], tasks: [Task<Void, Never>]) {
        self.schema = schema
        self.stores = stores
        self.tasks = tasks
    }

    /// Starts `count` stores on a new schema with the default pool settings of
    /// `PostgresTokenStore.clientConfiguration(url:)`, migrates the schema, and, with a
    /// cache, returns once every store's listener hears notifications (so that its cache
    /// serves).
    ///
    /// - Throws: ``BenchmarkPostgres/Unconfigured``; the store's errors; a timeout error
    ///   after 20 s without every listener connected.
    static func start(count: Int, cacheCapacity: Int) async throws -> Replicas {
        let postgres = try PostgresTokenStore.clientConfiguration(url: BenchmarkPostgres.url())
        let schema = BenchmarkPostgres.schemaName()
        let ring = try BenchmarkPostgres.encryptionKeys()
        let stores = try (0..<count).map { _ in
            try PostgresTokenStore(
                postgres: postgres, configuration: .init(schema: schema, cacheCapacity: cacheCapacity),
                encryptionKeys: ring, logger: BenchmarkPostgres.logger)
        }
        let tasks = stores.map { store in Task { _ = try? await store.run() } }
        let replicas = Replicas(schema: schema, stores: stores, tasks: tasks)
        do {
            try await stores[0].migrate()
            if cacheCapacity > 0 { try await replicas.waitUntilListening() }
        } catch {
            await replicas.stop()
            throw error
        }
        return replicas
    }

    /// Writes a probe row until every store's listener has heard of it, then removes it.
    /// (A store's cache serves only while its listener is connected.)
    private func waitUntilListening() async throws {
        let probe = TokenSessionKey(issuer: "https://benchmarks.invalid", clientID: "probe", account: "probe")
        let heard = stores.map { _ in Flag() }
        let observations = zip(stores, heard).map { store, flag in store.observeChanges(of: probe) { _ in flag.set() } }
        defer { observations.forEach { $0.cancel() } }
        let end = ContinuousClock.now + .seconds(20)
        while !heard.allSatisfy(\.isSet) {
            guard ContinuousClock.now < end else { throw Timeout(what: "the stores' listeners to connect") }
            try await stores[0].save(StoredTokenSession(key: probe, tokens: TokenSet(accessToken: "probe")))
            try await Task.sleep(for: .milliseconds(20))
        }
        try await stores[0].remove(probe)
    }

    /// Drops the schema and stops every store.
    func stop() async {
        do {
            try await stores[0].client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(schema) CASCADE"), logger: BenchmarkPostgres.logger)
        } catch {
            BenchmarkPostgres.logger.error("could not drop schema \(schema): \(String(reflecting: error))")
        }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }
}

struct Timeout: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// A flag set once, read from anywhere.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// What a benchmark's setup made and its closure and teardown use.
final class Slot<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value?

    /// The value its setup put there.
    var value: Value {
        guard let value = lock.withLock({ stored }) else { fatalError("the benchmark's setup did not run") }
        return value
    }

    func put(_ value: Value) { lock.withLock { stored = value } }

    func take() -> Value? {
        lock.withLock {
            defer { stored = nil }
            return stored
        }
    }
}

/// A token endpoint on 127.0.0.1 that answers every request after `delay` with new tokens
/// (`at-N`, `rt-N`) and counts the requests: a real socket, as in SessionBenchmarks.
final class CountingTokenEndpoint: Sendable {
    private let server: LocalHTTPServer
    private let requests: Counter

    private init(server: LocalHTTPServer, requests: Counter) {
        self.server = server
        self.requests = requests
    }

    static func start(delay: Duration) async throws -> CountingTokenEndpoint {
        let requests = Counter()
        let server = try await LocalHTTPServer { _ in
            let n = requests.increment()
            try? await Task.sleep(for: delay)
            return .json(200, #"{"access_token":"at-\#(n)","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-\#(n)"}"#)
        }
        return CountingTokenEndpoint(server: server, requests: requests)
    }

    /// How many token requests it has answered or is answering.
    var count: Int { requests.value }

    /// A client of this endpoint with a transport of its own (a replica's).
    func client() async throws -> OAuth2Client {
        try await OAuth2Client(
            server: .metadata(ServerMetadata(issuer: server.baseURL, tokenEndpoint: server.baseURL.appendingPathComponent("token"))),
            configuration: ClientConfiguration(clientID: "benchmark", clientSecret: "s3cret"),
            environment: HTTPEnvironment(transport: URLSessionTransport()))
    }

    func stop() async { await server.shutdown() }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() -> Int {
        lock.withLock {
            count += 1
            return count
        }
    }
}

/// A client of an authorization server that is never asked: for sessions whose tokens stay fresh.
func offlineClient() async throws -> OAuth2Client {
    try await OAuth2Client(
        server: .metadata(ServerMetadata(issuer: URL(string: "https://as.example.com")!, tokenEndpoint: URL(string: "https://as.example.com/token")!)),
        configuration: ClientConfiguration(clientID: "benchmark"))
}

/// Tokens valid for another hour.
func freshTokens() -> TokenSet {
    TokenSet(accessToken: "an-access-token", refreshToken: "a-refresh-token", expiresAt: Date().addingTimeInterval(3600))
}

/// Tokens that expired 10 s ago, with a refresh token.
func expiredTokens() -> TokenSet {
    TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(-10), issuedAt: Date().addingTimeInterval(-3610))
}
