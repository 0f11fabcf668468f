#if MCP
import MCP
import OAuth2
import OAuth2MCP
import Foundation

/// The OAuth2MCP landing page's example, compiled as the page shows it (scripts/check-readme
/// finds the page's lines here). `TokenSessionAuthorizerJourneyTests` run the same steps
/// against the example MCP server.
enum LandingPageExample {
    /// Signs in for `scopes` (the granted ones, or the union a step-up asks for).
    typealias SignIn = @Sendable (OAuth2Client, [String]) async throws -> TokenSet

    static func connect(mcp: URL, profileDirectory: URL, configuration: ClientConfiguration, signIn signingIn: @escaping SignIn) async throws {
        @Sendable func signIn(_ client: OAuth2Client, _ scopes: [String] = []) async throws -> TokenSet {
            try await signingIn(client, scopes)
        }
        let found = try await ProtectedResourceDiscovery().discover(resource: mcp)
        let client = try await OAuth2Client(server: found.server, configuration: found.boundToResource(configuration))
        let store = try FileTokenStore(directory: profileDirectory)
        let options = TokenSession.Options(stepUp: { client, scopes in try await signIn(client, scopes) })
        let session: TokenSession
        if let restored = try await TokenSession.restore(client: client, store: store, account: found.account, options: options) {
            session = restored
        } else {
            session = try await TokenSession(client: client, tokens: try await signIn(client), store: store, account: found.account, options: options)
        }

        let authorizer = TokenSessionAuthorizer(session: session, signIn: { client in try await signIn(client) })
        let transport = HTTPClientTransport(
            endpoint: mcp, authorizer: authorizer,
            requestModifier: authorizer.requestModifier)   // the DPoP proof of each request
        let mcpClient = Client(name: "my-agent", version: "1.0.0")
        try await mcpClient.connect(transport: transport)
    }
}
#endif
