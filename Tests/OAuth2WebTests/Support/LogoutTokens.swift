import Foundation
import Logging
import OAuth2
import OAuth2Internals
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web

/// Logout tokens (OpenID Connect Back-Channel Logout 1.0 §2.4) signed with `TestIssuer`'s
/// swift-crypto keys, and verifiers of them.
enum LogoutTokens {
    static let clientID = "web-app"
    static let event = "http://schemas.openid.net/event/backchannel-logout"

    /// The claims of a good logout token issued at `date`, with `exp` two minutes later.
    static func claims(at date: Date = TestIssuer.start) -> [String: JSONValue] {
        let now = Int64(date.timeIntervalSince1970)
        return [
            "iss": .string(TestIssuer.issuer), "aud": .string(clientID), "iat": .integer(now), "exp": .integer(now + 120),
            "jti": .string(UUID().uuidString), "sub": "user-1", "sid": "session-1", "events": [event: [:]],
        ]
    }

    /// A signed logout token: `claims` changed by `edit`, header `typ: logout+jwt` unless changed.
    static func token(
        key: JWSSigningKey = TestIssuer.ecKey, at date: Date = TestIssuer.start, header: [String: JSONValue] = ["typ": "logout+jwt"],
        _ edit: (inout [String: JSONValue]) -> Void = { _ in }
    ) -> String {
        var claims = claims(at: date)
        edit(&claims)
        return try! key.sign(claims: claims, header: header)
    }

    /// The shape Glewlwyd 2.7.5 sends (seen by the web app journeys): no `exp`, the generic
    /// `typ: JWT` (its JWT library's default).
    static func glewlwydToken(at date: Date = TestIssuer.start) -> String {
        token(at: date, header: ["typ": "JWT"]) { $0["exp"] = nil }
    }

    static func verifier(
        keys: TrustedIssuer.KeySource = .fixed(TestIssuer.keySet), replayStore: any ReplayStore = MemoryReplayStore(),
        algorithms: [JWSAlgorithm] = TrustedIssuer.defaultAlgorithms, requiresExplicitType: Bool = false, requiresExpiration: Bool = false,
        issuer: String = TestIssuer.issuer, date: ManualDate, clock: PipelineClock = .patient, logger: Logger = Logger(label: "test")
    ) -> LogoutTokenVerifier {
        var verifier = LogoutTokenVerifier(
            issuer: issuer, clientID: clientID, keys: keys, replayStore: replayStore, allowedAlgorithms: algorithms,
            requiresExplicitType: requiresExplicitType, requiresExpiration: requiresExpiration, logger: logger)
        verifier.now = date.function
        verifier.clock = clock
        return verifier
    }
}

/// `body` must throw a ``LogoutTokenError``; returns it.
func logoutRefusal<T>(_ body: () async throws(LogoutTokenError) -> T) async -> LogoutTokenError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}

extension LogoutTokenError.Reason {
    static func jose(_ reason: JOSEError.Reason) -> Self { Self(reason) }
}

/// A replay store that records what it is asked, or fails.
final class RecordingReplayStore: ReplayStore, @unchecked Sendable {
    private let lock = NSLock()
    private let inner = MemoryReplayStore()
    private let fails: Bool
    private var _inserts: [(key: String, expiresAt: Date)] = []

    init(fails: Bool = false) { self.fails = fails }

    var inserts: [(key: String, expiresAt: Date)] { lock.withLock { _inserts } }

    struct Down: Error {}

    func insertIfAbsent(_ key: String, expiresAt: Date, now: Date) async throws -> Bool {
        if fails { throw Down() }
        lock.withLock { _inserts.append((key, expiresAt)) }
        return try await inner.insertIfAbsent(key, expiresAt: expiresAt, now: now)
    }
}
