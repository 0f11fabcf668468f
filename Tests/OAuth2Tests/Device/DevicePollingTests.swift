import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// RFC 8628 §3.4–3.5: polling the token endpoint with a device code, on a clock that does
/// not wait (every sleep is recorded instead).
@Suite struct DevicePollingTests {
    static let tokens = #"{"access_token":"at-device","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-device"}"#
    static let deviceCode = "dc-secret-0123456789"

    static func authorization(interval: TimeInterval = 5, expiresIn: TimeInterval = 600) -> DeviceAuthorization {
        DeviceAuthorization(
            deviceCode: deviceCode, userCode: "ABCD-EFGH", verificationURI: URL(string: "https://as.example.com/device")!,
            expiresAt: Date().addingTimeInterval(expiresIn), interval: interval, scopes: ["read"])
    }

    /// A transport answering the token endpoint with `answers` in turn (the last one repeats).
    static func transport(_ answers: [(Int, String)]) -> StubTransport {
        let index = PollCounter()
        return StubTransport { _, _ in
            let answer = answers[min(index.next(), answers.count - 1)]
            // GitHub answers form-encoded without an Accept header.
            let form = !answer.1.isEmpty && !answer.1.hasPrefix("{")
            return response(answer.0, answer.1, contentType: form ? "application/x-www-form-urlencoded" : "application/json")
        }
    }

    static let pending = (400, #"{"error":"authorization_pending"}"#)
    static let slowDown = (400, #"{"error":"slow_down"}"#)

    @Test func pendingKeepsPollingAtTheIntervalUntilTheTokensCome() async throws {
        let transport = Self.transport([Self.pending, Self.pending, (200, Self.tokens)])
        let clock = ImmediateClock()
        let events = EventLog()
        let tokens = try await Fixtures.client(transport, configuration: Fixtures.configuration(secret: nil))
            .pollDeviceToken(Self.authorization(interval: 5), clock: clock) { events.append($0) }
        #expect(tokens.accessToken == "at-device")
        #expect(tokens.refreshToken == "rt-device")
        #expect(tokens.scopes == ["read"], "the scopes asked for, as the response names none")
        #expect(clock.sleeps == [.seconds(5), .seconds(5), .seconds(5)], "the first poll waits an interval too")
        #expect(transport.sent.count == 3)
        for sent in transport.sent {
            #expect(sent.request.url?.absoluteString == "https://as.example.com/token")
            #expect(sent.form == ["grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": Self.deviceCode, "client_id": "client-1"])
        }
        #expect(events.all == [
            .waiting(seconds: 5, attempt: 1), .authorizationPending(attempt: 1),
            .waiting(seconds: 5, attempt: 2), .authorizationPending(attempt: 2),
            .waiting(seconds: 5, attempt: 3),
        ])
    }

    @Test func aConfidentialClientAuthenticatesEachPoll() async throws {
        let transport = Self.transport([Self.pending, (200, Self.tokens)])
        _ = try await Fixtures.client(transport, configuration: Fixtures.configuration(method: .clientSecretBasic))
            .pollDeviceToken(Self.authorization(), clock: ImmediateClock())
        #expect(transport.sent.count == 2)
        #expect(transport.sent.allSatisfy { $0.request.headerFields[.authorization]?.hasPrefix("Basic ") == true })
        #expect(transport.sent.allSatisfy { $0.form["client_secret"] == nil })
    }

    @Test func slowDownAddsFiveSecondsForGood() async throws {
        let transport = Self.transport([Self.pending, Self.slowDown, Self.pending, Self.slowDown, (200, Self.tokens)])
        let clock = ImmediateClock()
        let events = EventLog()
        _ = try await Fixtures.client(transport).pollDeviceToken(Self.authorization(interval: 5), clock: clock) { events.append($0) }
        #expect(clock.sleeps == [.seconds(5), .seconds(5), .seconds(10), .seconds(10), .seconds(15)])
        #expect(events.all.contains(.slowDown(interval: 10)))
        #expect(events.all.contains(.slowDown(interval: 15)))
    }

    @Test func slowDownWithTheServersOwnLongerIntervalTakesIt() async throws {
        // GitHub names the new interval in its slow_down answer (HTTP 200, form-encoded here).
        let index = PollCounter()
        let transport = StubTransport { _, _ in
            index.next() == 0
                ? response(200, "error=slow_down&error_description=Too+many+requests&interval=20", contentType: "application/x-www-form-urlencoded")
                : response(200, Self.tokens)
        }
        let clock = ImmediateClock()
        _ = try await Fixtures.client(transport).pollDeviceToken(Self.authorization(interval: 5), clock: clock)
        #expect(clock.sleeps == [.seconds(5), .seconds(20)])
    }

