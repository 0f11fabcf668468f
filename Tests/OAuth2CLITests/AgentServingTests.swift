import Foundation
import OAuth2
import OAuth2Testing
import Testing

@testable import OAuth2CLI

#if canImport(Glibc)
import Glibc
#endif

/// `oauth2 agent` on a real socket, with profiles signed in at the embedded provider: one
/// refresh for any number of clients, clients that misbehave lose only their own
/// connection, other users' programs get no answer, and no answer carries a refresh token
/// or an ID token. No fixed delays: token requests wait at a gate the test opens once the
/// agent holds every request.
@Suite struct AgentServingTests {
    @Test func fiftyClientsAtOnceShareOneRefresh() async throws {
        try await AgentFixture.with { fixture in
            let expired = try await fixture.signIn("work") { $0.expiresAt = Date(timeIntervalSinceNow: -60) }
            fixture.provider.resetRequestCounts()
            let server = try await fixture.startAgent(gated: true)
            let socket = fixture.socket
            try await withThrowingTaskGroup(of: AgentProtocol.Token.self) { clients in
                for _ in 0..<50 {
                    clients.addTask { try await onThread { try AgentClient.accessToken(profile: "work", socket: socket) } }
                }
                // Every request is in the agent, waiting for the renewal, before it may happen.
                try await eventually { server.requestsInProgress.withLock { $0 } == 50 }
                fixture.gate.open()
                var tokens: Set<String> = []
                for try await token in clients {
                    tokens.insert(token.accessToken)
                    #expect(token.tokenType == "Bearer")
                    #expect(token.expiresAt != nil, "the provider gave a lifetime, and the agent passes it on")
                }
                #expect(tokens.count == 1)
                #expect(!tokens.contains(expired.accessToken))
            }
            #expect(fixture.provider.requestCount(.token) == 1)
            await server.shutdown()
        }
    }

