import Foundation
import HTTPTypes
import OAuth2Internals
import Testing
@testable import OAuth2

/// Every exchange has one total deadline (connection, headers, body, retries): past it the
/// caller gets a transient timeout and the transport's work is cancelled. Measured on an
/// injected clock: nothing here waits for real time.
@Suite struct DeadlineTests {
    /// A transport that never answers: it waits until cancelled, and counts the cancellations.
    final class Silent: HTTPTransport, @unchecked Sendable {
        private let lock = NSLock()
        private var _cancelled = 0
        var cancelled: Int { lock.withLock { _cancelled } }

        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            do {
                while true { try await Task.sleep(for: .seconds(3600)) }
            } catch {
                lock.withLock { _cancelled += 1 }
                throw error
            }
        }
    }

    /// A client sending through `transport` in an environment `configure` changed, its
    /// deadlines and back-offs measured on `clock`.
    static func client(
        _ transport: any HTTPTransport, clock: ImmediateClock, configure: (inout HTTPEnvironment) -> Void = { _ in }
    ) throws -> OAuth2Client {
        var environment = HTTPEnvironment(transport: transport, logger: .init(label: "test"), userAgent: "t")
        configure(&environment)
        var pipeline = environment.pipeline()
        pipeline.clock = PipelineClock(clock)
        let configuration = Fixtures.configuration()
        return try OAuth2Client(
            metadata: Fixtures.metadata, configuration: configuration, pipeline: pipeline.configured(by: configuration), now: { Date() })
    }

    @Test func theDefaultDeadlineIsThirtySecondsAndEndsAnExchangeThatNeverAnswers() async throws {
        let clock = ImmediateClock()
        let transport = Silent()
        let client = try Self.client(transport, clock: clock)
        #expect(HTTPEnvironment(transport: transport).requestDeadline == .seconds(30))
        await #expect {
            _ = try await client.clientCredentials()
        } throws: { error in
            guard let error = error as? OAuth2Error else { return false }
            return error.code == .timeout && error.source == .transport && error.isTransient
                && error.message?.contains("30 s") == true && error.deadline == .seconds(30)
        }
        #expect(clock.sleeps == [.seconds(30)])
        #expect(transport.cancelled == 1)  // the transport's work was cancelled, not left running
    }

    @Test func theEnvironmentSetsTheDeadline() async throws {
        let clock = ImmediateClock()
        let client = try Self.client(Silent(), clock: clock) { $0.requestDeadline = .seconds(7) }
        await #expect {
            _ = try await client.clientCredentials()
        } throws: { error in
            (error as? OAuth2Error)?.deadline == .seconds(7)
        }
        #expect(clock.sleeps == [.seconds(7)])
    }

    @Test func aClientWithAnotherConfigurationKeepsItsEnvironmentsDeadline() async throws {
        let clock = ImmediateClock()
        let client = try Self.client(Silent(), clock: clock) { $0.requestDeadline = .seconds(3) }
        var configuration = client.configuration
        configuration.scopes = ["other"]
        let changed = try OAuth2Client(metadata: client.metadata, configuration: configuration, pipeline: client.pipeline.configured(by: configuration), now: { Date() })
        await #expect(throws: OAuth2Error.self) { _ = try await changed.clientCredentials() }
        #expect(clock.sleeps == [.seconds(3)])
    }

    @Test func anAnswerBeforeTheDeadlineIsReturned() async throws {
        let clock = ImmediateClock(horizon: .seconds(29))
        let client = try Self.client(StubTransport(json: #"{"access_token":"at","token_type":"Bearer"}"#), clock: clock)
        let tokens = try await client.clientCredentials()
        #expect(tokens.accessToken == "at")
    }

    @Test func theCallersCancellationIsReportedAsCancellationNotTimeout() async throws {
        let clock = ImmediateClock(horizon: .seconds(29))
        let client = try Self.client(Silent(), clock: clock)
        let task = Task { try await client.clientCredentials() }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        await #expect {
            _ = try await task.value
        } throws: { error in
            (error as? OAuth2Error)?.code == .cancelled
        }
    }
}

/// Exchanges that are safe to repeat (discovery, JWK set, UserInfo, introspection) are
/// retried on transient failures, inside the deadline; token requests never are.
@Suite struct RetryPolicyTests {
    /// Answers from a list, one entry per request (the last one repeats).
    static func scripted(_ answers: [Result<(HTTPResponse, Data), OAuth2Error>]) -> StubTransport {
        let counter = Counter()
        return StubTransport { _, _ in
            let index = min(counter.next(), answers.count - 1)
            return try answers[index].get()
        }
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int { lock.withLock { defer { value += 1 }; return value } }
    }

