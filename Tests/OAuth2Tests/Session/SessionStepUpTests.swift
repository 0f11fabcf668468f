import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// Step-up after `403 insufficient_scope` (RFC 6750 §3.1; the MCP authorization
/// specification's scope challenge): one sign-in for the union of the scopes, one retry,
/// never a loop.
@Suite struct SessionStepUpTests {
    static let challenge = #"Bearer error="insufficient_scope", scope="tools:call", resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/api""#

    /// A recorder of the scopes each step-up sign-in was asked for.
    final class StepUps: @unchecked Sendable {
        private let lock = NSLock()
        private var asked: [[String]] = []
        var requests: [[String]] { lock.withLock { asked } }
        func record(_ scopes: [String]) -> Int { lock.withLock { asked.append(scopes); return asked.count } }
    }

    func granted(_ accessToken: String, scopes: [String]) -> TokenSet {
        var tokens = freshTokens(accessToken)
        tokens.scopes = scopes
        return tokens
    }

    @Test("a 403 insufficient_scope signs in once for the union of the scopes and retries once")
    func stepsUpOnceAndRetries() async throws {
        let provider = ScriptedProvider(accepting: ["at-0", "wide-1"])
        provider.onResource { authorization, _ in
            authorization == "Bearer wide-1" ? response(200, #"{"ok":true}"#) : response(403, "", contentType: nil, headers: [.wwwAuthenticate: Self.challenge])
        }
        let stepUps = StepUps()
        let options = TokenSession.Options(stepUp: { _, scopes in
            let count = stepUps.record(scopes)
            var tokens = freshTokens("wide-\(count)")
            tokens.scopes = scopes
            return tokens
        })
        let session = try await TokenSession(client: try provider.client(), tokens: granted("at-0", scopes: ["tools:read"]), options: options)
        let (answer, _) = try await session.perform(HTTPRequest(method: .post, url: ScriptedProvider.api), body: Data("{}".utf8))
        #expect(answer.status == .ok)
        #expect(stepUps.requests == [["tools:read", "tools:call"]])
        #expect(provider.resourceCalls == ["Bearer at-0", "Bearer wide-1"])
        #expect(session.tokens?.accessToken == "wide-1", "the stepped-up tokens are the session's")
        #expect(try await session.store.load(session.key)?.tokens.accessToken == "wide-1", "and are saved")
        #expect(provider.tokenRequestCount == 0, "a step-up is a sign-in, not a refresh")
    }

    @Test("a server that keeps asking after the step-up gets a typed error, not a loop; no token in it")
    func aServerThatKeepsAskingIsNotAskedAgain() async throws {
        let provider = ScriptedProvider(accepting: [])
        provider.onResource { _, _ in response(403, "", contentType: nil, headers: [.wwwAuthenticate: Self.challenge]) }
        let stepUps = StepUps()
        let options = TokenSession.Options(stepUp: { _, scopes in freshTokens("wide-\(stepUps.record(scopes))") })
        let session = try await TokenSession(client: try provider.client(), tokens: granted("at-0", scopes: ["tools:read"]), options: options)
        let error = await #expect(throws: OAuth2Error.self) {
            try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api))
        }
        #expect(error?.code == .insufficientScope)
        #expect(error?.statusCode == 403)
        #expect(error?.message?.contains("tools:call") == true)
        #expect(error.map { !$0.description.contains("at-0") && !$0.description.contains("wide-") } == true)
        #expect(stepUps.requests.count == 1, "at most one step-up per request")
        #expect(provider.resourceCalls == ["Bearer at-0", "Bearer wide-1"])
    }

    @Test("without a step-up hook, or for a challenge without scope, the 403 is returned as it is")
    func noHookOrNoScopeReturnsThe403() async throws {
        let provider = ScriptedProvider(accepting: [])
        provider.onResource { _, _ in response(403, "", contentType: nil, headers: [.wwwAuthenticate: Self.challenge]) }
        let plain = try await TokenSession(client: try provider.client(), tokens: granted("at-0", scopes: ["tools:read"]))
        #expect(try await plain.perform(HTTPRequest(method: .get, url: ScriptedProvider.api)).0.status.code == 403)

        let bare = ScriptedProvider(accepting: [])
        bare.onResource { _, _ in response(403, "", contentType: nil, headers: [.wwwAuthenticate: #"Bearer error="insufficient_scope""#]) }
        let stepUps = StepUps()
        let hooked = try await TokenSession(
            client: try bare.client(), tokens: granted("at-0", scopes: ["tools:read"]),
            options: .init(stepUp: { _, scopes in freshTokens("wide-\(stepUps.record(scopes))") }))
        #expect(try await hooked.perform(HTTPRequest(method: .get, url: ScriptedProvider.api)).0.status.code == 403)
        #expect(stepUps.requests.isEmpty)
    }

    @Test("with retryOnForbidden too, an insufficient_scope 403 steps up rather than refreshing")
    func stepUpWinsOverRetryOnForbidden() async throws {
        let provider = ScriptedProvider(accepting: [])
        provider.onResource { authorization, _ in
            authorization == "Bearer wide-1" ? response(200, "{}") : response(403, "", contentType: nil, headers: [.wwwAuthenticate: Self.challenge])
        }
        let stepUps = StepUps()
        let options = TokenSession.Options(retryOnForbidden: true, stepUp: { _, scopes in freshTokens("wide-\(stepUps.record(scopes))") })
        let session = try await TokenSession(client: try provider.client(), tokens: granted("at-0", scopes: ["tools:read"]), options: options)
        #expect(try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api)).0.status == .ok)
        #expect(provider.tokenRequestCount == 0)
        #expect(stepUps.requests.count == 1)
    }

    @Test("a step-up hook that fails leaves the session's tokens as they were")
    func aFailedStepUpKeepsTheTokens() async throws {
        let provider = ScriptedProvider(accepting: [])
        provider.onResource { _, _ in response(403, "", contentType: nil, headers: [.wwwAuthenticate: Self.challenge]) }
        let options = TokenSession.Options(stepUp: { _, _ in throw OAuth2Error(.accessDenied, source: .server, message: "the user said no") })
        let session = try await TokenSession(client: try provider.client(), tokens: granted("at-0", scopes: ["tools:read"]), options: options)
        let error = await #expect(throws: OAuth2Error.self) { try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api)) }
        #expect(error?.code == .accessDenied)
        #expect(session.tokens?.accessToken == "at-0")
    }
}
