import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// OpenID Connect CIBA Core §7.3, §10, §11: polling the token endpoint with an
/// `auth_req_id` on a clock that does not wait, and the ID token rules CIBA adds. A
/// recording transport answers the token endpoint and serves the JWK set.
@Suite struct BackchannelPollingTests {
    static let key = try! JWSSigningKey.generate(.es256, keyID: "k")
    static let jwksURI = URL(string: "https://as.example.com/jwks")!
    static let authReqID = "auth-req-secret-0123456789"
    static let metadata = ServerMetadata(
        issuer: URL(string: Fixtures.issuer)!,
        tokenEndpoint: URL(string: "https://as.example.com/token")!,
        jwksURI: jwksURI,
        additionalFields: [
            "id_token_signing_alg_values_supported": ["ES256"],
            "backchannel_authentication_endpoint": "https://as.example.com/bc-authorize",
        ])

    static func authentication(interval: TimeInterval = 5, expiresIn: TimeInterval = 600, expectedSubject: String? = nil) -> BackchannelAuthentication {
        BackchannelAuthentication(
            authenticationRequestID: authReqID, expiresAt: Date().addingTimeInterval(expiresIn), interval: interval,
            scopes: ["openid", "read"], bindingMessage: "W4SCT", expectedSubject: expectedSubject)
    }

