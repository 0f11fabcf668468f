import Foundation
import HTTPTypes
import Logging
import Testing
@testable import OAuth2

@Suite struct RevocationAndIntrospectionTests {
    @Test func revokeSendsTokenAndHint() async throws {
        let transport = StubTransport { _, _ in response(200, "", contentType: nil) }
        try await Fixtures.client(transport).revoke("rt-1", hint: .refreshToken)
        let sent = try #require(transport.sent.first)
        #expect(sent.request.path == "/revoke")
        #expect(sent.form["token"] == "rt-1")
        #expect(sent.form["token_type_hint"] == "refresh_token")
        #expect(sent.request.headerFields[.authorization] != nil)
    }

    @Test func revokeSurfacesErrors() async throws {
        let transport = StubTransport { _, _ in response(503, "", contentType: nil, headers: [.retryAfter: "5"]) }
        do {
            try await Fixtures.client(transport).revoke("rt-1")
            Issue.record("no error")
        } catch let error as OAuth2Error {
            #expect(error.isTransient)
            #expect(error.retryAfter == 5)
        }
    }

    @Test func introspect() async throws {
        let transport = StubTransport(json: #"{"active":true,"scope":"read"}"#)
        let result = try await Fixtures.client(transport).introspect("at-1", hint: .accessToken)
        #expect(result.active)
        #expect(transport.sent.first?.request.path == "/introspect")
    }
}