    @Test func garbageSilenceAndHangUpsDoNotHurtAGoodClient() async throws {
        try await AgentFixture.with { fixture in
            try await fixture.signIn("work") { $0.expiresAt = Date(timeIntervalSinceNow: -60) }
            let server = try await fixture.startAgent(gated: true)
            let socket = fixture.socket
            // A good client, held inside the agent (its renewal waits at the gate).
            async let good = onThread { try AgentClient.accessToken(profile: "work", socket: socket) }
            try await eventually { server.requestsInProgress.withLock { $0 } == 1 }
            // Meanwhile: a silent client that stays connected, garbage, a request too long,
            // a client that hangs up halfway through its request, a newer protocol version.
            async let silent = onThread { try RawAgentClient.exchange(socket, send: Data()) }
            let garbage = try await onThread { try RawAgentClient.exchange(socket, send: Data("\u{0}garbage\n".utf8)) }
            #expect(AgentProtocol.decodeAnswer(garbage) == .failure(AgentProtocol.RequestError.malformed("it is not a JSON object").failure))
            let flood = Data(repeating: UInt8(ascii: "{"), count: 4 * AgentProtocol.maximumLineSize)
            let tooLong = try await onThread { try RawAgentClient.exchange(socket, send: flood) }
            #expect(AgentProtocol.decodeAnswer(tooLong) == .failure(AgentProtocol.RequestError.tooLarge.failure))
            _ = try await onThread { try RawAgentClient.exchange(socket, send: Data(#"{"v":1,"prof"#.utf8), hangUp: true) }
            let newer = try await onThread { try RawAgentClient.exchange(socket, send: Data(#"{"v":2,"profile":"work"}"#.utf8 + [10])) }
            #expect(AgentProtocol.decodeAnswer(newer) == .failure(AgentProtocol.RequestError.unsupportedVersion(2).failure))

            fixture.gate.open()
            let token = try await good
            #expect(!token.accessToken.isEmpty)
            // The silent client is still connected and unanswered; the agent's shutdown ends it.
            await server.shutdown()
            #expect(try await silent.isEmpty)
        }
    }

    @Test func aClientThatSendsNothingIsDroppedAfterTheReadTimeout() async throws {
        try await AgentFixture.with { fixture in
            let server = try await fixture.startAgent(readTimeout: .milliseconds(50))
            let socket = fixture.socket
            // Closed by the agent (not by a shutdown): the read ends with no answer.
            let answer = try await onThread { try RawAgentClient.exchange(socket, send: Data()) }
            #expect(answer.isEmpty)
            await server.shutdown()
        }
    }

    @Test func anotherUsersProgramIsClosedWithoutAnAnswerAndLogged() async throws {
        try await AgentFixture.with { fixture in
            let token = try await fixture.signIn("work")
            // An agent that serves only another user: this process is a stranger to it.
            let stranger = UInt32(getuid()) + 1
            let server = try await fixture.startAgent(allowedUIDs: [stranger])
            let socket = fixture.socket
            let raw = try await onThread { try RawAgentClient.exchange(socket, send: AgentProtocol.encode(AgentProtocol.Request(profile: "work"))) }
            #expect(raw.isEmpty)
            do {
                _ = try await onThread { try AgentClient.accessToken(profile: "work", socket: socket) }
                Issue.record("answered a stranger")
            } catch let error as CLIError {
                #expect(error.status == .refused)
                #expect(error.message.contains("closed the connection without an answer"))
                #expect(error.hint?.contains("--allow-uid \(getuid())") == true)
            }
            let refusals = fixture.log.lines.filter { $0.contains("refused a connection from uid \(getuid()), pid \(getpid())") }
            #expect(refusals.count == 2)
            #expect(!fixture.log.text.contains(token.accessToken))
            #expect(fixture.log.lines.filter { $0.contains("profile work") }.isEmpty)
            await server.shutdown()
        }
    }

    @Test func theAnswerHoldsNoRefreshTokenAndNoIDToken() async throws {
        try await AgentFixture.with { fixture in
            try await fixture.signIn("work") { $0.expiresAt = Date(timeIntervalSinceNow: -60) }
            let server = try await fixture.startAgent()
            let socket = fixture.socket
            let raw = try await onThread { try RawAgentClient.exchange(socket, send: AgentProtocol.encode(AgentProtocol.Request(profile: "work"))) }
            let record = try #require(try await fixture.stored("work"))
            let refreshToken = try #require(record.tokens.refreshToken)
            let idToken = try #require(record.tokens.idToken)
            let text = String(decoding: raw, as: UTF8.self)
            #expect(text.contains(record.tokens.accessToken))
            #expect(!text.contains(refreshToken))
            #expect(!text.contains(idToken))
            #expect(!fixture.log.text.contains(record.tokens.accessToken))
            #expect(!fixture.log.text.contains(refreshToken))
            await server.shutdown()
        }
    }

    @Test func aSignOutElsewhereIsSignInAgainAndANewSignInIsServed() async throws {
        try await AgentFixture.with { fixture in
            let first = try await fixture.signIn("work")
            let server = try await fixture.startAgent()
            let socket = fixture.socket
            let ask = { @Sendable in try await onThread { try AgentClient.accessToken(profile: "work", socket: socket) } }
            #expect(try await ask().accessToken == first.accessToken)
            // `oauth2 logout` removed the tokens: the agent does not go on serving the one it holds.
            try await fixture.removeTokens("work")
            do {
                _ = try await ask()
                Issue.record("served a signed-out profile")
            } catch let error as CLIError {
                #expect(error.status == .signInAgain)
            }
            let second = try await fixture.signIn("work")
            #expect(try await ask().accessToken == second.accessToken)
            // A profile never signed in, the same way.
            do {
                _ = try await onThread { try AgentClient.accessToken(profile: "never", socket: socket) }
                Issue.record("served a profile that does not exist")
            } catch let error as CLIError {
                #expect(error.status == .signInAgain)
                #expect(error.message.contains("no stored sign-in for profile \"never\""))
            }
            await server.shutdown()
        }
    }

    @Test func aMinimumTTLRenewsATokenThatWouldExpireSooner() async throws {
        try await AgentFixture.with { fixture in
            // Issued 55 minutes ago for an hour: five minutes left.
            let signedIn = try await fixture.signIn("work") { tokens in
                tokens.issuedAt = Date(timeIntervalSinceNow: -3300)
                tokens.expiresAt = Date(timeIntervalSinceNow: 300)
            }
            fixture.provider.resetRequestCounts()
            let server = try await fixture.startAgent()
            let socket = fixture.socket
            let ask = { @Sendable (ttl: Int) in try await onThread { try AgentClient.accessToken(profile: "work", minimumTTL: ttl, socket: socket) } }
            #expect(try await ask(0).accessToken == signedIn.accessToken)
            #expect(try await ask(120).accessToken == signedIn.accessToken)
            let renewed = try await ask(600)
            #expect(renewed.accessToken != signedIn.accessToken)
            #expect(fixture.provider.requestCount(.token) == 1)
            #expect(try await ask(600).accessToken == renewed.accessToken)
            // More than a token lives: the freshest token there is, not a renewal per request.
            #expect(try await ask(7200).accessToken == renewed.accessToken)
            #expect(fixture.provider.requestCount(.token) == 1)
            await server.shutdown()
        }
    }
}
