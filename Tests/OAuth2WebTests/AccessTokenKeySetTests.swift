import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// Keys from a JWKS URL (through the library's transport seam): cached, refetched on an
/// unknown `kid` with a cooldown, kept while the endpoint is down (up to the staleness cap),
/// and never waited for longer than the deadline.
@Suite(.timeLimit(.minutes(1))) struct AccessTokenKeySetTests {
    let date = ManualDate(TestIssuer.start)
    static let jwksURL = URL(string: "https://id.example.com/jwks")!
    static let shortLived = JWKSCache.Policy(minimumLifetime: 60, maximumLifetime: 60, defaultLifetime: 60, minimumRefetchInterval: 10)

    func keySource(_ transport: RecordingTransport, policy: JWKSCache.Policy = shortLived) throws -> TrustedIssuer.KeySource {
        try .jwks(Self.jwksURL, environment: HTTPEnvironment(transport: transport), policy: policy)
    }

    static func keySetResponse(_ keys: [JWSSigningKey]) -> (HTTPResponse, Data) {
        jsonResponse(200, String(decoding: JSONWebKeySet(keys: keys.map { $0.publicKey! }).jsonData, as: UTF8.self))
    }

    @Test func fetchesTheKeySetOnceAndCachesIt() async throws {
        let transport = RecordingTransport { _, _ in Self.keySetResponse([TestIssuer.ecKey]) }
        let verifier = TestIssuer.verifier(keys: try keySource(transport), date: date)
        for _ in 0..<3 { _ = try await verifier.verify(TestIssuer.token()) }
        #expect(transport.count == 1)
    }

    @Test func refetchesOnAnUnknownKidAtMostOncePerCooldown() async throws {
        let rotated = Locked(false)
        let transport = RecordingTransport { _, _ in
            rotated.withLock { $0 } ? Self.keySetResponse([TestIssuer.ecKey, TestIssuer.rotatedKey]) : Self.keySetResponse([TestIssuer.ecKey])
        }
        let verifier = TestIssuer.verifier(keys: try keySource(transport), date: date)
        _ = try await verifier.verify(TestIssuer.token())
        rotated.withLock { $0 = true }
        // The issuer rotated its keys: the new kid makes one refetch, and the token passes.
        #expect(try await verifier.verify(TestIssuer.token(key: TestIssuer.rotatedKey)).subject == "user-1")
        #expect(transport.count == 2)
        // Forged tokens with random kids do not make the API hammer the issuer.
        date.advance(by: 1)
        for index in 0..<5 {
            let stranger = try JWSSigningKey.generate(.es256, keyID: "random-\(index)")
            let error = await refusal { () async throws(AccessTokenError) in try await verifier.verify(TestIssuer.token(key: stranger)) }
            #expect(error?.reason == .jose(.keyNotFound))
        }
        #expect(transport.count == 2)
    }

    @Test func anUnknownKidFailsAtTheDeadlineWhenTheEndpointHangs() async throws {
        let gate = Gate()
        defer { gate.open() }
        let requests = Locked(0)
        let transport = RecordingTransport { _, _ in
            let first = requests.withLock { count -> Bool in
                count += 1
                return count == 1
            }
            if first { return Self.keySetResponse([TestIssuer.ecKey]) }
            await gate.pass()
            return Self.keySetResponse([TestIssuer.ecKey])
        }
        let verifier = TestIssuer.verifier(keys: try keySource(transport), date: date)
        _ = try await verifier.verify(TestIssuer.token())
        // The same verifier (and cache) on a clock whose deadlines pass at once.
        let clock = InstantClock()
        var hurried = verifier
        hurried.clock = PipelineClock(clock)
        let error = await refusal { () async throws(AccessTokenError) in try await hurried.verify(TestIssuer.token(key: TestIssuer.rotatedKey)) }
        #expect(error?.code == .invalidToken)
        #expect(error?.reason == .jose(.keyNotFound))
        // It waited exactly the verifier's deadline (on the injected clock), not the hang.
        #expect(clock.sleeps.contains(verifier.keyFetchDeadline))
        await gate.arrived()
    }

    /// A verifier that fetched the issuer's set (one key) and verified a token with it; from
    /// then on its JWKS endpoint answers 500.
    func verifierWhoseEndpointWentDown() async throws -> (verifier: AccessTokenVerifier, transport: RecordingTransport) {
        let down = Locked(false)
        let transport = RecordingTransport { _, _ in
            down.withLock { $0 } ? jsonResponse(500, #"{"error":"server_error"}"#) : Self.keySetResponse([TestIssuer.ecKey])
        }
        let verifier = TestIssuer.verifier(keys: try keySource(transport), date: date)
        _ = try await verifier.verify(TestIssuer.token())
        down.withLock { $0 = true }
        return (verifier, transport)
    }

    @Test func anUnknownKidIsRefusedAtOnceWhenTheEndpointAnswers500() async throws {
        let (verifier, transport) = try await verifierWhoseEndpointWentDown()
        // One refetch, answered 500: the token is refused as naming no known key (not as the
        // issuer being unavailable: its keys are known), and the known keys still verify.
        let error = await refusal { () async throws(AccessTokenError) in try await verifier.verify(TestIssuer.token(key: TestIssuer.rotatedKey)) }
        #expect(error?.code == .invalidToken)
        #expect(error?.reason == .jose(.keyNotFound))
        #expect(transport.count == 2)
        #expect(try await verifier.verify(TestIssuer.token()).subject == "user-1")
        // Within the cooldown a second unknown kid does not ask the failing endpoint again.
        _ = await refusal { () async throws(AccessTokenError) in try await verifier.verify(TestIssuer.token(key: TestIssuer.rotatedKey)) }
        #expect(transport.count == 2)
    }

    @Test func cachedKeysStillVerifyWhileTheEndpointIsDown() async throws {
        let (verifier, _) = try await verifierWhoseEndpointWentDown()
        date.advance(by: 600)  // the cached set expired ten minutes ago
        #expect(try await verifier.verify(TestIssuer.token(at: date.now)).subject == "user-1")
        #expect(try await verifier.verify(TestIssuer.token(at: date.now)).subject == "user-1")
    }

    /// A key the provider removed must not keep verifying for as long as an attacker blocks
    /// the path to its `jwks_uri`: a set last fetched more than a day ago (the default cap)
    /// is no longer used, and the token is refused as unavailable (503).
    @Test func aKeySetLastFetchedMoreThanADayAgoIsRefusedWhileRefetchesFail() async throws {
        let down = Locked(false)
        let transport = RecordingTransport { _, _ in
            down.withLock { $0 } ? jsonResponse(500, #"{"error":"server_error"}"#) : Self.keySetResponse([TestIssuer.ecKey])
        }
        let verifier = TestIssuer.verifier(keys: try keySource(transport), date: date)
        _ = try await verifier.verify(TestIssuer.token())
        down.withLock { $0 = true }

        // Within the day: the expired set still verifies while refetches fail.
        date.advance(by: 86_400 - 60)
        #expect(try await verifier.verify(TestIssuer.token(at: date.now)).subject == "user-1")
        // Past it: refused as unavailable, not as a bad token.
        date.advance(by: 120)
        let error = await refusal { () async throws(AccessTokenError) in try await verifier.verify(TestIssuer.token(at: date.now)) }
        #expect(error?.code == .temporarilyUnavailable)
        #expect(error?.status == .serviceUnavailable)
        #expect(error?.reason == .unavailable)
    }

    @Test func theStalenessCapIsConfigurable() async throws {
        let down = Locked(false)
        let transport = RecordingTransport { _, _ in
            down.withLock { $0 } ? jsonResponse(500, #"{"error":"server_error"}"#) : Self.keySetResponse([TestIssuer.ecKey])
        }
        let policy = JWKSCache.Policy(minimumLifetime: 60, maximumLifetime: 60, defaultLifetime: 60, minimumRefetchInterval: 10, maximumStaleness: 600)
        let verifier = TestIssuer.verifier(keys: try keySource(transport, policy: policy), date: date)
        _ = try await verifier.verify(TestIssuer.token())
        down.withLock { $0 = true }
        date.advance(by: 600)  // ten minutes after the last fetch that succeeded: still used
        #expect(try await verifier.verify(TestIssuer.token(at: date.now)).subject == "user-1")
        date.advance(by: 1)
        let error = await refusal { () async throws(AccessTokenError) in try await verifier.verify(TestIssuer.token(at: date.now)) }
        #expect(error?.code == .temporarilyUnavailable)
        #expect(error?.reason == .unavailable)
    }

    @Test func cachedKeysStillVerifyWithoutWaitingWhileTheEndpointHangs() async throws {
        let gate = Gate()
        defer { gate.open() }
        let hanging = Locked(false)
        let transport = RecordingTransport { _, _ in
            if hanging.withLock({ $0 }) { await gate.pass() }
            return Self.keySetResponse([TestIssuer.ecKey])
        }
        // A deadline of an hour on the real clock: a check that waited for the endpoint
        // would outlast the test's time limit.
        var verifier = AccessTokenVerifier(
            issuers: [TrustedIssuer(issuer: TestIssuer.issuer, audiences: [TestIssuer.audience], keys: try keySource(transport))],
            keyFetchDeadline: .seconds(3600))
        verifier.now = date.function
        _ = try await verifier.verify(TestIssuer.token())
        hanging.withLock { $0 = true }
        date.advance(by: 600)
        #expect(try await verifier.verify(TestIssuer.token(at: date.now)).subject == "user-1")
        // The background refresh is hanging at the endpoint; the check did not wait for it.
        await gate.arrived()
    }

    @Test func noKeysYetAndTheEndpointDownIsTemporarilyUnavailable() async throws {
        let transport = RecordingTransport { _, _ in jsonResponse(500, "{}") }
        let verifier = TestIssuer.verifier(keys: try keySource(transport), date: date)
        let error = await refusal { () async throws(AccessTokenError) in try await verifier.verify(TestIssuer.token()) }
        #expect(error?.code == .temporarilyUnavailable)
        #expect(error?.status == .serviceUnavailable)
    }

    @Test func noKeysYetAndTheEndpointHangingFailsAtTheDeadline() async throws {
        let gate = Gate()
        defer { gate.open() }
        let transport = RecordingTransport { _, _ in
            await gate.pass()
            return Self.keySetResponse([TestIssuer.ecKey])
        }
        let clock = InstantClock()
        let verifier = TestIssuer.verifier(keys: try keySource(transport), date: date, clock: PipelineClock(clock))
        let error = await refusal { () async throws(AccessTokenError) in try await verifier.verify(TestIssuer.token()) }
        #expect(error?.code == .temporarilyUnavailable)
        #expect(clock.sleeps == [verifier.keyFetchDeadline])
    }

    @Test func refusesAJWKSURLThatIsNotHTTPS() {
        #expect(throws: OAuth2Error.self) {
            _ = try TrustedIssuer.KeySource.jwks(URL(string: "http://id.example.com/jwks")!, environment: HTTPEnvironment(transport: RecordingTransport { _, _ in jsonResponse(200, "{}") }))
        }
    }
}
