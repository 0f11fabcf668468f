import Benchmark
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Postgres
import PostgresNIO

// The PostgreSQL token store (OAuth2Postgres) on the local PostgreSQL of
// scripts/test-servers/postgres.sh (TLS, verify-full), per call: a fresh token from the
// in-process cache, a load with the cache off (one round trip), and the fleet refresh. Each
// benchmark works in a schema of its own and drops it at its teardown; without
// OAUTH2_TEST_POSTGRES_URL the run fails (nothing is skipped). What each measures, and the
// figures: BENCHMARKS.md ("The PostgreSQL token store").

/// A fleet benchmark's replicas, their clients, and the token endpoint they share.
struct Fleet: Sendable {
    let replicas: Replicas
    let clients: [OAuth2Client]
    let endpoint: CountingTokenEndpoint

    static func start(replicas count: Int) async throws -> Fleet {
        let endpoint = try await CountingTokenEndpoint.start(delay: .milliseconds(5))
        do {
            let replicas = try await Replicas.start(count: count, cacheCapacity: 1024)
            var clients: [OAuth2Client] = []
            for _ in 0..<count { clients.append(try await endpoint.client()) }
            return Fleet(replicas: replicas, clients: clients, endpoint: endpoint)
        } catch {
            await endpoint.stop()
            throw error
        }
    }

    func stop() async {
        await replicas.stop()
        await endpoint.stop()
    }
}

