// The added latency per request of OAuth2Hummingbird's middleware on a Hummingbird 2 route.
//
// One route (GET /api/orders, answering "ok"), built with Hummingbird's `Router` and called
// through its responder in-process (`RouterResponder.respond(to:context:)`, as
// HummingbirdTesting's `.router` framework does): no socket, so the figures are the
// router's and the middleware's, not the loopback TCP stack's. Each sample is one request:
// a new `Request` and request context, the response's status checked.
//
// - without middleware: the bare route (the same requests, Authorization header and all);
// - HummingbirdResourceServerMiddleware: the route behind it, `ResourceServer` with an
//   `AccessTokenVerifier` holding the JWK set (`.fixed`), RS256 and ES256 RFC 9068 access
//   tokens (the next of 2,000 each request, as ResourceServerBenchmarks), scope `read` required;
// - HummingbirdWebSignInMiddleware: the route behind it with `WebAccessRequirement()` (a signed-in user),
//   the request's cookie naming a live session in a `MemoryWebSessionStore`.
//
// Metrics: wall clock and allocations per request (ordo-one/benchmark's percentiles), and
// the process's CPU time per request (`CLOCK_PROCESS_CPUTIME_ID` read around the request:
// ordo-one's `cpuTotal` reads /proc in scheduler ticks of 10 ms, too coarse for one request).
// The added cost is the difference between a middleware's row and the bare route's.
import AccessTokenContenders
import Benchmark
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdRoute
import Logging
import NIOCore
import NIOEmbedded
import OAuth2
import OAuth2Hummingbird
import OAuth2Web


/// The process's CPU time (every thread), in nanoseconds.
func processCPUNanoseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}

func request(_ fields: HTTPFields) -> HTTPRequest {
    HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/api/orders", headerFields: fields)
}

/// Requests with the fixture's tokens, `Authorization: Bearer …`.
func bearerRequests(_ fixture: AccessTokenFixture) -> [HTTPRequest] {
    fixture.tokens.map { request([.authorization: "Bearer \($0)"]) }
}

/// HummingbirdResourceServerMiddleware over the fixture's issuer, keys in hand, scope `read` required.
func resourceServerMiddleware(_ fixture: AccessTokenFixture) -> HummingbirdResourceServerMiddleware<BenchRequestContext> {
    let verifier = AccessTokenVerifier(issuers: [
        TrustedIssuer(
            issuer: fixture.issuer, audiences: [fixture.audience], keys: .fixed(fixture.keys),
            allowedAlgorithms: [fixture.algorithm], leeway: AccessTokenFixture.leeway)
    ])
    return HummingbirdResourceServerMiddleware(ResourceServer(accessTokens: verifier), requiredScopes: [AccessTokenFixture.requiredScope])
}

/// HummingbirdWebSignInMiddleware requiring a signed-in user, and a request whose cookie names a live
/// session of its memory store. The client is built from metadata in hand: nothing is sent.
func signedInRoute() async throws -> (middleware: HummingbirdWebSignInMiddleware<BenchRequestContext>, request: HTTPRequest) {
    let issuer = URL(string: "https://as.example")!
    let client = try await OAuth2Client(
        server: .metadata(ServerMetadata(
            issuer: issuer, authorizationEndpoint: issuer.appendingPathComponent("authorize"),
            tokenEndpoint: issuer.appendingPathComponent("token"))),
        configuration: ClientConfiguration(clientID: "web-app", clientSecret: "secret", scopes: ["openid"]))
    let store = MemoryWebSessionStore()
    let signIn = WebSignIn(client: client, configuration: WebSignInConfiguration(publicBaseURL: URL(string: "https://app.example")!), webSessions: store)
    // A session id as WebSignIn makes them (32 random bytes, base64url: 43 characters); the
    // store keeps its SHA-256, base64url.
    let id = base64URL(Data((0..<32).map { _ in UInt8.random(in: 0...255) }))
    let now = Date()
    try await store.save(WebSessionRecord(
        idHash: base64URL(Data(SHA256.hash(data: Data(id.utf8)))), account: UUID().uuidString, issuer: issuer.absoluteString,
        subject: "user-1", providerSessionID: "sid-1", claims: ["sub": "user-1", "name": "Bench User"], scopes: ["openid"],
        csrfToken: base64URL(Data((0..<32).map { _ in UInt8.random(in: 0...255) })), createdAt: now, lastSeenAt: now,
        absoluteExpiry: now.addingTimeInterval(86_400)))
    return (HummingbirdWebSignInMiddleware(signIn, requiring: WebAccessRequirement()), request([.cookie: "\(signIn.configuration.cookieName)=\(id)"]))
}

func base64URL(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

let cpuPerRequest = BenchmarkMetric.custom("CPU per request (ns)")

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, cpuPerRequest], timeUnits: .nanoseconds,
        warmupIterations: 200, maxDuration: .seconds(2), maxIterations: 50_000)

    /// One request per sample: the wall clock and allocations around the request alone,
    /// the process's CPU time read just outside them.
    @Sendable func measure(_ benchmark: Benchmark, _ driver: RouteDriver, expecting status: HTTPResponse.Status = .ok) async throws {
        for iteration in benchmark.scaledIterations {
            let cpu = processCPUNanoseconds()
            benchmark.startMeasurement()
            let answer = try await driver.respond(iteration)
            benchmark.stopMeasurement()
            benchmark.measurement(cpuPerRequest, processCPUNanoseconds() - cpu)
            guard answer == status else {
                benchmark.error("request \(iteration): \(answer), not \(status)")
                return
            }
        }
    }

    nonisolated(unsafe) var bare: RouteDriver?
    Benchmark("Hummingbird route, no middleware",
        configuration: .init(setup: { bare = RouteDriver(requests: bearerRequests(try AccessTokenFixture.load(.rs256))) }, teardown: { bare = nil })
    ) { benchmark in
        try await measure(benchmark, bare!)
    }

    for algorithm in [JWSAlgorithm.rs256, .es256] {
        nonisolated(unsafe) var guarded: RouteDriver?
        Benchmark("Hummingbird route, HummingbirdResourceServerMiddleware, \(algorithm) access token",
            configuration: .init(
                setup: {
                    let fixture = try AccessTokenFixture.load(algorithm)
                    guarded = RouteDriver(requests: bearerRequests(fixture), middleware: resourceServerMiddleware(fixture))
                    // The middleware refuses what it should: the check runs.
                    let refused = RouteDriver(requests: [request([.authorization: "Bearer a.b.c"])], middleware: resourceServerMiddleware(fixture))
                    guard try await refused.respond(0) == .unauthorized else { throw BenchmarkSetupError("a bad token was not refused") }
                }, teardown: { guarded = nil })
        ) { benchmark in
            try await measure(benchmark, guarded!)
        }
    }

    nonisolated(unsafe) var signedIn: RouteDriver?
    Benchmark("Hummingbird route, HummingbirdWebSignInMiddleware, signed-in session (MemoryWebSessionStore)",
        configuration: .init(
            setup: {
                let (middleware, request) = try await signedInRoute()
                signedIn = RouteDriver(requests: [request], middleware: middleware)
                // Without the cookie the same route is refused (a redirect to sign in).
                let anonymous = RouteDriver(requests: [HummingbirdBenchmarks.request([:])], middleware: middleware)
                guard try await anonymous.respond(0) == .seeOther else { throw BenchmarkSetupError("an anonymous request was not redirected") }
            }, teardown: { signedIn = nil })
    ) { benchmark in
        try await measure(benchmark, signedIn!)
    }
}

struct BenchmarkSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
