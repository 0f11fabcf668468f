import Foundation
import HTTPTypes
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import Testing

/// A server that sends its head at once and then drips the body, or declares more body than
/// it sends, over a real socket: each transport gives up at the client's total deadline
/// with a transient timeout and closes the connection. The deadline is short (2 s) so the
/// tests are quick; the watchdog (60 s) only catches a hang.
@Suite struct SlowServerTests {
    static let transports = ["urlSession", "asyncHTTPClient"]

    static func transport(_ name: String) -> any HTTPTransport {
        name == "urlSession" ? URLSessionTransport() : AsyncHTTPClientTransport.sharedForSessionTests
    }

    static func client(_ server: LocalHTTPServer, transport: any HTTPTransport, deadline: Duration = .seconds(2)) throws -> OAuth2Client {
        let configuration = ClientConfiguration(clientID: "client-1", clientSecret: "s3cret-value")
        let metadata = ServerMetadata(
            issuer: server.baseURL, tokenEndpoint: server.baseURL.appendingPathComponent("token"),
            userInfoEndpoint: server.baseURL.appendingPathComponent("userinfo"))
        return try OAuth2Client(metadata: metadata, configuration: configuration, environment: HTTPEnvironment(transport: transport, requestDeadline: deadline))
    }

    /// A body long enough to take minutes at one byte per 250 ms.
    static let tokenBody = Data((#"{"access_token":"at-dripped","token_type":"Bearer","padding":""# + String(repeating: "x", count: 2000) + #""}"#).utf8)
    static let ok = HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"])

    /// Waits until `condition` holds; fails after a generous watchdog.
    static func eventually(_ what: String, _ condition: () -> Bool) async throws {
        let start = ContinuousClock.now
        while !condition() {
            if ContinuousClock.now - start > .seconds(60) {
                Issue.record("not within 60 s: \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test(arguments: transports)
    func aDrippingTokenEndpointEndsAtTheDeadline(transportName: String) async throws {
        try await LocalHTTPServer.with(handler: { _ in .drip(Self.ok, Self.tokenBody, every: .milliseconds(250)) }) { server in
            let client = try Self.client(server, transport: Self.transport(transportName))
            await #expect {
                _ = try await client.clientCredentials()
            } throws: { error in
                guard let error = error as? OAuth2Error else { return false }
                return error.code == .timeout && error.source == .transport && error.isTransient
            }
            // The abandoned request's connection is closed, not left to drip.
            try await Self.eventually("the connection closed") { server.closedConnections == server.acceptedConnections && server.acceptedConnections > 0 }
        }
    }

    @Test(arguments: transports)
    func aDrippingUserInfoEndpointEndsAtTheDeadlineToo(transportName: String) async throws {
        try await LocalHTTPServer.with(handler: { _ in .drip(Self.ok, Self.tokenBody, every: .milliseconds(250)) }) { server in
            let client = try Self.client(server, transport: Self.transport(transportName))
            await #expect {
                _ = try await client.userInfo(accessToken: "at-1", expectedSubject: nil)
            } throws: { error in
                (error as? OAuth2Error)?.code == .timeout
            }
        }
    }

    @Test(arguments: transports)
    func aSilentServerEndsAtTheDeadline(transportName: String) async throws {
        try await LocalHTTPServer.with(handler: { _ in .hang }) { server in
            let client = try Self.client(server, transport: Self.transport(transportName))
            await #expect {
                _ = try await client.clientCredentials()
            } throws: { error in
                (error as? OAuth2Error)?.code == .timeout && (error as? OAuth2Error)?.isTransient == true
            }
            try await Self.eventually("the connection closed") { server.closedConnections == server.acceptedConnections && server.acceptedConnections > 0 }
        }
    }

    @Test(arguments: transports)
    func aBodyShorterThanItsDeclaredLengthIsATransientNetworkError(transportName: String) async throws {
        try await LocalHTTPServer.with(handler: { _ in .truncated(Self.ok, Self.tokenBody.prefix(40), declaredLength: Self.tokenBody.count) }) { server in
            let client = try Self.client(server, transport: Self.transport(transportName), deadline: .seconds(30))
            await #expect {
                _ = try await client.clientCredentials()
            } throws: { error in
                guard let error = error as? OAuth2Error else { return false }
                return error.source == .transport && error.isTransient
            }
        }
    }
}
