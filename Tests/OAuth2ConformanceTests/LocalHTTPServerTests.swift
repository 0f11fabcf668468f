import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

@Suite struct LocalHTTPServerTests {
    @Test func answersCloses() async throws {
        try await LocalHTTPServer.with(handler: { request in
            if request.path == "/reset" { return .close }
            return .json(201, #"{"path":"\#(request.path)","a":"\#(request.form["a"] ?? "")"}"#)
        }) { server in
            let transport = URLSessionTransport()
            var request = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/x?q=1")
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            let (response, body) = try await transport.send(request, body: Data("a=b+c".utf8))
            #expect(response.status.code == 201)
            #expect(String(decoding: body, as: UTF8.self) == #"{"path":"/x","a":"b c"}"#)
            let reset = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/reset")
            await #expect(throws: OAuth2Error.self) { try await transport.send(reset, body: nil) }
        }
    }
}

@Suite struct URLSessionChallengeTests {
    /// RFC 6749 §5.2: a wrong secret sent with Basic gets a 401 with a Basic challenge.
    /// FoundationNetworking (Swift 6.3.1) never finishes such a request by itself; the
    /// transport must hand the 401 back at once, as `invalid_client`.
    @Test func aBasicChallengeComesBackAsInvalidClient() async throws {
        try await LocalHTTPServer.with(handler: { _ in
            .json(401, #"{"error":"invalid_client","error_description":"bad secret"}"#, headers: [.wwwAuthenticate: #"Basic realm="token""#])
        }) { server in
            let metadata = ServerMetadata(issuer: server.baseURL, tokenEndpoint: server.baseURL.appendingPathComponent("token"))
            let client = try OAuth2Client(
                metadata: metadata,
                configuration: ClientConfiguration(clientID: "c", clientSecret: "wrong", authenticationMethod: .clientSecretBasic),
                transport: URLSessionTransport(options: TransportOptions(timeout: .seconds(20))))
            let started = ContinuousClock.now
            let error = await #expect(throws: OAuth2Error.self) { try await client.clientCredentials() }
            #expect(error?.code == .invalidClient)
            #expect(error?.statusCode == 401)
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }
}
