import Benchmark
import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import CMallocInfo

// Goals (see README, "Benchmarks"):
// - `authorize()` on a cached token: at most 1 µs.
// - 10,000 concurrent `freshAccessToken()` calls on an expired token, against a server that
//   answers after 5 ms: all done within twice one token round trip (the "round trip"
//   benchmark below), with exactly one token request.

/// The token endpoint the benchmarks talk to: a real socket on 127.0.0.1 that answers after
/// 5 ms and counts its requests.
final class TokenServer: @unchecked Sendable {
    static let shared = TokenServer()

    private let lock = NSLock()
    private var server: LocalHTTPServer?
    private var requests = 0
    /// One transport (one URLSession) for every iteration.
    private let transport = URLSessionTransport()

    var count: Int { lock.withLock { requests } }

    func start() async throws {
        guard lock.withLock({ server == nil }) else { return }
        let started = try await LocalHTTPServer { [self] _ in
            let n = lock.withLock {
                requests += 1
                return requests
            }
            try? await Task.sleep(for: .milliseconds(5))
            return .json(200, #"{"access_token":"at-\#(n)","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-\#(n)"}"#)
        }
        lock.withLock { server = started }
    }

    func stop() async {
        let running = lock.withLock {
            defer { server = nil }
            return server
        }
        await running?.shutdown()
    }

    func client() async throws -> OAuth2Client {
        guard let base = lock.withLock({ server?.baseURL }) else { fatalError("TokenServer.start() first") }
        return try await OAuth2Client(
            server: .metadata(ServerMetadata(issuer: base, tokenEndpoint: base.appendingPathComponent("token"))),
            configuration: ClientConfiguration(clientID: "benchmark", clientSecret: "s3cret"),
            environment: HTTPEnvironment(transport: transport))
    }
}

/// Continuations behind a lock, resumed together: the shape of a session's waiters
/// without the session.
final class Waiters: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: [CheckedContinuation<String, any Error>] = []
    private var value: String?

    func wait() async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            let ready: String? = lock.withLock {
                if let value { return value }
                waiting.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    func resumeAll(with value: String) {
        let all = lock.withLock {
            self.value = value
            defer { waiting = [] }
            return waiting
        }
        for continuation in all { continuation.resume(returning: value) }
    }
}

func expiredTokens() -> TokenSet {
    TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(-10), issuedAt: Date().addingTimeInterval(-3610))
}

/// Bytes the process has allocated and not freed (glibc's `mallinfo2`); `nil` elsewhere.
func allocatedBytes() -> Int? {
    let bytes = Int(cmallocinfo_allocated_bytes())
    return bytes > 0 ? bytes : nil
}

/// 100,000 sessions of one client with their token sets in one shared memory store: the
/// bytes each costs beyond its token strings' characters. Tokens: a 43-byte access token
/// and a 43-byte refresh token (256-bit opaque values, base64url), unique per session.
enum SessionMemory {
    static let count = 100_000
    static let tokenBytes = 43 + 43

    static func token(_ kind: Character, _ index: Int) -> String {
        let digits = String(index)
        return String(kind) + String(repeating: "x", count: 42 - digits.count) + digits
    }

