#if MCP
import Foundation
import MCP
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The MCP Swift SDK's own OAuth client (`OAuthAuthorizer`, 0.12.1) against the example MCP
/// server with its embedded provider: what the other Swift implementation does with the
/// same server — refused on plain HTTP, signed in on HTTPS (a CA of the test's own).
@Suite(.serialized) struct SDKOAuthAuthorizerJourneyTests {
    /// Plays the browser for the SDK's authorization-code flow: the embedded provider signs
    /// the demo user in at once, so the authorization URL answers with the redirect.
    final class RedirectFollower: OAuthAuthorizationDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var presented: [URL] = []
        private let transport: any HTTPTransport
        var urls: [URL] { lock.withLock { presented } }

        /// A browser that fetches through `transport`.
        init(transport: any HTTPTransport = URLSessionTransport.shared) { self.transport = transport }

        func presentAuthorizationURL(_ url: URL) async throws -> URL {
            lock.withLock { presented.append(url) }
            return try await ExampleMCPServer.redirect(from: url, through: transport)
        }
    }

    /// A query parameter of `url`.
    static func parameter(_ name: String, of url: URL) -> String? {
        URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == name }?.value
    }

    /// The SDK's own OAuth, unchanged, signing in to the example server's embedded provider
    /// served over HTTPS with a CA made for this test: discovery from the `401` (RFC 9728,
    /// then RFC 8414), an authorization code with PKCE bound to the resource (RFC 8707) for
    /// the challenged scope only, tools listed and called, then `write_note`'s `403
    /// insufficient_scope` answered with a second sign-in for the union of the scopes — once:
    /// the wider token serves the next call; persistence through a shared `TokenStorage`, a
    /// refused token refreshed once. That full journey needs CryptoKit (Apple platforms): on
    /// Linux the SDK makes no PKCE S256 challenge, and the test checks that it reaches the
    /// provider over HTTPS and then fails before any sign-in. The SDK's HTTP to the provider goes through
    /// ``ProviderTLSURLProtocol`` (its `URLSession` on Linux cannot trust a CA of a run's
    /// own); its MCP requests go through the SSE relay, which is the server's public URL
    /// (`OAUTH2_EXAMPLE_PUBLIC_URL`), so that the resource the SDK checks is the one it calls.
    @Test func theSDKsOwnOAuthAgainstTheProviderOnHTTPS() async throws {
        let authority = try await RunCertificateAuthority()
        let target = SSEUnwrappingRelay.Target()
        try await SSEUnwrappingRelay.with(target: target, path: "/mcp") { relay in
            let environment = [
                "OAUTH2_EXAMPLE_PROVIDER_TLS_CERTIFICATE": authority.serverCertificatePath,
                "OAUTH2_EXAMPLE_PROVIDER_TLS_KEY": authority.serverKeyPath,
                "OAUTH2_EXAMPLE_PROVIDER_TLS_CA": authority.rootPath,
                "OAUTH2_EXAMPLE_PUBLIC_URL": relay.server.baseURL.absoluteString,
            ]
            try await ExampleMCPServer.with(environment: environment) { server in
                target.set(server.address)
                #expect(server.issuer.scheme == "https")
                #expect(server.resource == relay.endpoint)
                // What refused the plain-HTTP provider accepts this one.
                try OAuthURLValidator().validateAuthorizationServer(server.issuer, context: "Authorization server issuer")
                try await AsyncHTTPClientTransport.withTransport(tls: .init(caBundlePath: authority.rootPath)) { https in
                    try await ProviderTLSURLProtocol.with(origin: server.issuer, transport: https) {
                        let browser = RedirectFollower(transport: https)
                        let configuration = OAuthConfiguration(
                            grantType: .authorizationCode, authentication: .none(clientID: server.clientID),
                            authorizationRedirectURI: URL(string: "http://127.0.0.1:53682/callback")!, authorizationDelegate: browser)
                        // The SDK's storage (in memory, its default), kept to look into and share.
                        let storage = InMemoryTokenStorage()
                        let transport = HTTPClientTransport(
                            endpoint: relay.endpoint, configuration: ProviderTLSURLProtocol.sessionConfiguration(), streaming: false,
                            authorizer: OAuthAuthorizer(configuration: configuration, tokenStorage: storage))
                        let mcp = Client(name: "oauth2-mcp-tests-sdk-oauth", version: "1.0.0")
                        #if !canImport(CryptoKit)
                        // Without CryptoKit (Linux) the SDK cannot make a PKCE S256 challenge
                        // (0.12.1's PKCE.makeChallenge hashes with CryptoKit only): it reaches
                        // the provider over HTTPS (its discovery), then fails the authorization
                        // code flow before presenting any URL.
                        do {
                            _ = try await withinHangBound("initialize") { try await mcp.connect(transport: transport) }
                            Issue.record("the SDK signed in without CryptoKit")
                        } catch {
                            #expect(String(describing: error).contains("PKCE S256 code challenge generation is unavailable"), "\(error)")
                        }
                        #expect(browser.urls.isEmpty)
                        #expect(ProviderTLSURLProtocol.loadedRequests > 0)
                        await mcp.disconnect()
                        if browser.urls.isEmpty, ProviderTLSURLProtocol.loadedRequests > 0 {
                            IntegrationLog.append("mcp", test: "swift-sdk-oauth")
                        }
                        #else
                        _ = try await withinHangBound("initialize") { try await mcp.connect(transport: transport) }
                        // One sign-in, for the scope the 401 named, bound to the resource.
                        #expect(browser.urls.count == 1)
                        let first = try #require(browser.urls.first)
                        #expect(first.absoluteString.hasPrefix(server.issuer.absoluteString))
                        #expect(Self.parameter("scope", of: first) == "mcp:read")
                        #expect(Self.parameter("resource", of: first) == relay.endpoint.absoluteString)
                        #expect(Self.parameter("code_challenge_method", of: first) == "S256")

                        let tools = try await withinHangBound("tools/list") { try await mcp.listTools().tools }
                        #expect(Set(tools.map(\.name)) == ["echo", "list_notes", "write_note"])
                        let echoed: ToolResult = try await withinHangBound("echo") { try await mcp.callTool(name: "echo", arguments: ["text": "hello"]) }
                        #expect(TokenSessionAuthorizerJourneyTests.text(echoed.content) == "hello")
                        #expect(browser.urls.count == 1)

                        // write_note needs mcp:write: 403 insufficient_scope, a second sign-in for
                        // the union of the scopes, the call again.
                        let noted: ToolResult = try await withinHangBound("write_note") { try await mcp.callTool(name: "write_note", arguments: ["text": "first"]) }
                        #expect(TokenSessionAuthorizerJourneyTests.text(noted.content) == "Noted (1 notes).")
                        #expect(browser.urls.count == 2)
                        let second = try #require(browser.urls.last)
                        #expect(Self.parameter("scope", of: second).map { Set($0.split(separator: " ").map(String.init)) } == ["mcp:read", "mcp:write"])
                        // The wider token is kept: the next call needs no sign-in.
                        let again: ToolResult = try await withinHangBound("write_note again") { try await mcp.callTool(name: "write_note", arguments: ["text": "second"]) }
                        #expect(TokenSessionAuthorizerJourneyTests.text(again.content) == "Noted (2 notes).")
                        #expect(browser.urls.count == 2)
                        await mcp.disconnect()

                        // Persistence is the app's: a second authorizer on the same TokenStorage
                        // (as an app restoring a store of its own would) calls tools without a
                        // sign-in. The SDK's only storage keeps tokens in memory.
                        let restored = Client(name: "oauth2-mcp-tests-sdk-oauth", version: "1.0.0")
                        let restoredTransport = HTTPClientTransport(
                            endpoint: relay.endpoint, configuration: ProviderTLSURLProtocol.sessionConfiguration(), streaming: false,
                            authorizer: OAuthAuthorizer(configuration: configuration, tokenStorage: storage))
                        _ = try await withinHangBound("initialize again") { try await restored.connect(transport: restoredTransport) }
                        let reused: ToolResult = try await withinHangBound("echo again") { try await restored.callTool(name: "echo", arguments: ["text": "again"]) }
                        #expect(TokenSessionAuthorizerJourneyTests.text(reused.content) == "again")
                        #expect(browser.urls.count == 2)

                        // Refresh-token rotation: a token the server does not know (as after a
                        // revocation) is answered 401 invalid_token; the SDK refreshes once, stores
                        // the rotated refresh token, and retries — no sign-in.
                        let stored = try #require(storage.load())
                        let signedInRefreshToken = try #require(stored.refreshToken)
                        storage.save(OAuthAccessToken(
                            value: "unknown-to-the-server", tokenType: stored.tokenType, expiresAt: stored.expiresAt, scopes: stored.scopes,
                            authorizationServer: stored.authorizationServer, refreshToken: signedInRefreshToken, clientID: stored.clientID))
                        let refreshed: ToolResult = try await withinHangBound("echo after a refused token") {
                            try await restored.callTool(name: "echo", arguments: ["text": "refreshed"])
                        }
                        #expect(TokenSessionAuthorizerJourneyTests.text(refreshed.content) == "refreshed")
                        #expect(browser.urls.count == 2)
                        let renewed = try #require(storage.load())
                        #expect(renewed.value != "unknown-to-the-server")
                        #expect(renewed.refreshToken != nil && renewed.refreshToken != signedInRefreshToken)
                        await restored.disconnect()
                        // Counted on scripts/test's integration line (mcp) when the journey held.
                        if TokenSessionAuthorizerJourneyTests.text(refreshed.content) == "refreshed", browser.urls.count == 2 {
                            IntegrationLog.append("mcp", test: "swift-sdk-oauth")
                        }
                        #endif
                    }
                }
            }
        }
    }

    /// The SDK checks that the protected resource metadata names the resource it calls
    /// (RFC 9728 §3.3): reached through a relay whose URL is not the server's resource
    /// identifier, it refuses before any sign-in.
    @Test func theSDKsOwnOAuthRefusesMetadataForAnotherResource() async throws {
        let authority = try await RunCertificateAuthority()
        let environment = [
            "OAUTH2_EXAMPLE_PROVIDER_TLS_CERTIFICATE": authority.serverCertificatePath,
            "OAUTH2_EXAMPLE_PROVIDER_TLS_KEY": authority.serverKeyPath,
            "OAUTH2_EXAMPLE_PROVIDER_TLS_CA": authority.rootPath,
        ]
        try await ExampleMCPServer.with(environment: environment) { server in
            try await SSEUnwrappingRelay.with(to: server.resource) { relay in
                #expect(relay.endpoint != server.resource)
                try await AsyncHTTPClientTransport.withTransport(tls: .init(caBundlePath: authority.rootPath)) { https in
                    try await ProviderTLSURLProtocol.with(origin: server.issuer, transport: https) {
                        let browser = RedirectFollower(transport: https)
                        let configuration = OAuthConfiguration(
                            grantType: .authorizationCode, authentication: .none(clientID: server.clientID),
                            authorizationRedirectURI: URL(string: "http://127.0.0.1:53682/callback")!, authorizationDelegate: browser)
                        let transport = HTTPClientTransport(
                            endpoint: relay.endpoint, configuration: ProviderTLSURLProtocol.sessionConfiguration(), streaming: false,
                            authorizer: OAuthAuthorizer(configuration: configuration))
                        let mcp = Client(name: "oauth2-mcp-tests-sdk-oauth", version: "1.0.0")
                        do {
                            _ = try await withinHangBound("initialize") { try await mcp.connect(transport: transport) }
                            Issue.record("the SDK signed in for metadata naming another resource")
                        } catch {
                            // The transport reports it as an internal MCP error carrying the SDK's message.
                            #expect(String(describing: error).contains("Protected resource metadata resource mismatch"), "\(error)")
                        }
                        #expect(browser.urls.isEmpty)
                        await mcp.disconnect()
                    }
                }
            }
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
