// An API that checks access tokens (OAuth2Web's resource server): JWT access tokens from a
// trusted issuer, opaque tokens through introspection, DPoP-bound tokens with their proofs.

// snippet.hide
import Crypto
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web

let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/orders", headerFields: [:])
let secret = "…"
let sharedSecret = SymmetricKey(size: .bits256)

// snippet.show
// snippet.jwt
let issuer = try TrustedIssuer(
    issuer: "https://id.example.com",
    audiences: ["https://api.example.com"],
    keys: .jwks(URL(string: "https://id.example.com/jwks")!))
let verifier = AccessTokenVerifier(issuers: [issuer])
let server = ResourceServer(accessTokens: verifier, realm: "orders")

// For each request (an HTTPRequest of swift-http-types):
switch await server.authorize(request, requiredScopes: ["orders:read"]) {
case .authorized(let access):
    // Add access.responseHeaderFields to the response.
    print(access.token.subject ?? "", access.token.clientID ?? "", access.token.scopes)
case .refused(let challenge):
    // Respond with challenge.status and challenge.headerFields.
    print(challenge.status, challenge.headerFields)
}
// snippet.end

// snippet.introspection
let client = try await OAuth2Client(
    server: .issuer(URL(string: "https://id.example.com")!),
    configuration: ClientConfiguration(clientID: "orders-api", clientSecret: secret))
// The authorization server says "active" for any token it issued, to any client, for any API:
// say which tokens are for this one.
let opaque = ResourceServer(
    introspection: TokenIntrospector(
        client: client, accepting: .audiences(["https://api.example.com"]), policy: .init(maximumLifetime: 30)))
// snippet.end

// snippet.introspection-without-aud
// A server whose introspection answers carry no `aud` (django-oauth-toolkit): name the
// clients this API serves (or the scopes that grant it).
let served = TokenIntrospector(client: client, accepting: .clientIDs(["orders-web", "orders-cli"]))
// snippet.end

// snippet.dpop
let dpop = DPoPProofVerifier(
    publicBaseURL: URL(string: "https://api.example.com")!,
    nonces: DPoPServerNonces(secret: sharedSecret))
let bound = ResourceServer(accessTokens: verifier, dpop: dpop)
// snippet.end

// snippet.mcp
// An MCP server at https://mcp.example.com/mcp: its URL is its resource identifier. Clients
// ask for tokens with resource=<identifier>; a token whose aud names it is accepted.
let mcpIssuer = try TrustedIssuer(
    issuer: "https://id.example.com",
    audiences: [],  // no other name: the resource identifier below is the one audience
    keys: .jwks(URL(string: "https://id.example.com/jwks")!))
let mcp = try ResourceServer(
    resource: ProtectedResource(
        identifier: URL(string: "https://mcp.example.com/mcp")!,
        scopesSupported: ["tools:read", "tools:call"],
        name: "Example MCP server"),
    accessTokens: AccessTokenVerifier(issuers: [mcpIssuer]))
// Serves GET /.well-known/oauth-protected-resource/mcp (nil for any other request):
let metadataAnswer = mcp.metadataResponse(for: request)
// snippet.end

// snippet.hide
_ = (opaque, served, bound, metadataAnswer)
