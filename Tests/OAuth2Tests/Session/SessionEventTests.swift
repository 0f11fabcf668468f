import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

@Suite struct SessionEventTests {
    @Test func refreshesFailuresAndSignOutsAreReportedInOrder() async throws {
        let provider = ScriptedProvider()
        provider.onToken { _, count in
            switch count {
            case 1: return tokenResponse("at-1", refreshToken: "rt-1")
            case 2: return response(503, "")
            default: return response(400, #"{"error":"invalid_grant"}"#)
            }
        }
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens())
        let recorder = EventRecorder(session)
        let second = EventRecorder(session)
        _ = try await session.freshAccessToken()
        _ = try? await session.refresh()
        _ = try? await session.refresh()
        await recorder.wait(for: 3)
        #expect(recorder.summary == ["refreshed at-1", "refreshFailed temporarily_unavailable", "signedOut sign_in_required"])
        await second.wait(for: 3)
        #expect(second.summary == recorder.summary, "every subscriber gets every event")
    }

    @Test func tokensRenewedByAnotherSessionAreReported() async throws {
        let provider = ScriptedProvider()
        let store = MemoryTokenStore()
        let client = try provider.client()
        let first = try await TokenSession(client: client, tokens: expiredTokens(), store: store)
        let second = try #require(try await TokenSession.restore(client: client, store: store))
        let recorder = EventRecorder(second)
        _ = try await first.freshAccessToken()
        #expect(try await second.freshAccessToken() == "at-1")
        await recorder.wait(for: 1)
        #expect(recorder.summary == ["refreshed at-1"])
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func eventsNeverShowATokenWhenPrinted() async throws {
        let event = TokenSessionEvent.refreshed(TokenSet(accessToken: "secret-at", refreshToken: "secret-rt"))
        #expect(!"\(event)".contains("secret"))
    }

    @Test func aStreamEndsWithItsSession() async throws {
        let provider = ScriptedProvider()
        var session: TokenSession? = try await TokenSession(client: try provider.client(), tokens: freshTokens())
        let stream = try #require(session).events()
        let ended = Task {
            for await _ in stream {}
            return true
        }
        session = nil
        #expect(await ended.value)
        _ = session
    }
}