    static let unavailable = response(503, #"{"error":"temporarily_unavailable"}"#)
    static let active = response(200, #"{"active":true,"scope":"read"}"#)
    static let reset = OAuth2Error(.network, source: .transport, message: "Connection reset by peer.")

    @Test func introspectionIsRepeatedAfterA503AndAReset() async throws {
        let clock = ImmediateClock(horizon: .seconds(29))
        let transport = Self.scripted([.success(Self.unavailable), .failure(Self.reset), .success(Self.active)])
        let client = try DeadlineTests.client(transport, clock: clock)
        let result = try await client.introspect("token-to-check")
        #expect(result.active)
        #expect(transport.sent.count == 3)
        // Two back-offs with full jitter: below 200 ms, then below 400 ms. The deadline's
        // own sleep (30 s) never ended.
        let backoffs = clock.sleeps.filter { $0 < .seconds(29) }
        #expect(backoffs.count == 2)
        #expect(backoffs[0] <= .milliseconds(200) && backoffs[1] <= .milliseconds(400))
    }

    @Test func retryAfterIsHonoured() async throws {
        let clock = ImmediateClock(horizon: .seconds(29))
        let transport = Self.scripted([.success(response(429, "", headers: [.retryAfter: "4"])), .success(Self.active)])
        let client = try DeadlineTests.client(transport, clock: clock)
        _ = try await client.introspect("token-to-check")
        #expect(clock.sleeps.contains(.seconds(4)))
        #expect(transport.sent.count == 2)
    }

    @Test func aRetryAfterBeyondTheDeadlineEndsTheRetriesWithTheServersAnswer() async throws {
        let clock = ImmediateClock(horizon: .seconds(29))
        let transport = Self.scripted([.success(response(503, #"{"error":"temporarily_unavailable"}"#, headers: [.retryAfter: "40"]))])
        let client = try DeadlineTests.client(transport, clock: clock) { $0.retryPolicy.maximumBackoff = .seconds(60) }
        await #expect {
            _ = try await client.introspect("token-to-check")
        } throws: { error in
            let error = error as? OAuth2Error
            return error?.isTransient == true && error?.retryAfter == 40
        }
        #expect(transport.sent.count == 1)
    }

    @Test func aTokenRequestIsNeverRepeated() async throws {
        let clock = ImmediateClock(horizon: .seconds(29))
        for answer in [Result<(HTTPResponse, Data), OAuth2Error>.success(Self.unavailable), .failure(Self.reset)] {
            let transport = Self.scripted([answer, .success(tokenResponse("at"))])
            let client = try DeadlineTests.client(transport, clock: clock) {
                $0.retryPolicy.kinds.insert(.token)  // asked for, still refused
            }
            await #expect {
                _ = try await client.refresh(expiredTokens())
            } throws: { error in
                (error as? OAuth2Error)?.isTransient == true
            }
            #expect(transport.sent.count == 1)
        }
    }

    @Test func tlsFailuresAndClientErrorsAreNotRepeated() async throws {
        let clock = ImmediateClock(horizon: .seconds(29))
        let tls = OAuth2Error(.tls, source: .transport, message: "certificate expired")
        for answer in [Result<(HTTPResponse, Data), OAuth2Error>.failure(tls), .success(response(500, #"{"error":"server_error"}"#)), .success(response(401, ""))] {
            let transport = Self.scripted([answer, .success(Self.active)])
            let client = try DeadlineTests.client(transport, clock: clock)
            await #expect(throws: OAuth2Error.self) { _ = try await client.introspect("token-to-check") }
            #expect(transport.sent.count == 1)
        }
    }

    @Test func attemptsAreBoundedAndRetriesCanBeTurnedOff() async throws {
        let clock = ImmediateClock(horizon: .seconds(29))
        let always = Self.scripted([.failure(Self.reset)])
        await #expect(throws: OAuth2Error.self) { _ = try await DeadlineTests.client(always, clock: clock).introspect("token-to-check") }
        #expect(always.sent.count == 3)

        let once = Self.scripted([.failure(Self.reset)])
        await #expect(throws: OAuth2Error.self) {
            _ = try await DeadlineTests.client(once, clock: clock) { $0.retryPolicy = .never }.introspect("token-to-check")
        }
        #expect(once.sent.count == 1)
    }

    @Test func whenTheDeadlineEndsTheRetriesTheLatestFailureIsReported() async throws {
        // The first attempt is reset; the deadline passes while the second is in flight:
        // the caller learns of the reset, not of a bare timeout, and the second attempt is
        // cancelled.
        let clock = ImmediateClock(horizon: .seconds(29))
        let counter = Self.Counter()
        let silent = DeadlineTests.Silent()
        let transport = StubTransport { request, body in
            if counter.next() == 0 { throw Self.reset }
            clock.passHorizon()  // the 30 s deadline passes now
            return try await silent.send(request, body: body)
        }
        let client = try DeadlineTests.client(transport, clock: clock)
        await #expect {
            _ = try await client.introspect("token-to-check")
        } throws: { error in
            (error as? OAuth2Error)?.code == .network
        }
        #expect(transport.sent.count == 2)
        #expect(silent.cancelled == 1, "the attempt in flight was cancelled")
    }

    @Test func backoffGrowsExponentiallyUpToItsCeiling() {
        let policy = RetryPolicy(maximumAttempts: 10, initialBackoff: .milliseconds(100), maximumBackoff: .seconds(1))
        #expect(policy.backoff(after: 1, unit: 1) == .milliseconds(100))
        #expect(policy.backoff(after: 2, unit: 1) == .milliseconds(200))
        #expect(policy.backoff(after: 4, unit: 1) == .milliseconds(800))
        #expect(policy.backoff(after: 9, unit: 1) == .seconds(1))
        #expect(policy.backoff(after: 3, unit: 0.5) == .milliseconds(200))
        #expect(policy.backoff(after: 60, unit: 0) == .zero)
    }
}