    /// Bytes per session beyond the token characters, measured by creating them.
    static func measure() async throws -> (perSession: Int, sessions: [TokenSession]) {
        let client = try await OAuth2Client(
            server: .metadata(ServerMetadata(issuer: URL(string: "https://as.example.com")!, tokenEndpoint: URL(string: "https://as.example.com/token")!)),
            configuration: ClientConfiguration(clientID: "benchmark"))
        let store = MemoryTokenStore()
        let expiry = Date().addingTimeInterval(3600)
        let accounts = (0..<count).map { "user-\($0)" }
        guard let before = allocatedBytes() else { return (0, []) }
        var sessions: [TokenSession] = []
        sessions.reserveCapacity(count)
        for index in 0..<count {
            let tokens = TokenSet(accessToken: token("a", index), refreshToken: token("r", index), expiresAt: expiry)
            sessions.append(try await TokenSession(client: client, tokens: tokens, store: store, account: accounts[index]))
        }
        let after = allocatedBytes()!
        // The array of references is the benchmark's, not the sessions'.
        let total = after - before - count * MemoryLayout<TokenSession>.stride
        return (total / count - tokenBytes, sessions)
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration.timeUnits = .microseconds

    Benchmark(
        "Session.authorize, cached token",
        configuration: .init(metrics: [.wallClock, .cpuTotal, .throughput, .mallocCountTotal], timeUnits: .nanoseconds, scalingFactor: .kilo, maxDuration: .seconds(3))
    ) { benchmark in
        let client = try await OAuth2Client(
            server: .metadata(ServerMetadata(issuer: URL(string: "https://as.example.com")!, tokenEndpoint: URL(string: "https://as.example.com/token")!)),
            configuration: ClientConfiguration(clientID: "benchmark"))
        let tokens = TokenSet(accessToken: "an-access-token", refreshToken: "a-refresh-token", expiresAt: Date().addingTimeInterval(3600))
        let session = try await TokenSession(client: client, tokens: tokens)
        let request = HTTPRequest(method: .get, url: URL(string: "https://api.example.com/v1/items")!)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try await session.authorize(request))
        }
        benchmark.stopMeasurement()
    }

    // Goal (issue 30): a downstream token in memory served in at most 1 µs.
    Benchmark(
        "DownstreamTokens.token, memory hit",
        configuration: .init(metrics: [.wallClock, .cpuTotal, .throughput, .mallocCountTotal], timeUnits: .nanoseconds, scalingFactor: .kilo, maxDuration: .seconds(3))
    ) { benchmark in
        let cache = DownstreamTokens()
        let key = DownstreamTokenKey(
            session: "user-session", grant: .tokenExchange, issuer: "https://as.example.com", clientID: "gateway",
            audiences: ["https://orders.example.com"], scopes: ["orders:read", "orders:write"], dpopThumbprint: "thumbprint")
        let fetch: @Sendable () async throws -> DownstreamToken = {
            DownstreamToken(token: "a-downstream-token", tokenType: "Bearer", expiresAt: Date().addingTimeInterval(3600), issuedAt: Date())
        }
        _ = try await cache.token(for: key, fetch: fetch)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try await cache.token(for: key, fetch: fetch))
        }
        benchmark.stopMeasurement()
    }

    Benchmark(
        "Token round trip, server answers after 5 ms",
        configuration: .init(metrics: [.wallClock], maxDuration: .seconds(5), maxIterations: 200),
        closure: { benchmark in
            let client = try await TokenServer.shared.client()
            let tokens = expiredTokens()
            benchmark.startMeasurement()
            blackHole(try await client.requestToken(.refreshToken(tokens.refreshToken ?? "")))
            benchmark.stopMeasurement()
        },
        setup: { try await TokenServer.shared.start() },
        teardown: { await TokenServer.shared.stop() }
    )

    // The floor under the burst: what 10,000 tasks in a task group cost on this machine
    // when each returns at once, and when each finds a fresh token (no renewal).
    Benchmark(
        "Baseline, 10,000 tasks that return at once",
        configuration: .init(metrics: [.wallClock, .cpuTotal, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 50)
    ) { benchmark in
        let token = "at-1"
        benchmark.startMeasurement()
        let last = await withTaskGroup(of: String.self) { group in
            for _ in 0..<10_000 { group.addTask { token } }
            var last = ""
            for await value in group { last = value }
            return last
        }
        benchmark.stopMeasurement()
        blackHole(last)
    }

    Benchmark(
        "Baseline, 10,000 tasks that wait on continuations resumed after 5 ms",
        configuration: .init(metrics: [.wallClock, .cpuTotal, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 50)
    ) { benchmark in
        let waiters = Waiters()
        benchmark.startMeasurement()
        let last = try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                try await Task.sleep(for: .milliseconds(5))
                waiters.resumeAll(with: "at-1")
                return "at-1"
            }
            for _ in 0..<10_000 { group.addTask { try await waiters.wait() } }
            var last = ""
            for try await value in group { last = value }
            return last
        }
        benchmark.stopMeasurement()
        blackHole(last)
    }

    Benchmark(
        "Session burst, 10,000 callers on a fresh token",
        configuration: .init(metrics: [.wallClock, .cpuTotal, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 50)
    ) { benchmark in
        let client = try await OAuth2Client(
            server: .metadata(ServerMetadata(issuer: URL(string: "https://as.example.com")!, tokenEndpoint: URL(string: "https://as.example.com/token")!)),
            configuration: ClientConfiguration(clientID: "benchmark"))
        let session = try await TokenSession(client: client, tokens: TokenSet(accessToken: "at-1", expiresAt: Date().addingTimeInterval(3600)))
        benchmark.startMeasurement()
        let last = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<10_000 { group.addTask { try await session.freshAccessToken() } }
            var last = ""
            for try await token in group { last = token }
            return last
        }
        benchmark.stopMeasurement()
        blackHole(last)
    }

    Benchmark(
        "Session renewal, 1 caller on an expired token, server answers after 5 ms",
        configuration: .init(metrics: [.wallClock, .cpuTotal, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 100),
        closure: { benchmark in
            let session = try await TokenSession(client: try await TokenServer.shared.client(), tokens: expiredTokens())
            benchmark.startMeasurement()
            blackHole(try await session.freshAccessToken())
            benchmark.stopMeasurement()
        },
        setup: { try await TokenServer.shared.start() },
        teardown: { await TokenServer.shared.stop() }
    )

    Benchmark(
        "Session burst, 10,000 callers on an expired token, server answers after 5 ms",
        configuration: .init(metrics: [.wallClock, .cpuTotal, .mallocCountTotal], maxDuration: .seconds(10), maxIterations: 50),
        closure: { benchmark in
            let client = try await TokenServer.shared.client()
            let session = try await TokenSession(client: client, tokens: expiredTokens())
            let before = TokenServer.shared.count
            benchmark.startMeasurement()
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<10_000 { group.addTask { try await session.freshAccessToken() } }
                var last = ""
                for try await token in group { last = token }
                return last
            }
            benchmark.stopMeasurement()
            blackHole(tokens)
            precondition(TokenServer.shared.count - before == 1, "single flight broken: \(TokenServer.shared.count - before) token requests")
        },
        setup: { try await TokenServer.shared.start() },
        teardown: { await TokenServer.shared.stop() }
    )

    Benchmark(
        "Memory, 100,000 sessions (bytes per session beyond 86 bytes of token characters)",
        configuration: .init(
            metrics: [.custom("bytes per session", polarity: .prefersSmaller, useScalingFactor: false), .peakMemoryResident],
            maxDuration: .seconds(10), maxIterations: 3)
    ) { benchmark in
        let (perSession, sessions) = try await SessionMemory.measure()
        benchmark.measurement(.custom("bytes per session", polarity: .prefersSmaller, useScalingFactor: false), perSession)
        blackHole(sessions)
    }
}
