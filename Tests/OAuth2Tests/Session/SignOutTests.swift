import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// Records sign-out progress.
final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    var lines: [String] { lock.withLock { storage } }

    func record(_ progress: SignOutProgress) {
        let outcome: String
        switch progress.outcome {
        case .started: outcome = "started"
        case .succeeded: outcome = "succeeded"
        case .skipped: outcome = "skipped"
        case .notOffered: outcome = "not offered"
        case .failed: outcome = "failed"
        }
        lock.withLock { storage.append("\(progress.step) \(outcome)") }
    }
}

@Suite struct SignOutTests {
    @Test func everyStepRunsInOrder() async throws {
        let provider = ScriptedProvider()
        let store = MemoryTokenStore()
        var tokens = freshTokens("at-0", refreshToken: "rt-0")
        tokens.idToken = "id-token"
        let session = try await TokenSession(client: try provider.client(), tokens: tokens, store: store)
        let recorder = EventRecorder(session)
        let log = ProgressLog()
        let result = await session.signOut(
            .all, endSession: EndSessionOptions(postLogoutRedirectURI: URL(string: "http://127.0.0.1:9999/bye")!),
            progress: log.record)
        #expect(result.succeeded)
        #expect(result.failed.isEmpty)
        #expect(log.lines == [
            "[revokeAccessToken] started", "[revokeAccessToken] succeeded",
            "[revokeRefreshToken] started", "[revokeRefreshToken] succeeded",
            "[endSession] started", "[endSession] succeeded",
            "[removeFromStore] started", "[removeFromStore] succeeded",
        ])
        #expect(provider.revocationForms.map { $0["token"] } == ["at-0", "rt-0"])
        #expect(provider.revocationForms.map { $0["token_type_hint"] } == ["access_token", "refresh_token"])
        let url = try #require(result.endSessionRequest?.url)
        #expect(url.absoluteString.hasPrefix("https://as.example.com/logout?"))
        #expect(url.query?.contains("id_token_hint=id-token") == true)
        #expect(session.tokens == nil)
        #expect(await store.load(session.key) == nil)
        await recorder.wait(for: 1)
        #expect(recorder.summary == ["signedOut app"])
        await #expect(throws: OAuth2Error.self) { try await session.freshAccessToken() }
    }

    @Test func aFailedRevocationKeepsTheTokens() async throws {
        let provider = ScriptedProvider()
        provider.onRevoke { form in form["token_type_hint"] == "access_token" ? response(503, "") : response(200, "") }
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"), store: store)
        let log = ProgressLog()
        let result = await session.signOut(.revokeAndRemove, progress: log.record)
        #expect(!result.succeeded)
        #expect(result.failed == [.revokeAccessToken, .removeFromStore])
        #expect((result.errors[.revokeAccessToken] as? OAuth2Error)?.isTransient == true)
        #expect((result.errors[.removeFromStore] as? OAuth2Error)?.message?.contains("kept") == true)
        #expect(log.lines == [
            "[revokeAccessToken] started", "[revokeAccessToken] failed",
            "[revokeRefreshToken] started", "[revokeRefreshToken] succeeded",
            "[removeFromStore] started", "[removeFromStore] failed",
        ])
        #expect(session.tokens?.accessToken == "at-0")
        #expect(await store.load(session.key)?.tokens.accessToken == "at-0")
        // Tried again once the server is back: everything goes.
        provider.onRevoke { _ in response(200, "") }
        #expect(await session.signOut(.revokeAndRemove).succeeded)
        #expect(await store.load(session.key) == nil)
    }

    @Test func aMissingRefreshTokenIsSkippedAndAMissingEndSessionEndpointIsNotOffered() async throws {
        let provider = ScriptedProvider()
        let metadata = ServerMetadata(issuer: URL(string: Fixtures.issuer)!, tokenEndpoint: URL(string: "https://as.example.com/token")!,
                                      revocationEndpoint: URL(string: "https://as.example.com/revoke")!)
        let client = try OAuth2Client(metadata: metadata, configuration: Fixtures.configuration(), environment: HTTPEnvironment(transport: provider.transport))
        let session = try await TokenSession(client: client, tokens: freshTokens("at-0", refreshToken: nil))
        let log = ProgressLog()
        let result = await session.signOut(.all, progress: log.record)
        #expect(result.succeeded)
        #expect(result.endSessionRequest == nil)
        #expect(log.lines.contains("[revokeRefreshToken] skipped"))
        #expect(log.lines.contains("[endSession] not offered"))
        #expect(log.lines.last == "[removeFromStore] succeeded")
        #expect(session.tokens == nil)
    }

    @Test func withoutARevocationEndpointTheTokensAreStillForgotten() async throws {
        // LemonLDAP::NG and django-oidc-provider have no revocation endpoint: signing out
        // must not keep the tokens for a revocation that can never happen (it did).
        let provider = ScriptedProvider()
        let metadata = ServerMetadata(issuer: URL(string: Fixtures.issuer)!, tokenEndpoint: URL(string: "https://as.example.com/token")!)
        let client = try OAuth2Client(metadata: metadata, configuration: Fixtures.configuration(), environment: HTTPEnvironment(transport: provider.transport))
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: client, tokens: freshTokens("at-0", refreshToken: "rt-0"), store: store)
        let log = ProgressLog()
        let result = await session.signOut(.revokeAndRemove, progress: log.record)
        #expect(result.succeeded)
        #expect(log.lines == [
            "[revokeAccessToken] started", "[revokeAccessToken] not offered",
            "[revokeRefreshToken] started", "[revokeRefreshToken] not offered",
            "[removeFromStore] started", "[removeFromStore] succeeded",
        ])
        #expect(provider.revocationForms.isEmpty, "nothing was sent")
        #expect(session.tokens == nil)
        #expect(await store.load(session.key) == nil)
        let progress = SignOutProgress(step: .revokeAccessToken, outcome: .notOffered)
        #expect(progress.description == "revoke the access token: not offered by the server")
    }

    @Test func signOutUsesTheNewestTokensInTheStore() async throws {
        // Another process renewed (and rotated) the tokens: the sign-out revokes those.
        let provider = ScriptedProvider()
        let store = MemoryTokenStore()
        let client = try provider.client()
        let stale = try await TokenSession(client: client, tokens: expiredTokens(), store: store)
        let other = try #require(try await TokenSession.restore(client: client, store: store))
        _ = try await other.freshAccessToken()
        _ = await stale.signOut(.revokeAndRemove)
        #expect(provider.revocationForms.map { $0["token"] } == ["at-1", "rt-1"])
    }

    @Test func aStoreThatCannotRemoveIsReported() async throws {
        let provider = ScriptedProvider()
        let store = RecordingStore()
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"), store: store)
        await store.setFailRemoves(true)
        let result = await session.signOut([.removeFromStore])
        #expect(result.failed == [.removeFromStore])
        #expect(session.tokens?.accessToken == "at-0")
    }
}
