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

