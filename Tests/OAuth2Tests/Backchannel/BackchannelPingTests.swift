import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// OpenID Connect CIBA Core §7.1, §10.2: ping mode. The request carries a
/// `client_notification_token` the inbox knows; the inbox accepts only the server's ping
/// for a pending request (bearer token in constant time, bounded strict JSON body, the
/// request's `auth_req_id`); the wait asks for the tokens once per ping, reusing polling's
/// answer handling and CIBA's ID token rules. No socket: a recording transport answers.
@Suite struct BackchannelPingTests {
    typealias Polling = BackchannelPollingTests
    static let authReqID = Polling.authReqID
    static let token = "cnt-0123456789abcdefghijklmnopqrstuvwxyz"

    /// A transport that accepts the backchannel authentication request (`expires_in` 600, no
    /// interval, as Glewlwyd answers in ping mode), serves the JWK set, and answers the
    /// token endpoint with `answers` in turn (the last one repeats).
    static func transport(_ answers: [(Int, String)], acceptedStatus: Int = 200) -> StubTransport {
        let index = PollCounter()
        return StubTransport { request, _ in
            if request.url == Polling.jwksURI { return response(200, #"{"keys":[\#(JSONValue.object(Polling.key.publicKey!.jsonObject))]}"#) }
            if request.url?.path == "/bc-authorize" {
                return acceptedStatus == 200
                    ? response(200, #"{"auth_req_id":"\#(authReqID)","expires_in":600}"#)
                    : response(acceptedStatus, #"{"error":"invalid_request"}"#)
            }
            let answer = answers[min(index.next(), answers.count - 1)]
            return response(answer.0, answer.1)
        }
    }

    static func client(_ transport: StubTransport) throws -> OAuth2Client {
        try Fixtures.client(transport, metadata: Polling.metadata, configuration: Fixtures.configuration(method: .clientSecretBasic))
    }

    static let request = BackchannelAuthenticationRequest(hint: .loginHint("alice"), bindingMessage: "W4SCT")

    /// A ping's head: POST, the bearer token, JSON.
    static func ping(token: String? = token, method: HTTPRequest.Method = .post, contentType: String? = "application/json") -> HTTPRequest {
        var fields: HTTPFields = [:]
        if let token { fields[.authorization] = "Bearer \(token)" }
        if let contentType { fields[.contentType] = contentType }
        return HTTPRequest(method: method, scheme: "https", authority: "client.example.com", path: "/ciba/ping", headerFields: fields)
    }

    static func body(_ id: String = authReqID) -> [UInt8] { Array(#"{"auth_req_id":"\#(id)"}"#.utf8) }

    /// An inbox holding one started request with ``token`` and ``authReqID``.
    static func inbox(now: @escaping @Sendable () -> Date = { Date() }) -> BackchannelPingInbox {
        let inbox = BackchannelPingInbox(now: now)
        try! inbox.register(token: token, until: Date().addingTimeInterval(600))
        inbox.started(token: token, authenticationRequestID: authReqID, expiresAt: Date().addingTimeInterval(600))
        return inbox
    }

    static func refusal(_ inbox: BackchannelPingInbox, _ request: HTTPRequest, body: [UInt8] = body()) -> BackchannelPingError? {
        do {
            try inbox.receive(request, body: body)
            return nil
        } catch {
            return error
        }
    }

    // MARK: The request (CIBA Core §7.1)

    @Test func theRequestCarriesAFreshRandomNotificationTokenTheInboxKnows() async throws {
        let transport = Self.transport([])
        let inbox = BackchannelPingInbox()
        let client = try Self.client(transport)
        let first = try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox)
        let second = try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox)
        let sent = transport.sent.filter { $0.request.url?.path == "/bc-authorize" }.map(\.form)
        #expect(sent.count == 2)
        let token = try #require(sent.first?["client_notification_token"])
        #expect(token.count == 43, "32 bytes of the CSPRNG, base64url")
        #expect(BackchannelPingInbox.isToken(token))
        #expect(sent.last?["client_notification_token"] != token, "each request has its own")
        #expect(first.clientNotificationToken == token && second.clientNotificationToken == sent.last?["client_notification_token"])
        #expect(first.authenticationRequestID == Self.authReqID && first.interval == 5, "no interval in ping mode: 5 s")
        #expect(inbox.pendingCount == 2)
        #expect(!first.description.contains(token), "the token is a secret")
    }

    @Test func theCallersOwnTokenIsSentAndAMalformedOrReusedOneIsRefusedBeforeSending() async throws {
        let transport = Self.transport([])
        let inbox = BackchannelPingInbox()
        let client = try Self.client(transport)
        var request = Self.request
        request.clientNotificationToken = Self.token
        let started = try await client.startBackchannelAuthentication(request, pingInbox: inbox)
        #expect(transport.sent.first?.form["client_notification_token"] == Self.token)
        #expect(started.clientNotificationToken == Self.token)
        let reused = await Polling.failure { _ = try await client.startBackchannelAuthentication(request, pingInbox: inbox) }
        #expect(reused?.code == .invalidConfiguration)
        for bad in ["short-token", String(repeating: "a", count: 1025), "has space in it 0123456789", "tok=en0123456789012345678", "Ã©t\u{e9}0123456789012345678"] {
            request.clientNotificationToken = bad
            let error = await Polling.failure { _ = try await client.startBackchannelAuthentication(request, pingInbox: inbox) }
            #expect(error?.code == .invalidConfiguration, "\(bad.count) characters")
            #expect(error.map { !$0.description.contains(bad) } == true, "the token is not in the message")
        }
        #expect(transport.sent.count == 1, "nothing sent for a refused token")
        #expect(inbox.pendingCount == 1)
    }

    @Test func aFullInboxRefusesBeforeSendingAndARefusedRequestLeavesNothingPending() async throws {
        let transport = Self.transport([])
        let inbox = BackchannelPingInbox(capacity: 1)
        let client = try Self.client(transport)
        let first = try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox)
        let full = await Polling.failure { _ = try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox) }
        #expect(full?.code == .temporarilyUnavailable)
        #expect(transport.sent.count == 1)
        inbox.remove(token: try #require(first.clientNotificationToken))
        let refused = try Self.client(Self.transport([], acceptedStatus: 400))
        let error = await Polling.failure { _ = try await refused.startBackchannelAuthentication(Self.request, pingInbox: inbox) }
        #expect(error?.code == .invalidRequest)
        #expect(inbox.pendingCount == 0, "the refused request's token was forgotten")
    }

    @Test func expiredRequestsMakeRoomAndTheirPingsAreUnknown() throws {
        let clock = ManualNow()
        let inbox = BackchannelPingInbox(capacity: 1, now: { clock.now })
        try inbox.register(token: Self.token, until: clock.now.addingTimeInterval(60))
        inbox.started(token: Self.token, authenticationRequestID: Self.authReqID, expiresAt: clock.now.addingTimeInterval(60))
        clock.now = clock.now.addingTimeInterval(61)
        #expect(Self.refusal(inbox, Self.ping())?.reason == .unknownToken)
        try inbox.register(token: "other-0123456789abcdefghijklmn", until: clock.now.addingTimeInterval(60))
        #expect(inbox.pendingCount == 1, "the expired request made room")
    }

    // MARK: The ping (CIBA Core §10.2)

    @Test func aPingWithThePendingRequestsTokenAndIDIsAccepted() throws {
        let inbox = Self.inbox()
        #expect(Self.refusal(inbox, Self.ping()) == nil)
        #expect(Self.refusal(inbox, Self.ping(contentType: "Application/JSON; charset=utf-8"), body: Array(#" {"auth_req_id":"\#(Self.authReqID)","extra":[1]} "#.utf8)) == nil)
        let lowercaseScheme = HTTPRequest(
            method: .post, scheme: "https", authority: "c", path: "/",
            headerFields: [.authorization: "bearer \(Self.token)", .contentType: "application/json"])
        #expect(Self.refusal(inbox, lowercaseScheme) == nil, "the scheme is case-insensitive")
    }

    @Test func anUnauthenticatedPingIs401AndItsBodyIsNeverRead() throws {
        let inbox = Self.inbox()
        let cases: [(String?, BackchannelPingError.Reason)] = [
            (nil, .missingToken), ("Basic YWxpY2U6c2VjcmV0", .missingToken), ("Bearer", .missingToken),
            ("Bearer cnt-0123456789abcdefghijklmnopqrstuvwxyZ", .unknownToken),   // one letter differs
            ("Bearer cnt-0123456789abcdefghijklmnopqrstuvwxy", .unknownToken),    // a prefix
            ("Bearer short", .unknownToken), ("Bearer \(Self.token) x", .unknownToken),
            ("Bearer " + String(repeating: "a", count: 4000), .missingToken),
        ]
        for (authorization, reason) in cases {
            var fields: HTTPFields = [.contentType: "application/json"]
            if let authorization { fields[.authorization] = authorization }
            let body = CountingBody(Self.body())
            do {
                try inbox.receive(HTTPRequest(method: .post, scheme: "https", authority: "c", path: "/", headerFields: fields), body: body)
                Issue.record("accepted \(authorization ?? "no authorization")")
            } catch {
                #expect(error.reason == reason)
                #expect(error.status == .unauthorized)
                #expect(error.challenge == (reason == .missingToken ? "Bearer" : #"Bearer error="invalid_token""#))
                #expect(!error.description.contains(Self.token) && !error.description.contains(Self.authReqID))
            }
            #expect(body.reads == 0, "the body of an unauthenticated caller is not read")
        }
    }

    @Test func theMethodComesFirst() throws {
        let error = Self.refusal(Self.inbox(), Self.ping(method: .get))
        #expect(error?.reason == .methodNotAllowed && error?.status == .methodNotAllowed)
    }

    @Test(arguments: [
        (#"{"auth_req_id":"1c266114-a1be-4252-8ad1-04986c5b9ac1"}"#, "text/plain" as String?, BackchannelPingError.Reason.unsupportedMediaType),
        (#"{"auth_req_id":"1c266114-a1be-4252-8ad1-04986c5b9ac1"}"#, nil, .unsupportedMediaType),
        ("auth_req_id=1c266114", "application/json", .malformedRequest),
        (#"{"auth_req_id":"a","auth_req_id":"b"}"#, "application/json", .malformedRequest),
        (#"{"auth_req_id":"a"} {}"#, "application/json", .malformedRequest),
        (#"{"auth_req_id":42}"#, "application/json", .malformedRequest),
        (#"{"auth_req_id":""}"#, "application/json", .malformedRequest),
        (#"["auth_req_id"]"#, "application/json", .malformedRequest),
        (#"{}"#, "application/json", .malformedRequest),
        (#"{"auth_req_id":"another-request"}"#, "application/json", .unknownRequest),
    ])
    func anAuthenticatedPingMustBeStrictJSONNamingItsRequest(body: String, contentType: String?, reason: BackchannelPingError.Reason) throws {
        let inbox = Self.inbox()
        let error = Self.refusal(inbox, Self.ping(contentType: contentType), body: Array(body.utf8))
        #expect(error?.reason == reason)
        #expect(error?.status == (reason == .unsupportedMediaType ? .unsupportedMediaType : .badRequest))
        #expect(error.map { !$0.description.contains(Self.token) && !$0.description.contains("another-request") } == true)
    }

    @Test func aBodyOverTheLimitIsRefusedAfterReadingOnlyTheLimit() throws {
        let body = CountingBody(Array(repeating: UInt8(ascii: " "), count: 1_000_000))
        do {
            try Self.inbox().receive(Self.ping(), body: body)
            Issue.record("a huge body was accepted")
        } catch {
            #expect(error.reason == .bodyTooLarge && error.status == .contentTooLarge)
        }
        #expect(body.reads <= BackchannelPingInbox.maximumBodySize + 1)
    }

    @Test func aPingBeforeTheServersAnswerWasReadCountsOnlyForThatRequest() throws {
        let inbox = BackchannelPingInbox()
        try inbox.register(token: Self.token, until: Date().addingTimeInterval(600))
        try inbox.receive(Self.ping(), body: Self.body())
        #expect(!inbox.isPinged(token: Self.token), "not before the request's auth_req_id is known")
        inbox.started(token: Self.token, authenticationRequestID: Self.authReqID, expiresAt: Date().addingTimeInterval(600))
        #expect(inbox.isPinged(token: Self.token), "the early ping named this request")

        let other = "other-0123456789abcdefghijklmn"
        try inbox.register(token: other, until: Date().addingTimeInterval(600))
        try inbox.receive(Self.ping(token: other), body: Self.body("not-the-one"))
        inbox.started(token: other, authenticationRequestID: "the-one", expiresAt: Date().addingTimeInterval(600))
        #expect(!inbox.isPinged(token: other), "the early ping named another request")
    }

    // MARK: Waiting (CIBA Core §10.2, §10.3, §11)

    @Test(.timeLimit(.minutes(1)))
    func aPingEndsTheWaitWithOneTokenRequestAndVerifiedTokens() async throws {
        let transport = Self.transport([Polling.tokens(idToken: try Polling.idToken(["urn:openid:params:jwt:claim:auth_req_id": .string(Self.authReqID)]))])
        let inbox = BackchannelPingInbox()
        let client = try Self.client(transport)
        let authentication = try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox)
        let token = try #require(authentication.clientNotificationToken)
        let clock = ImmediateClock(horizon: .zero)
        let wait = Task { try await client.waitForBackchannelPing(authentication, inbox: inbox, clock: clock, fallbackPollInterval: nil) }
        while clock.sleeps.isEmpty { await Task.yield() }
        #expect(Polling.tokenRequests(transport).isEmpty, "no poll before the ping")
        try inbox.receive(Self.ping(token: token), body: Self.body())
        let tokens = try await wait.value
        #expect(tokens.accessToken == "at-ciba" && tokens.idTokenClaims?.subject == "alice-sub")
        let requests = Polling.tokenRequests(transport)
        #expect(requests.map(\.form) == [["grant_type": "urn:openid:params:grant-type:ciba", "auth_req_id": Self.authReqID]])
        #expect(inbox.pendingCount == 0, "the request left the inbox")
        #expect(Self.refusal(inbox, Self.ping(token: token))?.reason == .unknownToken, "a late ping is unknown")
    }

    @Test(.timeLimit(.minutes(1)))
    func pendingAfterAPingWaitsForTheNextOneAndDenialEndsIt() async throws {
        let transport = Self.transport([Polling.pending, (400, #"{"error":"access_denied"}"#)])
        let inbox = BackchannelPingInbox()
        let client = try Self.client(transport)
        let authentication = try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox)
        let token = try #require(authentication.clientNotificationToken)
        try inbox.receive(Self.ping(token: token), body: Self.body())   // before the wait: kept for it
        let clock = ImmediateClock(horizon: .zero)
        let events = EventLog()
        let wait = Task { try await client.waitForBackchannelPing(authentication, inbox: inbox, clock: clock, fallbackPollInterval: nil) { events.append($0) } }
        while !events.all.contains(.authorizationPending(attempt: 1)) { await Task.yield() }
        #expect(Polling.tokenRequests(transport).count == 1)
        try inbox.receive(Self.ping(token: token), body: Self.body())
        let error = await Polling.failure { _ = try await wait.value }
        #expect(error?.code == .accessDenied)
        #expect(Polling.tokenRequests(transport).count == 2)
        #expect(error.map { !$0.description.contains(Self.authReqID) && !$0.description.contains(token) } == true)
    }

    @Test func theAnswerToAPingPassesCIBAsIDTokenChecks() async throws {
        let transport = Self.transport([Polling.tokens(idToken: try Polling.idToken(["urn:openid:params:jwt:claim:auth_req_id": "another-request"]))])
        let inbox = BackchannelPingInbox()
        let client = try Self.client(transport)
        let authentication = try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox)
        try inbox.receive(Self.ping(token: authentication.clientNotificationToken), body: Self.body())
        let error = await Polling.failure {
            _ = try await client.waitForBackchannelPing(authentication, inbox: inbox, clock: ImmediateClock(horizon: .zero), fallbackPollInterval: nil)
        }
        #expect(error?.code == .invalidIDToken)
    }

    @Test func withoutAPingOrFallbackTheWaitEndsAtTheRequestsExpiryWithoutARequest() async throws {
        let transport = Self.transport([Polling.pending])
        let inbox = BackchannelPingInbox()
        let client = try Self.client(transport)
        let authentication = try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox)
        let clock = ImmediateClock()
        let longest = Duration.seconds(authentication.expiresAt.timeIntervalSinceNow)
        let error = await Polling.failure {
            _ = try await client.waitForBackchannelPing(authentication, inbox: inbox, clock: clock, fallbackPollInterval: nil)
        }
        let shortest = Duration.seconds(authentication.expiresAt.timeIntervalSinceNow)
        #expect(error?.code == .expiredToken && error?.source == .client)
        #expect(Polling.tokenRequests(transport).isEmpty)
        #expect(clock.sleeps.count == 1, "one wait: the request's remaining lifetime")
        #expect(clock.sleeps.allSatisfy { $0 >= shortest && $0 <= longest })
        #expect(inbox.pendingCount == 0)
    }

    @Test func withoutAPingTheWaitPollsAtTheFallbackIntervalNeverBelowTheRequestsInterval() async throws {
        let idToken = try Polling.idToken()
        let transport = Self.transport([Polling.pending, Polling.pending, Polling.tokens(idToken: idToken)])
        let inbox = BackchannelPingInbox()
        let client = try Self.client(transport)
        let clock = ImmediateClock()
        let tokens = try await client.waitForBackchannelPing(
            try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox), inbox: inbox, clock: clock, fallbackPollInterval: 30)
        #expect(tokens.accessToken == "at-ciba")
        #expect(clock.sleeps == [.seconds(30), .seconds(30), .seconds(30)])

        let fast = ImmediateClock()
        let again = Self.transport([Polling.tokens(idToken: idToken)])
        let other = try Self.client(again)
        _ = try await other.waitForBackchannelPing(
            try await other.startBackchannelAuthentication(Self.request, pingInbox: inbox), inbox: inbox, clock: fast, fallbackPollInterval: 1)
        #expect(fast.sleeps == [.seconds(5)], "the request's interval (5 s by default) is the least")
    }

    @Test func aTransientFailureAfterAPingIsRetriedWithoutWaitingForAnotherPing() async throws {
        let transport = Self.transport([(503, ""), Polling.tokens(idToken: try Polling.idToken())])
        let inbox = BackchannelPingInbox()
        let client = try Self.client(transport)
        let authentication = try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox)
        try inbox.receive(Self.ping(token: authentication.clientNotificationToken), body: Self.body())
        let clock = ImmediateClock(horizon: .seconds(60))
        let tokens = try await client.waitForBackchannelPing(authentication, inbox: inbox, clock: clock, fallbackPollInterval: nil)
        #expect(tokens.accessToken == "at-ciba")
        #expect(Polling.tokenRequests(transport).count == 2)
        #expect(clock.sleeps.last == .seconds(10), "backed off: twice the 5 s interval")
    }

    @Test func aRequestNotStartedWithTheInboxCannotBeWaitedFor() async throws {
        let client = try Self.client(Self.transport([]))
        let error = await Polling.failure {
            _ = try await client.waitForBackchannelPing(Polling.authentication(), inbox: BackchannelPingInbox(), clock: ImmediateClock())
        }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellingTheWaitEndsItAndForgetsTheRequest() async throws {
        let transport = Self.transport([Polling.pending])
        let inbox = BackchannelPingInbox()
        let client = try Self.client(transport)
        let authentication = try await client.startBackchannelAuthentication(Self.request, pingInbox: inbox)
        let clock = ImmediateClock(horizon: .zero)
        let wait = Task { try await client.waitForBackchannelPing(authentication, inbox: inbox, clock: clock) }
        while clock.sleeps.isEmpty { await Task.yield() }
        wait.cancel()
        let error = await Polling.failure { _ = try await wait.value }
        #expect(error?.code == .cancelled)
        #expect(inbox.pendingCount == 0)
        #expect(Polling.tokenRequests(transport).isEmpty)
    }
}

/// A body that counts the bytes read from it.
final class CountingBody: Sequence, @unchecked Sendable {
    private let bytes: [UInt8]
    private let lock = NSLock()
    private var count = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var reads: Int { lock.withLock { count } }

    func makeIterator() -> AnyIterator<UInt8> {
        var iterator = bytes.makeIterator()
        return AnyIterator {
            guard let byte = iterator.next() else { return nil }
            self.lock.withLock { self.count += 1 }
            return byte
        }
    }
}

/// A date the test moves.
final class ManualNow: @unchecked Sendable {
    private let lock = NSLock()
    private var value = Date()
    var now: Date {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
