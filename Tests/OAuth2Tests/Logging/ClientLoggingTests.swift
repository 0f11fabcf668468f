import Foundation
import HTTPTypes
import Logging
import Testing
@testable import OAuth2

@Suite struct LoggingTests {
    @Test func oneRedactedLinePerExchange() async throws {
        let log = CapturedLog()
        let transport = StubTransport(json: #"{"access_token":"SECRET-AT","token_type":"Bearer","refresh_token":"SECRET-RT"}"#)
        let client = try Fixtures.client(transport, configuration: Fixtures.configuration(secret: "SECRET-CS", method: .clientSecretPost), logger: log.logger())
        let tokens = try await client.password(username: "alice", password: "SECRET-PW")
        _ = try await client.refresh(tokens)
        #expect(log.lines.filter { $0.contains("POST https://as.example.com/token → 200") }.count == 2)
        #expect(!log.text.contains("SECRET"))
        #expect(log.text.contains("grant_type=password"))
    }
}
