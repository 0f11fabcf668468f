import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

@Suite struct SessionPerformTests {
    @Test func authorizeAddsTheBearerToken() async throws {
        let provider = ScriptedProvider()
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        let request = try await session.authorize(HTTPRequest(method: .get, url: ScriptedProvider.api))
        #expect(request.headerFields[.authorization] == "Bearer at-0")
        #expect(request.path == "/api")
    }

    @Test func aTokenIsSentOverHTTPSOrToALoopbackHostOnly() async throws {
        let provider = ScriptedProvider()
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        for url in ["http://api.example.com/x", "http://127.0.0.2.example.com/x", "ftp://127.0.0.1/x"] {
            do {
                _ = try await session.authorize(HTTPRequest(method: .get, url: URL(string: url)!))
                Issue.record("a token went to \(url)")
            } catch let error as OAuth2Error {
                #expect(error.code == .insecureEndpoint)
            }
        }
        for url in ["http://127.0.0.1:8080/x", "http://localhost/x", "http://[::1]:9/x", "https://api.example.com/x"] {
            _ = try await session.authorize(HTTPRequest(method: .get, url: URL(string: url)!))
        }
    }

    @Test func performSendsTheRequestWithTheToken() async throws {
        let provider = ScriptedProvider(accepting: ["at-0"])
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        var request = HTTPRequest(method: .post, url: ScriptedProvider.api)
        request.headerFields[.contentType] = "text/plain"
        let (answer, body) = try await session.perform(request, body: Data("hello".utf8))
        #expect(answer.status == .ok)
        #expect(String(decoding: body, as: UTF8.self) == #"{"ok":true}"#)
        #expect(provider.resourceCalls == ["Bearer at-0"])
        #expect(provider.tokenRequestCount == 0)
    }

    @Test(arguments: [#"Bearer error="invalid_token", error_description="expired""#, "", #"Bearer realm="api""#, #"Basic realm="x""#])
    func a401RefreshesOnceAndRetriesOnce(challenge: String) async throws {
        let provider = ScriptedProvider(accepting: ["at-1"])
        provider.onResource { _, ok in
            ok ? response(200, "{}") : response(401, "", contentType: nil, headers: challenge.isEmpty ? [:] : [.wwwAuthenticate: challenge])
        }
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        let (answer, _) = try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api), body: nil)
        #expect(answer.status == .ok)
        #expect(provider.resourceCalls == ["Bearer at-0", "Bearer at-1"])
        #expect(provider.tokenRequestCount == 1)
        #expect(session.tokens?.accessToken == "at-1")
    }

    @Test func aSecond401IsAnError() async throws {
        let provider = ScriptedProvider(accepting: [])
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        do {
            _ = try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api))
            Issue.record("a refused token was not reported")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidToken)
            #expect(error.statusCode == 401)
            #expect(error.source == .server)
            #expect(!error.description.contains("at-"))
        }
        #expect(provider.resourceCalls == ["Bearer at-0", "Bearer at-1"], "one retry, not more")
        #expect(provider.tokenRequestCount == 1)
        #expect(session.tokens?.accessToken == "at-1", "the tokens are kept")
    }

    @Test func a401ThatANewTokenCannotFixIsReturned() async throws {
        let provider = ScriptedProvider()
        provider.onResource { _, _ in
            response(401, "", contentType: nil, headers: [.wwwAuthenticate: #"Bearer error="insufficient_scope", scope="admin""#])
        }
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        let (answer, _) = try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api))
        #expect(answer.status.code == 401)
        #expect(provider.tokenRequestCount == 0)
    }

    @Test func a403IsRetriedOnlyWhenAskedTo() async throws {
        let provider = ScriptedProvider(accepting: ["at-1"])
        provider.onResource { _, ok in ok ? response(200, "{}") : response(403, "") }
        let plain = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        #expect(try await plain.perform(HTTPRequest(method: .get, url: ScriptedProvider.api)).0.status.code == 403)
        #expect(provider.tokenRequestCount == 0)
        let retrying = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"), options: .init(retryOnForbidden: true))
        #expect(try await retrying.perform(HTTPRequest(method: .get, url: ScriptedProvider.api)).0.status == .ok)
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func concurrent401sShareOneRefresh() async throws {
        let provider = ScriptedProvider(accepting: ["at-1"])
        provider.onToken { _, count in
            try await Task.sleep(for: .milliseconds(20))
            return tokenResponse("at-\(count)", refreshToken: "rt-\(count)")
        }
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask { try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api)).0.status.code }
            }
            for try await status in group { #expect(status == 200) }
        }
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func aClientCredentialsSessionRequestsANewTokenAfterA401() async throws {
        let provider = ScriptedProvider(accepting: ["cc-2"])
        provider.onToken { _, count in tokenResponse("cc-\(count)") }
        let session = TokenSession(client: try provider.client(), options: .init(renewal: .clientCredentials()))
        let (answer, _) = try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api))
        #expect(answer.status == .ok)
        #expect(provider.resourceCalls == ["Bearer cc-1", "Bearer cc-2"])
        #expect(provider.tokenForms.map { $0["grant_type"] } == ["client_credentials", "client_credentials"])
    }
}
