// Enterprise-managed authorization of an MCP server (SEP-990, the Identity Assertion JWT
// Authorization Grant): the user's ID token from the organisation's identity provider is
// exchanged there for an ID-JAG, which the MCP server's authorization server takes for an
// access token — no sign-in at the MCP server.

// snippet.hide
import Foundation
import OAuth2

let idpTokens = TokenSet(accessToken: "", idToken: "")   // from the sign-in at the identity provider

// snippet.show
// snippet.flow
// Two clients, each with its own registration; the authorization server is configuration,
// not discovery: the ID-JAG goes only to the server whose issuer it names.
let identityProvider = try await OAuth2Client(
    server: .issuer(URL(string: "https://idp.example.com")!),
    configuration: ClientConfiguration(clientID: "agent-at-idp", clientSecret: "idp-secret"))
let authorizationServer = try await OAuth2Client(
    server: .issuer(URL(string: "https://auth.mcp.example.com")!),
    configuration: ClientConfiguration(clientID: "agent-at-mcp", clientSecret: "mcp-secret"))

let authorization = IdentityAssertionAuthorization(
    identityProvider: identityProvider, authorizationServer: authorizationServer,
    resource: URL(string: "https://mcp.example.com/mcp")!, scopes: ["mcp:read"])
let mcpTokens = try await authorization.tokens(idToken: idpTokens.idToken!)
// snippet.end

// snippet.legs
// The same in two steps, to keep or inspect the ID-JAG (its description never shows it).
let grant = try await identityProvider.requestIdentityAssertionGrant(
    idToken: idpTokens.idToken!, audience: try authorization.audience(),
    resource: URL(string: "https://mcp.example.com/mcp")!, scopes: ["mcp:read"])
print(grant)   // IdentityAssertionGrant(assertion: <redacted>, audience: https://auth.mcp.example.com, …)
let sameTokens = try await authorizationServer.jwtBearer(grant)
// snippet.end
_ = (mcpTokens, sameTokens)
