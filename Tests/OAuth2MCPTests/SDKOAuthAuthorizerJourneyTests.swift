#if MCP
import Foundation
import MCP
import OAuth2
import OAuth2TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The MCP Swift SDK's own OAuth client (`OAuthAuthorizer`, 0.12.1) against the example MCP
/// server with its embedded provider: what the other Swift implementation does with the
/// same server.
@Suite(.serialized) struct SDKOAuthAuthorizerJourneyTests {
    /// Plays the browser for the SDK's authorization-code flow: the embedded provider signs
    /// the demo user in at once, so the authorization URL answers with the redirect.
    final class RedirectFollower: OAuthAuthorizationDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var presented: [URL] = []
        var urls: [URL] { lock.withLock { presented } }

        func presentAuthorizationURL(_ url: URL) async throws -> URL {
            lock.withLock { presented.append(url) }
            return try await ExampleMCPServer.redirect(from: url)
        }
    }

    /// The SDK's authorizer refuses an authorization server on plain HTTP, loopback or not:
    /// its allowance for loopback (`allowLoopbackHTTPAuthorizationServerEndpoints`) is
    /// `package`, out of an application's reach. The example server's embedded provider is
    /// `http://127.0.0.1:<port>`, so the SDK never gets to sign in: the connection fails
    /// before any authorization URL is presented. swift-oauth2 allows plain HTTP on loopback
    /// hosts only (RFC 8252), which is what a local development server is.
    @Test func theSDKsOwnOAuthRefusesTheEmbeddedProviderOnLoopbackHTTP() async throws {
        try await ExampleMCPServer.with { server in
            #expect(server.issuer.scheme == "http")
            #expect(throws: OAuthAuthorizationError.self) {
                try OAuthURLValidator().validateAuthorizationServer(server.issuer, context: "Authorization server issuer")
            }
            let browser = RedirectFollower()
            let configuration = OAuthConfiguration(
                grantType: .authorizationCode, authentication: .none(clientID: server.clientID),
                authorizationRedirectURI: URL(string: "http://127.0.0.1:53682/callback")!, authorizationDelegate: browser)
            let transport = HTTPClientTransport(endpoint: server.resource, streaming: false, authorizer: OAuthAuthorizer(configuration: configuration))
            let client = Client(name: "oauth2-mcp-tests-sdk-oauth", version: "1.0.0")
            await #expect(throws: (any Error).self) {
                _ = try await withinHangBound("initialize") { try await client.connect(transport: transport) }
            }
            #expect(browser.urls.isEmpty)
            // The same client, through swift-oauth2's discovery, finds and accepts that issuer.
            let (_, found) = try await server.client()
            #expect(found.issuer == server.issuer)
            await client.disconnect()
        }
    }
}
#endif