/// Registers "Fleet refresh, `replicas` replicas × `callers` callers …": per iteration, a new
/// session whose stored token expired 10 s ago is restored on every replica (not measured);
/// then `callers` concurrent `freshAccessToken()` calls on each replica's session start at
/// once, and the time is from their start until every caller has its token. The benchmark
/// stops unless exactly one token request reached the endpoint and every caller got the
/// same token.
func fleetRefreshBenchmark(replicas: Int, callers: Int, slot: Slot<Fleet>) {
    let callersText = callers == 1 ? "1 caller" : "\(callers) callers"
    let replicasText = replicas == 1 ? "1 replica" : "\(replicas) replicas"
    let iterations = Counter()
    Benchmark(
        "Fleet refresh, \(replicasText) × \(callersText) on one expired session, server answers after 5 ms",
        configuration: .init(metrics: [.wallClock], maxDuration: .seconds(10), maxIterations: 200),
        closure: { benchmark in
            let fleet = slot.value
            let account = "fleet-\(iterations.increment())"
            let key = TokenSession.key(for: fleet.clients[0], account: account)
            try await fleet.replicas.stores[0].save(StoredTokenSession(key: key, tokens: expiredTokens()))
            var sessions: [TokenSession] = []
            for (store, client) in zip(fleet.replicas.stores, fleet.clients) {
                guard let session = try await TokenSession.restore(client: client, store: store, account: account) else {
                    fatalError("the session written by replica 0 is missing on another replica")
                }
                sessions.append(session)
            }
            let before = fleet.endpoint.count
            benchmark.startMeasurement()
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for session in sessions {
                    for _ in 0..<callers { group.addTask { try await session.freshAccessToken() } }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            benchmark.stopMeasurement()
            let requests = fleet.endpoint.count - before
            precondition(requests == 1, "single flight across replicas broken: \(requests) token requests")
            precondition(tokens.count == 1, "callers got \(tokens.count) different tokens")
        },
        setup: { slot.put(try await Fleet.start(replicas: replicas)) },
        teardown: { await slot.take()?.stop() }
    )
}

/// Registers "Downstream tokens, 4 replicas × 100 callers on a cold key": per iteration, a
/// new key; `callers` concurrent `DownstreamTokens.token(for:fetch:)` calls on each replica's
/// cache (over its own `PostgresDownstreamTokenStore`) start at once, and the time is from
/// their start until every caller has its token. The fetch answers after 5 ms and counts its
/// calls; the benchmark stops unless exactly one fetch ran and every caller got its token.
func downstreamColdKeyBenchmark(replicas: Int, callers: Int, slot: Slot<Replicas>) {
    let iterations = Counter()
    Benchmark(
        "Downstream tokens, \(replicas) replicas × \(callers) callers on a cold key, fetch answers after 5 ms",
        configuration: .init(metrics: [.wallClock], maxDuration: .seconds(10), maxIterations: 200),
        closure: { benchmark in
            let fleet = slot.value
            let caches = fleet.stores.map { DownstreamTokens(store: PostgresDownstreamTokenStore(store: $0)) }
            let key = DownstreamTokenKey(
                session: "user-\(iterations.increment())", grant: .tokenExchange, issuer: "https://as.example.com", clientID: "gateway",
                audiences: ["https://orders.example.com"], scopes: ["orders:read"])
            let fetches = Counter()
            let fetch: @Sendable () async throws -> DownstreamToken = {
                let n = fetches.increment()
                try await Task.sleep(for: .milliseconds(5))
                return DownstreamToken(token: "token-\(n)", tokenType: "Bearer", expiresAt: Date().addingTimeInterval(3600), issuedAt: Date())
            }
            benchmark.startMeasurement()
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for cache in caches {
                    for _ in 0..<callers { group.addTask { try await cache.token(for: key, fetch: fetch).token } }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            benchmark.stopMeasurement()
            precondition(fetches.value == 1, "one fetch per key for the fleet broken: \(fetches.value) fetches")
            precondition(tokens.count == replicas * callers && Set(tokens).count == 1, "callers got \(Set(tokens).count) different tokens")
        },
        setup: { slot.put(try await Replicas.start(count: replicas, cacheCapacity: 0)) },
        teardown: { await slot.take()?.stop() }
    )
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration.timeUnits = .microseconds
    // Before every benchmark of this target, the memory-store ones included: without the
    // database the process exits with an error, so that `swift package benchmark` fails (a
    // setup that throws is reported, but the run would still exit with 0).
    Benchmark.setup = {
        do {
            _ = try BenchmarkPostgres.url()
        } catch {
            FileHandle.standardError.write(Data("PostgresBenchmarks: \(error)\n".utf8))
            exit(1)
        }
    }
    // (Total CPU time is left out: on Linux it comes in 10-ms steps, coarser than most of these.)
    let inProcess = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal], timeUnits: .nanoseconds, scalingFactor: .kilo,
        maxDuration: .seconds(3))
    let roundTrip = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(10), maxIterations: 5_000)
    let request = HTTPRequest(method: .get, url: URL(string: "https://api.example.com/v1/items")!)

    // MARK: A fresh token in hand

    // A long-lived session: the token is in the session's memory whatever the store.
    let memorySession = Slot<TokenSession>()
    Benchmark(
        "Memory store: TokenSession.authorize, fresh token",
        configuration: inProcess,
        closure: { benchmark in
            let session = memorySession.value
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(try await session.authorize(request)) }
            benchmark.stopMeasurement()
        },
        setup: { memorySession.put(try await TokenSession(client: try await offlineClient(), tokens: freshTokens(), store: MemoryTokenStore())) },
        teardown: { _ = memorySession.take() }
    )

    let postgresSession = Slot<(Replicas, TokenSession)>()
    Benchmark(
        "Postgres store, cache on: TokenSession.authorize, fresh token",
        configuration: inProcess,
        closure: { benchmark in
            let session = postgresSession.value.1
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(try await session.authorize(request)) }
            benchmark.stopMeasurement()
        },
        setup: {
            let replicas = try await Replicas.start(count: 1, cacheCapacity: 1024)
            do {
                let session = try await TokenSession(client: try await offlineClient(), tokens: freshTokens(), store: replicas.stores[0])
                postgresSession.put((replicas, session))
            } catch {
                await replicas.stop()
                throw error
            }
        },
        teardown: { await postgresSession.take()?.0.stop() }
    )

    // A session made per request (`TokenSession.restore`), as a replica that keeps no session
    // object between requests does: one `load` of the store, then the token.
    let memoryStore = Slot<(MemoryTokenStore, OAuth2Client)>()
    Benchmark(
        "Memory store: TokenSession.restore + freshAccessToken",
        configuration: inProcess,
        closure: { benchmark in
            let (store, client) = memoryStore.value
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try await TokenSession.restore(client: client, store: store)!.freshAccessToken())
            }
            benchmark.stopMeasurement()
        },
        setup: {
            let client = try await offlineClient()
            let store = MemoryTokenStore()
            await store.save(StoredTokenSession(key: TokenSession.key(for: client), tokens: freshTokens()))
            memoryStore.put((store, client))
        },
        teardown: { _ = memoryStore.take() }
    )

    /// One replica with a cache (1024 sessions, the default) or without, a client, and a
    /// stored session of that client with a fresh token.
    let store = Slot<(Replicas, OAuth2Client)>()
    @Sendable func setUpStore(cacheCapacity: Int) async throws {
        let replicas = try await Replicas.start(count: 1, cacheCapacity: cacheCapacity)
        do {
            let client = try await offlineClient()
            try await replicas.stores[0].save(StoredTokenSession(key: TokenSession.key(for: client), tokens: freshTokens()))
            // The first load fills the cache.
            _ = try await replicas.stores[0].load(TokenSession.key(for: client))
            store.put((replicas, client))
        } catch {
            await replicas.stop()
            throw error
        }
    }
    @Sendable func tearDownStore() async { await store.take()?.0.stop() }

    Benchmark(
        "Postgres store, cache on: TokenSession.restore + freshAccessToken (load from the cache)",
        configuration: inProcess,
        closure: { benchmark in
            let (replicas, client) = store.value
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try await TokenSession.restore(client: client, store: replicas.stores[0])!.freshAccessToken())
            }
            benchmark.stopMeasurement()
        },
        setup: { try await setUpStore(cacheCapacity: 1024) },
        teardown: { await tearDownStore() }
    )

    Benchmark(
        "Postgres store, cache on: load (from the cache)",
        configuration: inProcess,
        closure: { benchmark in
            let (replicas, client) = store.value
            let key = TokenSession.key(for: client)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(try await replicas.stores[0].load(key)) }
            benchmark.stopMeasurement()
        },
        setup: { try await setUpStore(cacheCapacity: 1024) },
        teardown: { await tearDownStore() }
    )

    // MARK: The cache off: one round trip per load

    Benchmark(
        "Postgres store, cache off: load (one round trip)",
        configuration: roundTrip,
        closure: { benchmark in
            let (replicas, client) = store.value
            let key = TokenSession.key(for: client)
            benchmark.startMeasurement()
            blackHole(try await replicas.stores[0].load(key))
            benchmark.stopMeasurement()
        },
        setup: { try await setUpStore(cacheCapacity: 0) },
        teardown: { await tearDownStore() }
    )

    Benchmark(
        "Postgres store, cache off: TokenSession.restore + freshAccessToken (one round trip)",
        configuration: roundTrip,
        closure: { benchmark in
            let (replicas, client) = store.value
            benchmark.startMeasurement()
            blackHole(try await TokenSession.restore(client: client, store: replicas.stores[0])!.freshAccessToken())
            benchmark.stopMeasurement()
        },
        setup: { try await setUpStore(cacheCapacity: 0) },
        teardown: { await tearDownStore() }
    )

    // The store's read without the store: the same SELECT through the same pool
    // (PostgresClient.query), rows read and dropped; what PostgresNIO itself costs.
    Benchmark(
        "PostgresNIO alone: the store's SELECT by primary key (PostgresClient.query)",
        configuration: roundTrip,
        closure: { benchmark in
            let (replicas, client) = store.value
            let key = TokenSession.key(for: client)
            let query: PostgresQuery = """
                SELECT version, key_id, sealed FROM \(unescaped: replicas.schema).oauth2_sessions
                WHERE issuer = \(key.issuer) AND client_id = \(key.clientID) AND account = \(key.account)
                """
            benchmark.startMeasurement()
            var found = 0
            for try await _ in try await replicas.stores[0].client.query(query, logger: BenchmarkPostgres.logger) { found += 1 }
            benchmark.stopMeasurement()
            precondition(found == 1, "the row is missing")
        },
        setup: { try await setUpStore(cacheCapacity: 0) },
        teardown: { await tearDownStore() }
    )

    // MARK: Refresh

    let endpoint = Slot<(CountingTokenEndpoint, OAuth2Client)>()
    Benchmark(
        "Token round trip, server answers after 5 ms",
        configuration: .init(metrics: [.wallClock], maxDuration: .seconds(5), maxIterations: 200),
        closure: { benchmark in
            let client = endpoint.value.1
            benchmark.startMeasurement()
            blackHole(try await client.requestToken(.refreshToken("rt-0")))
            benchmark.stopMeasurement()
        },
        setup: {
            let server = try await CountingTokenEndpoint.start(delay: .milliseconds(5))
            endpoint.put((server, try await server.client()))
        },
        teardown: { await endpoint.take()?.0.stop() }
    )

    fleetRefreshBenchmark(replicas: 1, callers: 1, slot: Slot())
    fleetRefreshBenchmark(replicas: 4, callers: 1, slot: Slot())
    fleetRefreshBenchmark(replicas: 4, callers: 100, slot: Slot())
    downstreamColdKeyBenchmark(replicas: 4, callers: 100, slot: Slot())
}
