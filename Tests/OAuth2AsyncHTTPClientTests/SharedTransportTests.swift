import Foundation
import HTTPTypes
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import Testing

/// `AsyncHTTPClientTransport.shared`: one transport for the process, nobody's to shut down,
/// with the transport's rules (no redirect followed), over a real local server.
@Suite struct SharedTransportTests {
    @Test func oneTransportThatNeverFollowsARedirectAndOutlivesShutdown() async throws {
        #expect(AsyncHTTPClientTransport.shared === AsyncHTTPClientTransport.shared)
        try await LocalHTTPServer.with(handler: { request in
            if request.path == "/moved" {
                return .response(HTTPResponse(status: .found, headerFields: [.location: "/target"]), Data())
            }
            return .json(200, #"{"path":"\#(request.path)"}"#)
        }) { server in
            let transport = AsyncHTTPClientTransport.shared
            let request = HTTPRequest(method: .get, url: server.baseURL.appendingPathComponent("moved"))
            let (moved, _) = try await transport.send(request, body: nil)
            #expect(moved.status == .found, "the redirect is the caller's to judge, never followed")
            #expect(moved.headerFields[.location] == "/target")
            // Shutting it down does nothing: it serves the whole process.
            try await transport.shutdown()
            let (answer, body) = try await AsyncHTTPClientTransport.shared.send(
                HTTPRequest(method: .get, url: server.baseURL.appendingPathComponent("target")), body: nil)
            #expect(answer.status == .ok)
            #expect(String(decoding: body, as: UTF8.self) == #"{"path":"/target"}"#)
        }
    }
}
