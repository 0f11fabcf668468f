import Foundation
import HTTPTypes
import Logging
import Testing
@testable import OAuth2

@Suite struct InterceptorTests {
    struct Stamp: HTTPInterceptor {
        let seen: CapturedLog
        func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws {
            request.headerFields[HTTPField.Name("X-Trace")!] = "t-1"
            seen.append("send \(kind.rawValue)")
        }
        func didReceive(_ response: HTTPResponse, body: Data, for request: HTTPRequest, kind: RequestKind) async {
            seen.append("received \(response.status.code)")
        }
    }

    struct Veto: HTTPInterceptor {
        struct Stop: Error {}
        func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws { throw Stop() }
    }

    @Test func modifiesRequestsAndObservesResponses() async throws {
        let seen = CapturedLog()
        let transport = StubTransport(json: StubTransport.tokenJSON)
        _ = try await Fixtures.client(transport, interceptors: [Stamp(seen: seen)]).clientCredentials()
        #expect(transport.sent.first?.request.headerFields[HTTPField.Name("X-Trace")!] == "t-1")
        #expect(seen.lines == ["send token", "received 200"])
    }

    @Test func mayStopARequest() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        await #expect(throws: Veto.Stop.self) { try await Fixtures.client(transport, interceptors: [Veto()]).clientCredentials() }
        #expect(transport.sent.isEmpty)
    }
}
