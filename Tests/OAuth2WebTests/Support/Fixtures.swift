import Crypto
import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2Internals
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web

/// A transport that answers from a closure and records what was sent: it stands in for the
/// network only (JWKS and introspection endpoints); every rule under test is the library's.
final class RecordingTransport: HTTPTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var _requests: [(HTTPRequest, Data?)] = []
    private let handler: @Sendable (HTTPRequest, Data?) async throws -> (HTTPResponse, Data)

    init(_ handler: @escaping @Sendable (HTTPRequest, Data?) async throws -> (HTTPResponse, Data)) {
        self.handler = handler
    }

    var count: Int { lock.withLock { _requests.count } }
    var bodies: [String] { lock.withLock { _requests.map { String(decoding: $0.1 ?? Data(), as: UTF8.self) } } }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        lock.withLock { _requests.append((request, body)) }
        return try await handler(request, body)
    }
}

/// A gate a transport waits at until the test opens it (a server that hangs), and that
/// tells the test when a request has arrived. No sleeping: waiting is on continuations.
final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var arrivals = 0
    private var arrivalWaiters: [(Int, CheckedContinuation<Void, Never>)] = []

    /// Waits until ``open()``.
    func pass() async {
        await withCheckedContinuation { continuation in
            let (resumeNow, ready): (Bool, [CheckedContinuation<Void, Never>]) = lock.withLock {
                arrivals += 1
                let ready = arrivalWaiters.filter { $0.0 <= arrivals }.map(\.1)
                arrivalWaiters.removeAll { $0.0 <= arrivals }
                if isOpen { return (true, ready) }
                waiting.append(continuation)
                return (false, ready)
            }
            ready.forEach { $0.resume() }
            if resumeNow { continuation.resume() }
        }
    }

    /// Waits until `count` requests have arrived at the gate.
    func arrived(_ count: Int = 1) async {
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool in
                if arrivals >= count { return true }
                arrivalWaiters.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    func open() {
        let all = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            isOpen = true
            defer { waiting = [] }
            return waiting
        }
        all.forEach { $0.resume() }
    }
}

/// A clock on which no deadline passes while a test runs (its sleeps last a year, and end
/// when the work they race is done): a key fetch through the test transport is never raced
/// against how busy the machine is. Tests of the deadline itself use ``InstantClock``.
struct PatientClock: Clock {
    var now: ContinuousClock.Instant { ContinuousClock.now }
    var minimumResolution: Duration { .zero }
    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try await Task.sleep(for: .seconds(365 * 86_400))
    }
}

extension PipelineClock {
    /// ``PatientClock``, for the pipeline.
    static let patient = PipelineClock(PatientClock())
}

/// A clock whose sleeps end at once, recording how long they were: a deadline passes
/// immediately, and the test can read which deadline it was.
final class InstantClock: Clock, @unchecked Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let lock = NSLock()
    private var current = Instant(offset: .zero)
    private var recorded: [Duration] = []

    var now: Instant { lock.withLock { current } }
    var minimumResolution: Duration { .zero }
    var sleeps: [Duration] { lock.withLock { recorded } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        lock.withLock {
            recorded.append(deadline.offset - current.offset)
            if deadline > current { current = deadline }
        }
    }
}



func jsonResponse(_ status: Int = 200, _ body: String, headers: HTTPFields = [:]) -> (HTTPResponse, Data) {
    var fields = headers
    fields[.contentType] = "application/json"
    return (HTTPResponse(status: .init(code: status), headerFields: fields), Data(body.utf8))
}

/// An authorization server's signing keys, made with swift-crypto, and access tokens
/// signed with them.
struct TestIssuer: Sendable {
    static let ecKey = try! JWSSigningKey.generate(.es256, keyID: "ec-1")
    static let rsaKey = try! JWSSigningKey.generate(.rs256, keyID: "rsa-1")
    static let otherECKey = try! JWSSigningKey.generate(.es256, keyID: "ec-1")
    static let rotatedKey = try! JWSSigningKey.generate(.es256, keyID: "ec-2")

    static let issuer = "https://id.example.com"
    static let audience = "https://api.example.com"
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static var keySet: JSONWebKeySet { JSONWebKeySet(keys: [ecKey.publicKey!, rsaKey.publicKey!]) }
    static var keySetJSON: String { String(decoding: keySet.jsonData, as: UTF8.self) }

    /// The claims of a good token issued at `start`, for an hour.
    static func claims(at date: Date = start) -> [String: JSONValue] {
        let now = Int64(date.timeIntervalSince1970)
        return [
            "iss": .string(issuer), "aud": .string(audience), "sub": "user-1", "client_id": "client-1",
            "iat": .integer(now), "exp": .integer(now + 3600), "jti": .string(UUID().uuidString), "scope": "orders:read profile",
        ]
    }

    /// A signed access token: `claims` changed by `edit`, header `typ: at+jwt` unless changed.
    static func token(
        key: JWSSigningKey = ecKey, at date: Date = start, header: [String: JSONValue] = ["typ": "at+jwt"],
        _ edit: (inout [String: JSONValue]) -> Void = { _ in }
    ) -> String {
        var claims = claims(at: date)
        edit(&claims)
        return try! key.sign(claims: claims, header: header)
    }

    static func verifier(
        keys: TrustedIssuer.KeySource = .fixed(keySet), algorithms: [JWSAlgorithm] = TrustedIssuer.defaultAlgorithms, date: ManualDate,
        clock: PipelineClock = .patient, logger: Logger = Logger(label: "test")
    ) -> AccessTokenVerifier {
        var verifier = AccessTokenVerifier(
            issuers: [TrustedIssuer(issuer: issuer, audiences: [audience], keys: keys, allowedAlgorithms: algorithms)], logger: logger)
        verifier.now = date.function
        verifier.clock = clock
        return verifier
    }
}

/// `body` must throw an ``AccessTokenError``; returns it.
func refusal<T>(_ body: () async throws(AccessTokenError) -> T) async -> AccessTokenError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}

extension AccessTokenError.Reason {
    static func jose(_ reason: JOSEError.Reason) -> Self { Self(reason) }
}
