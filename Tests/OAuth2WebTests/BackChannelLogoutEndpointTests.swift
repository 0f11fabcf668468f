import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// The back-channel logout endpoint's answers (OpenID Connect Back-Channel Logout 1.0 §2.5,
/// §2.8): 200 after the application ended the sessions, 400 with a JSON error otherwise,
/// never cached.
@Suite struct BackChannelLogoutEndpointTests {
    let date = ManualDate(TestIssuer.start)

    func endpoint() -> BackChannelLogoutEndpoint {
        BackChannelLogoutEndpoint(verifier: LogoutTokens.verifier(date: date))
    }

    static func request(_ method: HTTPRequest.Method = .post, contentType: String? = "application/x-www-form-urlencoded") -> HTTPRequest {
        var request = HTTPRequest(method: method, scheme: "https", authority: "app.example.com", path: "/backchannel-logout")
        if let contentType { request.headerFields[.contentType] = contentType }
        return request
    }

    static func form(_ token: String) -> [UInt8] { Array(("logout_token=" + FormURLEncoding.encode(token)).utf8) }

    static func json(_ body: [UInt8]) -> [String: JSONValue] {
        (try? JOSEJSON.object(body, what: "body")) ?? [:]
    }

    @Test func aValidTokenEndsTheSessionsAndAnswers200() async {
        let ended = Locked<[VerifiedLogoutToken]>([])
        let response = await endpoint().handle(Self.request(), body: Self.form(LogoutTokens.token())) { logout in
            ended.withLock { $0.append(logout) }
        }
        #expect(response.status == .ok)
        #expect(response.headerFields[.cacheControl] == "no-store")
        #expect(response.body.isEmpty)
        #expect(ended.withLock { $0.map(\.sessionID) } == ["session-1"])
        #expect(response.logout?.subject == "user-1")
    }

    @Test func aGlewlwydTokenIsAccepted() async {
        let response = await endpoint().handle(Self.request(contentType: "application/x-www-form-urlencoded; charset=UTF-8"), body: Self.form(LogoutTokens.glewlwydToken())) { _ in }
        #expect(response.status == .ok)
    }

    @Test func aBadTokenIs400WithAJSONErrorAndNoSessionEnds() async {
        let called = Locked(false)
        let token = LogoutTokens.token { $0["nonce"] = "n" }
        let response = await endpoint().handle(Self.request(), body: Self.form(token)) { _ in called.withLock { $0 = true } }
        #expect(response.status == .badRequest)
        #expect(response.headerFields[.cacheControl] == "no-store")
        #expect(response.headerFields[.contentType] == "application/json")
        let body = Self.json(response.body)
        #expect(body["error"] == "invalid_request")
        #expect(body["error_description"]?.stringValue?.isEmpty == false)
        #expect(!String(decoding: response.body, as: UTF8.self).contains(token))
        #expect(response.error?.reason == .nonceForbidden)
        #expect(!called.withLock { $0 })
    }

    @Test func aReplayedTokenIs400() async {
        let endpoint = endpoint()
        let body = Self.form(LogoutTokens.token())
        #expect(await endpoint.handle(Self.request(), body: body) { _ in }.status == .ok)
        let again = await endpoint.handle(Self.request(), body: body) { _ in Issue.record("a replay ended sessions") }
        #expect(again.status == .badRequest)
        #expect(again.error?.reason == .replayed)
    }

    @Test func anotherMethodIs405() async {
        let response = await endpoint().handle(Self.request(.get), body: []) { _ in }
        #expect(response.status == .methodNotAllowed)
        #expect(response.headerFields[.allow] == "POST")
        #expect(response.headerFields[.cacheControl] == "no-store")
        #expect(Self.json(response.body)["error"] == "invalid_request")
    }

    @Test(arguments: [nil, "application/json", "text/plain", "multipart/form-data; boundary=x"])
    func anotherContentTypeIs400(_ contentType: String?) async {
        let response = await endpoint().handle(Self.request(contentType: contentType), body: Self.form(LogoutTokens.token())) { _ in
            Issue.record("ended sessions")
        }
        #expect(response.status == .badRequest)
        #expect(response.error?.reason == .malformedRequest)
        #expect(response.headerFields[.cacheControl] == "no-store")
    }

    @Test func aBodyWithoutOneLogoutTokenIs400() async {
        let token = LogoutTokens.token()
        let bodies: [(String, LogoutTokenError.Reason)] = [
            ("", .missingToken), ("id_token=x", .missingToken), ("logout_token=", .missingToken),
            ("logout_token=\(token)&logout_token=\(token)", .missingToken), ("logout_token=%zz", .malformedRequest),
        ]
        for (body, reason) in bodies {
            let response = await endpoint().handle(Self.request(), body: Array(body.utf8)) { _ in Issue.record("ended sessions") }
            #expect(response.status == .badRequest)
            #expect(response.error?.reason == reason)
        }
        let large = Array(repeating: UInt8(ascii: "a"), count: BackChannelLogoutEndpoint.maximumBodySize + 1)
        #expect(await endpoint().handle(Self.request(), body: large) { _ in }.error?.reason == .malformedRequest)
    }

    @Test func otherParametersAreIgnored() async {
        let body = Array("state=x&".utf8) + Self.form(LogoutTokens.token())
        #expect(await endpoint().handle(Self.request(), body: body) { _ in }.status == .ok)
    }

    @Test func aFailingLogoutIs400LogoutFailed() async {
        struct SessionStoreDown: Error {}
        let response = await endpoint().handle(Self.request(), body: Self.form(LogoutTokens.token())) { _ in throw SessionStoreDown() }
        #expect(response.status == .badRequest)
        #expect(Self.json(response.body)["error"] == "logout_failed")
        #expect(response.headerFields[.cacheControl] == "no-store")
        #expect(response.logout?.sessionID == "session-1")
    }
}
