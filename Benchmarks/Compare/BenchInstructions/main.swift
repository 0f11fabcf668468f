// bench-instructions: fixed work for instruction counts (valgrind --tool=callgrind), with
// no thread but the main one. Valgrind 3.19 crashes when Swift concurrency starts its
// thread pool, so every task here runs on an executor that runs its jobs inline on the main
// thread (a task executor preference: nonisolated async functions and default actors
// follow it, SE-0417), and nothing is left for the global pool.
//
//   bench-instructions ours FILE COUNT      AccessTokenVerifier.verify, `.fixed` keys (as bench-resource-server)
//   bench-instructions raw FILE COUNT       swift-crypto's signature check alone (the floor)
//   bench-instructions bare COUNT           a Hummingbird route, no middleware (as HummingbirdBenchmarks)
//   bench-instructions signed-in COUNT      the route behind HummingbirdWebSignInMiddleware, a signed-in session
//
// Per operation: (Ir of COUNT = N + 1) − (Ir of COUNT = 1), divided by N: the setup cancels
// out. BENCHMARKS.md ("Where ours is behind") gives the figures.
import AccessTokenContenders
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

/// Runs every job on the thread that calls ``drain()``, in the order they came.
final class InlineExecutor: TaskExecutor, @unchecked Sendable {
    private var jobs: [UnownedJob] = []

    func enqueue(_ job: consuming ExecutorJob) {
        jobs.append(UnownedJob(job))
    }

    func drain() {
        var next = 0
        while next < jobs.count {
            let job = jobs[next]
            next += 1
            job.runSynchronously(on: asUnownedTaskExecutor())
            if next > 1024 {
                jobs.removeFirst(next)
                next = 0
            }
        }
        jobs.removeAll()
    }
}

final class Outcome: @unchecked Sendable {
    var error: (any Error)?
    var done = false
}


func request(_ fields: HTTPFields) -> HTTPRequest {
    HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/api/orders", headerFields: fields)
}

func base64URL(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// The route behind the web sign-in's middleware, and a request whose cookie names a live
/// session of its memory store (as HummingbirdBenchmarks).
func signedInRoute() async throws -> RouteDriver {
    let issuer = URL(string: "https://as.example")!
    let client = try await OAuth2Client(
        server: .metadata(ServerMetadata(
            issuer: issuer, authorizationEndpoint: issuer.appendingPathComponent("authorize"),
            tokenEndpoint: issuer.appendingPathComponent("token"))),
        configuration: ClientConfiguration(clientID: "web-app", clientSecret: "secret", scopes: ["openid"]))
    let store = MemoryWebSessionStore()
    let signIn = WebSignIn(client: client, configuration: WebSignInConfiguration(publicBaseURL: URL(string: "https://app.example")!), webSessions: store)
    let id = base64URL(Data((0..<32).map { _ in UInt8.random(in: 0...255) }))
    let now = Date()
    try await store.save(WebSessionRecord(
        idHash: base64URL(Data(SHA256.hash(data: Data(id.utf8)))), account: UUID().uuidString, issuer: issuer.absoluteString,
        subject: "user-1", providerSessionID: "sid-1", claims: ["sub": "user-1", "name": "Bench User"], scopes: ["openid"],
        csrfToken: base64URL(Data((0..<32).map { _ in UInt8.random(in: 0...255) })), createdAt: now, lastSeenAt: now,
        absoluteExpiry: now.addingTimeInterval(86_400)))
    return RouteDriver(
        requests: [request([.cookie: "\(signIn.configuration.cookieName)=\(id)", .authorization: "Bearer a.b.c"])],
        middleware: HummingbirdWebSignInMiddleware<BenchRequestContext>(signIn, requiring: WebAccessRequirement()))
}

struct Failure: Error, CustomStringConvertible {
    let description: String
}

func run(_ arguments: [String]) async throws {
    switch (arguments.first ?? "", arguments.count) {
    case ("ours", 3):
        let fixture = try AccessTokenFixture(file: arguments[1])
        let contender = OursContender(fixture)
        for index in 0..<(Int(arguments[2]) ?? 0) { _ = try await contender.validate(fixture.tokens[index % fixture.tokens.count]) }
    case ("raw", 3):
        let contender = try RawSignatureContender(try AccessTokenFixture(file: arguments[1]))
        for index in 0..<(Int(arguments[2]) ?? 0) where !contender.validate(index) { throw Failure(description: "a signature did not verify") }
    case ("bare", 2):
        let driver = RouteDriver(requests: [request([.cookie: "session=x", .authorization: "Bearer a.b.c"])])
        for index in 0..<(Int(arguments[1]) ?? 0) where try await driver.respond(index) != .ok { throw Failure(description: "not 200") }
    case ("signed-in", 2):
        let driver = try await signedInRoute()
        for index in 0..<(Int(arguments[1]) ?? 0) where try await driver.respond(index) != .ok { throw Failure(description: "not 200") }
    default:
        throw Failure(description: "usage: bench-instructions ours|raw FILE COUNT | bare|signed-in COUNT")
    }
}

@main
struct BenchInstructions {
    static func main() {
        let executor = InlineExecutor()
        let outcome = Outcome()
        let arguments = Array(CommandLine.arguments.dropFirst())
        Task(executorPreference: executor) {
            do { try await run(arguments) } catch { outcome.error = error }
            outcome.done = true
        }
        executor.drain()
        if let error = outcome.error {
            FileHandle.standardError.write(Data("bench-instructions: \(error)\n".utf8))
            exit(1)
        }
        guard outcome.done else {
            FileHandle.standardError.write(Data("bench-instructions: the work waited for something that never came\n".utf8))
            exit(1)
        }
    }
}