    /// An ID token of the fixture's issuer, with `extra` claims.
    static func idToken(subject: String = "alice-sub", _ extra: [String: JSONValue] = [:]) throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(Fixtures.issuer), "sub": .string(subject), "aud": "client-1", "exp": .integer(now + 300), "iat": .integer(now),
        ]
        claims.merge(extra) { _, new in new }
        return try key.sign(claims: claims)
    }

    static func tokens(idToken: String?, refreshToken: String = "rt-ciba") -> (Int, String) {
        var members = [#""access_token":"at-ciba","token_type":"Bearer","expires_in":3600,"refresh_token":"\#(refreshToken)""#]
        if let idToken { members.append(#""id_token":"\#(idToken)""#) }
        return (200, "{" + members.joined(separator: ",") + "}")
    }

    /// A transport serving the JWK set and answering the token endpoint with `answers` in
    /// turn (the last one repeats).
    static func transport(_ answers: [(Int, String)]) -> StubTransport {
        let index = PollCounter()
        return StubTransport { request, _ in
            if request.url == jwksURI { return response(200, #"{"keys":[\#(JSONValue.object(key.publicKey!.jsonObject))]}"#) }
            let answer = answers[min(index.next(), answers.count - 1)]
            return response(answer.0, answer.1)
        }
    }

    static let pending = (400, #"{"error":"authorization_pending"}"#)
    static let slowDown = (400, #"{"error":"slow_down"}"#)

    static func tokenRequests(_ transport: StubTransport) -> [StubTransport.Sent] {
        transport.sent.filter { $0.request.url?.path == "/token" }
    }

    static func failure(_ body: () async throws -> Void) async -> OAuth2Error? {
        do { try await body(); return nil } catch { return error as? OAuth2Error }
    }

    @Test func pendingKeepsPollingAtTheIntervalWithTheCIBAGrant() async throws {
        let transport = Self.transport([Self.pending, Self.pending, Self.tokens(idToken: try Self.idToken())])
        let clock = ImmediateClock()
        let events = EventLog()
        let client = try Fixtures.client(transport, metadata: Self.metadata, configuration: Fixtures.configuration(method: .clientSecretBasic))
        let tokens = try await client.pollBackchannelToken(Self.authentication(interval: 5), clock: clock) { events.append($0) }
        #expect(tokens.accessToken == "at-ciba")
        #expect(tokens.idTokenClaims?.subject == "alice-sub")
        #expect(tokens.scopes == ["openid", "read"], "the scopes asked for, as the response names none")
        #expect(clock.sleeps == [.seconds(5), .seconds(5), .seconds(5)], "the first poll waits an interval too")
        let polls = Self.tokenRequests(transport)
        #expect(polls.count == 3)
        for poll in polls {
            #expect(poll.form == ["grant_type": "urn:openid:params:grant-type:ciba", "auth_req_id": Self.authReqID])
            #expect(poll.request.headerFields[.authorization]?.hasPrefix("Basic ") == true)
        }
        #expect(events.all == [
            .waiting(seconds: 5, attempt: 1), .authorizationPending(attempt: 1),
            .waiting(seconds: 5, attempt: 2), .authorizationPending(attempt: 2),
            .waiting(seconds: 5, attempt: 3),
        ])
    }

    @Test func slowDownAddsFiveSecondsForGood() async throws {
        let transport = Self.transport([Self.pending, Self.slowDown, Self.pending, Self.slowDown, Self.tokens(idToken: try Self.idToken())])
        let clock = ImmediateClock()
        let events = EventLog()
        _ = try await Fixtures.client(transport, metadata: Self.metadata)
            .pollBackchannelToken(Self.authentication(interval: 5), clock: clock) { events.append($0) }
        #expect(clock.sleeps == [.seconds(5), .seconds(5), .seconds(10), .seconds(10), .seconds(15)])
        #expect(events.all.contains(.slowDown(interval: 10)))
        #expect(events.all.contains(.slowDown(interval: 15)))
    }

    @Test(arguments: [
        ((400, #"{"error":"access_denied","error_description":"The user said no"}"#), OAuth2Error.Code.accessDenied),
        ((400, #"{"error":"expired_token"}"#), .expiredToken),
        ((400, #"{"error":"invalid_grant"}"#), .invalidGrant),
        ((403, #"{"error":"unauthorized_client"}"#), .unauthorizedClient),
        ((401, ""), .invalidClient),
    ])
    func aFinalAnswerEndsPollingWithItsTypedError(answer: (Int, String), code: OAuth2Error.Code) async throws {
        let transport = Self.transport([Self.pending, answer])
        let error = await Self.failure {
            _ = try await Fixtures.client(transport, metadata: Self.metadata).pollBackchannelToken(Self.authentication(), clock: ImmediateClock())
        }
        #expect(error?.code == code)
        #expect(error?.source == .server)
        #expect(error.map { !$0.description.contains(Self.authReqID) } == true, "no message names the auth_req_id")
        #expect(Self.tokenRequests(transport).count == 2, "no poll after a final answer")
    }

    @Test func theRequestsOwnExpiryEndsPollingWithoutAnotherRequest() async throws {
        // 12 s of life, 5 s apart: polls at 5 and 10; a poll at 15 would be too late.
        let transport = Self.transport([Self.pending])
        let clock = ImmediateClock()
        let error = await Self.failure {
            _ = try await Fixtures.client(transport, metadata: Self.metadata)
                .pollBackchannelToken(Self.authentication(interval: 5, expiresIn: 12), clock: clock)
        }
        #expect(error?.code == .expiredToken)
        #expect(error?.source == .client)
        #expect(Self.tokenRequests(transport).count == 2)
        #expect(clock.elapsed > .seconds(11) && clock.elapsed <= .seconds(12), "waited out the request's lifetime: \(clock.elapsed)")
    }

    @Test func transientFailuresBackOffAndPollingGoesOn() async throws {
        let transport = Self.transport([(503, ""), Self.pending, Self.tokens(idToken: try Self.idToken())])
        let clock = ImmediateClock()
        _ = try await Fixtures.client(transport, metadata: Self.metadata).pollBackchannelToken(Self.authentication(interval: 5), clock: clock)
        #expect(clock.sleeps == [.seconds(5), .seconds(10), .seconds(10)])
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellationEndsPollingPromptly() async throws {
        let clock = ImmediateClock(horizon: .zero)
        let transport = Self.transport([Self.pending])
        let client = try Fixtures.client(transport, metadata: Self.metadata)
        let task = Task { try await client.pollBackchannelToken(Self.authentication(), clock: clock) }
        while clock.sleeps.isEmpty { await Task.yield() }
        task.cancel()
        let error = await Self.failure { _ = try await task.value }
        #expect(error?.code == .cancelled)
        #expect(transport.sent.isEmpty)
    }

    // MARK: The ID token (CIBA Core §7.1, §10.1.1, §10.3.1)

    @Test func anIDTokenNamingThisRequestAndHashingTheRefreshTokenIsAccepted() async throws {
        let rtHash = try #require(JWSAlgorithm.es256.halfHash(of: "rt-ciba"))
        let atHash = try #require(JWSAlgorithm.es256.halfHash(of: "at-ciba"))
        let idToken = try Self.idToken([
            "urn:openid:params:jwt:claim:auth_req_id": .string(Self.authReqID),
            "urn:openid:params:jwt:claim:rt_hash": .string(rtHash), "at_hash": .string(atHash),
        ])
        let tokens = try await Fixtures.client(Self.transport([Self.tokens(idToken: idToken)]), metadata: Self.metadata)
            .pollBackchannelToken(Self.authentication(), clock: ImmediateClock())
        #expect(tokens.refreshToken == "rt-ciba")
    }

    @Test(arguments: [
        ("an auth_req_id claim of another request", ["urn:openid:params:jwt:claim:auth_req_id": JSONValue.string("another-request")]),
        ("an auth_req_id claim that is not a string", ["urn:openid:params:jwt:claim:auth_req_id": JSONValue.integer(1)]),
        ("an rt_hash of another refresh token", ["urn:openid:params:jwt:claim:rt_hash": JSONValue.string("AAAAAAAAAAAAAAAAAAAAAA")]),
        ("an at_hash of another access token", ["at_hash": JSONValue.string("AAAAAAAAAAAAAAAAAAAAAA")]),
        ("another issuer", ["iss": JSONValue.string("https://evil.example.com")]),
    ])
    func anIDTokenBreakingARuleIsRefusedAndNoTokenReturned(rule: String, claims: [String: JSONValue]) async throws {
        let transport = Self.transport([Self.tokens(idToken: try Self.idToken(claims))])
        let error = await Self.failure {
            _ = try await Fixtures.client(transport, metadata: Self.metadata).pollBackchannelToken(Self.authentication(), clock: ImmediateClock())
        }
        #expect(error?.code == .invalidIDToken, "\(rule)")
        #expect(error.map { !$0.description.contains(Self.authReqID) && !$0.description.contains("rt-ciba") } == true)
    }

    @Test func afterAnIDTokenHintTheIDTokenMustNameItsSubject() async throws {
        let other = await Self.failure {
            _ = try await Fixtures.client(Self.transport([Self.tokens(idToken: try Self.idToken(subject: "mallory"))]), metadata: Self.metadata)
                .pollBackchannelToken(Self.authentication(expectedSubject: "alice-sub"), clock: ImmediateClock())
        }
        #expect(other?.code == .invalidIDToken)
        let same = try await Fixtures.client(Self.transport([Self.tokens(idToken: try Self.idToken(subject: "alice-sub"))]), metadata: Self.metadata)
            .pollBackchannelToken(Self.authentication(expectedSubject: "alice-sub"), clock: ImmediateClock())
        #expect(same.idTokenClaims?.subject == "alice-sub")
    }

    @Test func anAnswerWithoutAnIDTokenIsRefused() async throws {
        let error = await Self.failure {
            _ = try await Fixtures.client(Self.transport([Self.tokens(idToken: nil)]), metadata: Self.metadata)
                .pollBackchannelToken(Self.authentication(), clock: ImmediateClock())
        }
        #expect(error?.code == .invalidIDToken)
    }

    @Test func theGrantSentAloneIsTheCIBAGrant() {
        let grant = Grant.ciba(authenticationRequestID: Self.authReqID)
        #expect(grant.type == "urn:openid:params:grant-type:ciba")
        #expect(grant.parameters.map(\.0) == ["auth_req_id"])
        #expect(!grant.description.contains(Self.authReqID))
    }
}
