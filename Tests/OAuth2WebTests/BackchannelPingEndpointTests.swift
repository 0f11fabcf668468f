import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE
import OAuth2Web
import Testing

/// The CIBA notification endpoint's answers in ping mode (OpenID Connect CIBA Core §10.2):
/// 204 for the server's ping, 401 with a Bearer challenge and nothing else for a caller
/// without the request's token, 405/413/415/400 for the rest; never cached, nothing secret
/// in a body. The request is started through the client, as an application does.
@Suite struct BackchannelPingEndpointTests {
    static let authReqID = "auth-req-0123456789"

    /// An inbox holding one request started through a client, and that request's token.
    static func started() async throws -> (BackchannelPingInbox, String) {
        let transport = RecordingTransport { _, _ in
            (HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]),
             Data(#"{"auth_req_id":"\#(authReqID)","expires_in":600}"#.utf8))
        }
        let metadata = try ServerMetadata(fields: [
            "issuer": "https://id.example.com", "token_endpoint": "https://id.example.com/token",
            "backchannel_authentication_endpoint": "https://id.example.com/bc-authorize",
            "backchannel_token_delivery_modes_supported": ["ping"],
        ])
        let client = try OAuth2Client(
            metadata: metadata, configuration: ClientConfiguration(clientID: "teller", clientSecret: "secret"),
            environment: HTTPEnvironment(transport: transport, retryPolicy: .never))
        let inbox = BackchannelPingInbox()
        let authentication = try await client.startBackchannelAuthentication(
            BackchannelAuthenticationRequest(hint: .loginHint("alice")), pingInbox: inbox)
        return (inbox, try #require(authentication.clientNotificationToken))
    }

    static func request(_ method: HTTPRequest.Method = .post, token: String?, contentType: String? = "application/json") -> HTTPRequest {
        var request = HTTPRequest(method: method, scheme: "https", authority: "teller.example.com", path: "/ciba/ping")
        if let token { request.headerFields[.authorization] = "Bearer \(token)" }
        if let contentType { request.headerFields[.contentType] = contentType }
        return request
    }

    static let body = Array(#"{"auth_req_id":"\#(authReqID)"}"#.utf8)

    @Test func theServersPingIsAnswered204NoContent() async throws {
        let (inbox, token) = try await Self.started()
        let answer = BackchannelPingEndpoint(inbox: inbox).handle(Self.request(token: token), body: Self.body)
        #expect(answer.status == .noContent)
        #expect(answer.body.isEmpty && answer.error == nil)
        #expect(answer.headerFields[.cacheControl] == "no-store")
        #expect(answer.response.status == .noContent)
    }

    @Test func aCallerWithoutTheTokenGets401AndABearerChallengeOnly() async throws {
        let (inbox, token) = try await Self.started()
        let endpoint = BackchannelPingEndpoint(inbox: inbox)
        for (sent, challenge) in [(nil, "Bearer"), ("wrong-0123456789abcdefghijklmnop", #"Bearer error="invalid_token""#)] {
            let answer = endpoint.handle(Self.request(token: sent, contentType: "text/plain"), body: Self.body)
            #expect(answer.status == .unauthorized)
            #expect(answer.headerFields[.wwwAuthenticate] == challenge)
            #expect(answer.body.isEmpty, "nothing said about the rest of the request")
            #expect(answer.headerFields[.cacheControl] == "no-store")
        }
        #expect(endpoint.handle(Self.request(token: token), body: Self.body).status == .noContent, "the request is still pending")
    }

    @Test func otherRefusalsSayWhichRuleFailedAndNothingSecret() async throws {
        let (inbox, token) = try await Self.started()
        let endpoint = BackchannelPingEndpoint(inbox: inbox)
        let get = endpoint.handle(Self.request(.get, token: token), body: [])
        #expect(get.status == .methodNotAllowed && get.headerFields[.allow] == "POST")
        let cases: [(HTTPRequest, [UInt8], HTTPResponse.Status)] = [
            (Self.request(token: token, contentType: "application/x-www-form-urlencoded"), Self.body, .unsupportedMediaType),
            (Self.request(token: token), Array(repeating: UInt8(ascii: " "), count: 100_000), .contentTooLarge),
            (Self.request(token: token), Array(#"{"auth_req_id":"other-request"}"#.utf8), .badRequest),
            (Self.request(token: token), Array(#"{"auth_req_id":"#.utf8), .badRequest),
        ]
        for (request, body, status) in cases {
            let answer = endpoint.handle(request, body: body)
            #expect(answer.status == status)
            #expect(answer.headerFields[.contentType] == "application/json")
            let text = String(decoding: answer.body, as: UTF8.self)
            #expect(text.contains(#""error":"invalid_request""#))
            #expect(!text.contains(token) && !text.contains(Self.authReqID) && !text.contains("other-request"))
        }
    }
}
