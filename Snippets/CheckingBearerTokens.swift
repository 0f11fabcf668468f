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

/// What the setup below throws when the deployment's settings are missing.
struct SetupError: Error {}

func dpopOnlyServer(client: OAuth2Client) throws -> ResourceServer {
    // snippet.show
    // snippet.client-keys
    // The provider's keys as the API's own client holds them (a client made by discovery
    // reads them from the jwks_uri; nil when the provider publishes none): one cache and one
    // fetch for both, and the issuer exactly as discovery checked it.
    guard let keySet = client.keySet, let issuer = client.metadata.issuer else { throw SetupError() }
    let verifier = AccessTokenVerifier(issuers: [
        TrustedIssuer(issuer: issuer, audiences: ["https://api.example.com"], keys: .cache(keySet))
    ])
    // snippet.end
    // snippet.dpop-only
    // The nonce key every replica shares: 32 random bytes in base64 (`openssl rand -base64 32`)
    // from the deployment's secrets, so that a nonce one replica issued is good on all of them.
    // SymmetricKey is swift-crypto's (`import Crypto`).
    let nonceKeyText = try String(contentsOfFile: "/run/secrets/dpop-nonce-key", encoding: .utf8)
    guard let nonceKey = Data(base64Encoded: nonceKeyText.trimmingCharacters(in: .whitespacesAndNewlines)), nonceKey.count == 32
    else { throw SetupError() }
    let server = ResourceServer(
        accessTokens: verifier,
        dpop: DPoPProofVerifier(
            publicBaseURL: URL(string: "https://api.example.com")!,
            nonces: DPoPServerNonces(secret: SymmetricKey(data: nonceKey))),
        acceptsBearerTokens: false)  // DPoP only: `Authorization: Bearer …` gets 401
    // snippet.end
    // snippet.hide
    return server
}
