import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

@Suite struct SessionFailureTests {
    @Test func aServerErrorKeepsEveryTokenAndHonoursRetryAfter() async throws {
        let provider = ScriptedProvider()
        provider.onToken { _, _ in response(503, "", contentType: nil, headers: [.retryAfter: "30"]) }
        let store = MemoryTokenStore()
        // The wall clock moves only when the test says: how long the machine takes is beside the point.
        let clock = ManualDate()
        let session = try await TokenSession(client: try provider.client(now: { clock.now }), tokens: expiredTokens(), store: store)
        do {
            _ = try await session.freshAccessToken()
            Issue.record("a 503 produced a token")
        } catch let error as OAuth2Error {
            #expect(error.isTransient)
            #expect(error.statusCode == 503)
            #expect(error.retryAfter == 30)
        }
        #expect(session.tokens == expiredTokens().withTimes(of: session.tokens))
        #expect(await store.load(session.key)?.tokens.refreshToken == "rt-0")
        // Within Retry-After the server is not asked again, and the error says how long is left.
        clock.advance(by: 10)
        do {
            _ = try await session.freshAccessToken()
            Issue.record("a renewal during Retry-After produced a token")
        } catch let error as OAuth2Error {
            #expect(error.isTransient)
            #expect(error.retryAfter == 20)
        }
        #expect(provider.tokenRequestCount == 1)
        // Once it has passed, the server is asked again.
        clock.advance(by: 21)
        await #expect(throws: OAuth2Error.self) { try await session.freshAccessToken() }
        #expect(provider.tokenRequestCount == 2)
    }

    @Test func aTransientFailureBeforeExpiryReturnsTheTokenStillValid() async throws {
        // The token entered the leeway (30 s left of an hour, leeway 60 s) but still works:
        // the failed renewal is reported as an event, and the caller gets the valid token.
        let provider = ScriptedProvider()
        provider.onToken { _, _ in throw URLError(.networkConnectionLost) }
        // The clock stands still: on a busy machine the token must not expire while the test waits.
        let clock = ManualDate()
        let session = try await TokenSession(
            client: try provider.client(now: { clock.now }),
            tokens: TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: clock.now.addingTimeInterval(30), issuedAt: clock.now.addingTimeInterval(-3570)))
        let recorder = EventRecorder(session)
        #expect(try await session.freshAccessToken() == "at-0")
        #expect(provider.tokenRequestCount == 1)
        await recorder.wait(for: 1)
        #expect(recorder.summary == ["refreshFailed network"])
        // A forced renewal says what happened.
        await #expect(throws: OAuth2Error.self) { try await session.refresh() }
    }

    @Test func aNetworkFailureKeepsTheTokensAndThrowsATransientError() async throws {
        let provider = ScriptedProvider()
        provider.onToken { _, _ in throw URLError(.networkConnectionLost) }
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens())
        do {
            _ = try await session.freshAccessToken()
            Issue.record("a network failure produced a token")
        } catch let error as OAuth2Error {
            #expect(error.code == .network)
            #expect(error.isTransient)
        }
        #expect(session.tokens?.refreshToken == "rt-0")
        // No Retry-After: the next call tries again.
        _ = try? await session.freshAccessToken()
        #expect(provider.tokenRequestCount == 2)
    }

    @Test func invalidGrantClearsTheTokensAndAsksForASignIn() async throws {
        let provider = ScriptedProvider()
        provider.onToken { _, _ in response(400, #"{"error":"invalid_grant","error_description":"Token is revoked"}"#) }
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        do {
            _ = try await session.freshAccessToken()
            Issue.record("a refused refresh token produced a token")
        } catch let error as OAuth2Error {
            #expect(error.code == .signInRequired)
            #expect(error.signInReason == .refreshTokenRefused)
            #expect(error.serverCode == "invalid_grant")
            #expect(error.requiresReauthorization)
            #expect(error.statusCode == 400)
            #expect(!error.description.contains("rt-0"))
        }
        #expect(session.tokens == nil)
        #expect(await store.load(session.key) == nil)
        do {
            _ = try await session.freshAccessToken()
            Issue.record("a signed-out session produced a token")
        } catch let error as OAuth2Error {
            #expect(error.code == .signInRequired)
        }
        #expect(provider.tokenRequestCount == 1, "a signed-out session does not ask the server")
    }

    @Test func anEmpty400ToARefreshIsARefusedGrant() async throws {
        // Glewlwyd's answer to a revoked or unknown refresh token: HTTP 400, no body.
        let provider = ScriptedProvider()
        provider.onToken { _, _ in response(400, "", contentType: nil) }
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens())
        do {
            _ = try await session.freshAccessToken()
            Issue.record("an empty 400 produced a token")
        } catch let error as OAuth2Error {
            #expect(error.code == .signInRequired)
            #expect(error.serverCode == "invalid_grant")
        }
        #expect(session.tokens == nil)
        // A 400 that says what is wrong is not a refused grant: the tokens stay.
        provider.onToken { _, _ in response(400, #"{"error":"invalid_request"}"#) }
        let other = try await TokenSession(client: try provider.client(), tokens: expiredTokens())
        do {
            _ = try await other.freshAccessToken()
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidRequest)
        }
        #expect(other.tokens?.refreshToken == "rt-0")
    }

    @Test func otherErrorsKeepTheTokens() async throws {
        let provider = ScriptedProvider()
        provider.onToken { _, _ in response(401, #"{"error":"invalid_client"}"#) }
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        await #expect(throws: OAuth2Error.self) { try await session.freshAccessToken() }
        #expect(session.tokens?.refreshToken == "rt-0")
        #expect(await store.load(session.key)?.tokens.refreshToken == "rt-0")
    }

    @Test func aStoreThatCannotSaveKeepsTheNewTokensInMemory() async throws {
        // After a rotation the only live refresh token is the new one: it must not be lost.
        let provider = ScriptedProvider()
        let store = RecordingStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        await store.setFailSaves(true)
        await #expect(throws: OAuth2Error.self) { try await session.freshAccessToken() }
        #expect(session.tokens?.refreshToken == "rt-1")
        await store.setFailSaves(false)
        #expect(try await session.refresh().refreshToken == "rt-2")
        #expect(provider.tokenForms.last?["refresh_token"] == "rt-1", "the unsaved rotated token is the one used next")
        #expect(await store.operations.last == "save at-2 rt-2")
    }

    @Test("A renewal that finds its record removed elsewhere signs out instead of bringing it back")
    func aRecordRemovedElsewhereIsNotRenewed() async throws {
        let provider = ScriptedProvider()  // would answer a refresh: the session must not ask
        let store = RecordingStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        try await store.remove(session.key)  // another process's sign-out, unheard by this store
        let error = try await #require(throws: OAuth2Error.self) { try await session.freshAccessToken() }
        #expect(error.code == .signInRequired)
        #expect(error.signInReason == .signedOutElsewhere)
        #expect(provider.tokenForms.isEmpty)
        #expect(session.tokens == nil)
        #expect(try await store.load(session.key) == nil, "the record stays removed")
    }

}

extension TokenSet {
    /// These tokens with `other`'s times, to compare two sets made a moment apart.
    func withTimes(of other: TokenSet?) -> TokenSet {
        var copy = self
        copy.expiresAt = other?.expiresAt
        copy.issuedAt = other?.issuedAt ?? issuedAt
        return copy
    }
}
