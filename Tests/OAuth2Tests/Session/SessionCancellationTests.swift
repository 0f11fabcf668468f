import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// A gate a scripted server waits at until the test opens it.
final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var open = false
    private var arrived = 0

    func pass() async {
        lock.withLock { arrived += 1 }
        while !lock.withLock({ open }) { try? await Task.sleep(for: .milliseconds(2)) }
    }

    func release() { lock.withLock { open = true } }

    /// Waits until `count` requests wait at the gate (a 30 s watchdog).
    func waitForArrivals(_ count: Int = 1) async {
        for _ in 0..<15000 where lock.withLock({ arrived }) < count { try? await Task.sleep(for: .milliseconds(2)) }
    }
}

@Suite struct SessionCancellationTests {
    @Test func aCancelledCallerLeavesAtOnceAndTheSessionKeepsItsTokens() async throws {
        let gate = Gate()
        let provider = ScriptedProvider()
        provider.onToken { _, count in
            await gate.pass()
            return tokenResponse("at-\(count)", refreshToken: "rt-\(count)")
        }
        let store = RecordingStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        let waiting = Task { try await session.freshAccessToken() }
        await gate.waitForArrivals()
        waiting.cancel()
        do {
            _ = try await waiting.value
            Issue.record("a cancelled caller got a token")
        } catch let error as OAuth2Error {
            #expect(error.code == .cancelled)
        }
        // The renewal was sent: it completes and is saved, cancelled caller or not, so that a
        // rotated refresh token is never lost. Until then the previous tokens stand.
        #expect(session.tokens?.accessToken == "at-0")
        #expect(try await store.load(session.key)?.tokens.refreshToken == "rt-0")
        gate.release()
        #expect(try await session.freshAccessToken() == "at-1")
        #expect(try await store.load(session.key)?.tokens.refreshToken == "rt-1")
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func otherCallersKeepWaitingWhenOneIsCancelled() async throws {
        let gate = Gate()
        let provider = ScriptedProvider()
        provider.onToken { _, count in
            await gate.pass()
            return tokenResponse("at-\(count)", refreshToken: "rt-\(count)")
        }
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens())
        let cancelled = Task { try await session.freshAccessToken() }
        let patient = Task { try await session.freshAccessToken() }
        await gate.waitForArrivals()
        cancelled.cancel()
        await #expect(throws: OAuth2Error.self) { try await cancelled.value }
        gate.release()
        #expect(try await patient.value == "at-1")
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func aCancelledSignInLeavesThePreviousTokens() async throws {
        let provider = ScriptedProvider()
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"), store: store)
        let gate = Gate()
        let signIn = Task {
            try await session.signIn { client in
                await gate.pass()
                return try await client.password(username: "alice", password: "pw")
            }
        }
        await gate.waitForArrivals()
        signIn.cancel()
        gate.release()
        do {
            _ = try await signIn.value
            Issue.record("a cancelled sign-in replaced the tokens")
        } catch let error as OAuth2Error {
            #expect(error.code == .cancelled)
        }
        #expect(session.tokens?.accessToken == "at-0")
        #expect(await store.load(session.key)?.tokens.accessToken == "at-0")
        #expect(try await session.freshAccessToken() == "at-0")
    }

    @Test func aSignInReplacesTheTokens() async throws {
        let provider = ScriptedProvider()
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        let recorder = EventRecorder(session)
        try await session.signIn { client in try await client.password(username: "alice", password: "pw") }
        #expect(session.tokens?.accessToken == "at-1")
        #expect(await store.load(session.key)?.tokens.accessToken == "at-1")
        await recorder.wait(for: 1)
        #expect(recorder.summary == ["signedIn at-1"])
    }

    @Test func aSignInDuringARenewalWins() async throws {
        // The renewal started before the sign-in must not bring its tokens back afterwards.
        let gate = Gate()
        let provider = ScriptedProvider()
        provider.onToken { form, count in
            if form["grant_type"] == "refresh_token" { await gate.pass() }
            return tokenResponse("at-\(count)-\(form["grant_type"] ?? "")", refreshToken: "rt-\(count)")
        }
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: MemoryTokenStore())
        let renewal = Task { try await session.freshAccessToken() }
        await gate.waitForArrivals()
        // MemoryTokenStore's lock is held by the renewal: the sign-in's save waits for it.
        let signIn = Task { try await session.signIn { client in try await client.password(username: "a", password: "b") } }
        try await Task.sleep(for: .milliseconds(20))
        gate.release()
        _ = try await renewal.value
        let signedIn = try await signIn.value
        #expect(session.tokens == signedIn)
        #expect(signedIn.accessToken.hasSuffix("-password"))
    }
}