    @Test(arguments: [
        ((400, #"{"error":"access_denied","error_description":"The user said no"}"#), OAuth2Error.Code.accessDenied),
        ((400, #"{"error":"expired_token"}"#), .expiredToken),
        ((400, #"{"error":"invalid_grant"}"#), .invalidGrant),
        ((404, #"{"error":"device_not_found"}"#), .invalidGrant),  // django-oauth-toolkit
        ((200, "error=incorrect_device_code"), .invalidGrant),  // GitHub
        ((401, ""), .invalidClient),
    ])
    func aFinalAnswerEndsPollingWithItsTypedError(answer: (Int, String), code: OAuth2Error.Code) async throws {
        let transport = Self.transport([Self.pending, answer])
        let clock = ImmediateClock()
        do {
            _ = try await Fixtures.client(transport).pollDeviceToken(Self.authorization(), clock: clock)
            Issue.record("polling went on past \(answer.1)")
        } catch let error as OAuth2Error {
            #expect(error.code == code)
            #expect(error.source == .server)
            #expect(!error.description.contains(Self.deviceCode))
        }
        #expect(transport.sent.count == 2, "no poll after a final answer")
    }

    @Test func theCodesOwnExpiryEndsPollingWithoutAnotherRequest() async throws {
        // 12 s of life, 5 s apart: polls at 5 and 10; a poll at 15 would be too late.
        let transport = Self.transport([Self.pending])
        let clock = ImmediateClock()
        do {
            _ = try await Fixtures.client(transport).pollDeviceToken(Self.authorization(interval: 5, expiresIn: 12), clock: clock)
            Issue.record("polling outlived the device code")
        } catch let error as OAuth2Error {
            #expect(error.code == .expiredToken)
            #expect(error.source == .client)
            #expect(error.requiresReauthorization)
        }
        #expect(transport.sent.count == 2)
        #expect(clock.elapsed > .seconds(11) && clock.elapsed <= .seconds(12), "waited out the code's lifetime: \(clock.elapsed)")
    }

    @Test func transientFailuresBackOffAndPollingGoesOn() async throws {
        let transport = Self.transport([(503, ""), (500, #"{"error":"server_error"}"#), Self.pending, (200, Self.tokens)])
        let clock = ImmediateClock()
        let events = EventLog()
        let tokens = try await Fixtures.client(transport).pollDeviceToken(Self.authorization(interval: 5), clock: clock) { events.append($0) }
        #expect(tokens.accessToken == "at-device")
        #expect(clock.sleeps == [.seconds(5), .seconds(10), .seconds(20), .seconds(20)], "RFC 8628 §3.5: the interval doubles")
        #expect(events.all.contains(.retrying(code: .temporarilyUnavailable, interval: 10)))
        #expect(events.all.contains(.retrying(code: .serverError, interval: 20)))
    }

    @Test func theSixthTransientFailureInARowIsThrown() async throws {
        let transport = Self.transport([(503, "")])
        do {
            _ = try await Fixtures.client(transport).pollDeviceToken(Self.authorization(expiresIn: 3600), clock: ImmediateClock())
            Issue.record("polled a failing server forever")
        } catch let error as OAuth2Error {
            #expect(error.code == .temporarilyUnavailable)
            #expect(error.isTransient)
        }
        #expect(transport.sent.count == 6)
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellationEndsPollingPromptly() async throws {
        // A clock whose time never moves: the poll's first wait lasts until its task is
        // cancelled, so the test proves that cancelling ends it without reading any clock.
        let clock = ImmediateClock(horizon: .zero)
        let transport = Self.transport([Self.pending])
        let client = try Fixtures.client(transport)
        let task = Task { try await client.pollDeviceToken(Self.authorization(), clock: clock) }
        while clock.sleeps.isEmpty { await Task.yield() }  // it waits the interval before the first poll
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("a cancelled poll returned tokens")
        } catch let error as OAuth2Error {
            #expect(error.code == .cancelled)
        }
        #expect(clock.elapsed == .zero)
        #expect(transport.sent.isEmpty)
    }

    @Test func cancellationBetweenPollsSendsNoFurtherRequest() async throws {
        let polls = PollCounter()
        let holder = TaskHolder()
        let transport = StubTransport { _, _ in
            // The third poll cancels the task that polls, as a user pressing Ctrl-C would.
            if polls.next() == 2 { holder.cancel() }
            return response(400, #"{"error":"authorization_pending"}"#)
        }
        let client = try Fixtures.client(transport)
        let task = Task { try await client.pollDeviceToken(Self.authorization(), clock: ImmediateClock()) }
        holder.set(task)
        await #expect(throws: OAuth2Error.self) { try await task.value }
        #expect(transport.sent.count == 3)
    }

    @Test func anIDTokenInTheAnswerIsVerified() async throws {
        let transport = Self.transport([(200, #"{"access_token":"at","token_type":"Bearer","id_token":"not.a.jwt"}"#)])
        do {
            _ = try await Fixtures.client(transport).pollDeviceToken(Self.authorization(), clock: ImmediateClock())
            Issue.record("an unverifiable ID token was accepted")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidIDToken)
        }
    }
}

/// A thread-safe counter: `next()` returns 0, 1, 2…
final class PollCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.withLock {
            defer { value += 1 }
            return value
        }
    }
}

/// Poll events, in order.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [DevicePollEvent] = []

    func append(_ event: DevicePollEvent) { lock.withLock { events.append(event) } }
    var all: [DevicePollEvent] { lock.withLock { events } }
}

/// Lets a transport cancel the task that uses it.
final class TaskHolder: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<TokenSet, any Error>?
    private var cancelled = false

    func set(_ task: Task<TokenSet, any Error>) {
        let cancelNow = lock.withLock {
            self.task = task
            return cancelled
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock {
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}
