// Calling an MCP server (or any RFC 9728 protected resource) from its URL alone: discovery,
// the client's identity, a sign-in bound to the resource, and step-up.

// snippet.hide
import Foundation
import HTTPTypes
import OAuth2
import OAuth2InteractiveSignIn

let store = MemoryTokenStore()
let heldClientID: String? = nil

// snippet.show
// snippet.discover
// A GET without a token; the 401's resource_metadata, else the well-known places; the
// metadata's resource checked against the URL; the first listed authorization server
// discovered (RFC 8414, then OpenID Connect) and its issuer checked.
let mcp = URL(string: "https://mcp.example.com/mcp")!
let found = try await ProtectedResourceDiscovery().discover(resource: mcp)
print(found.issuer, found.scopes)   // the authorization server, the scopes to ask for
// snippet.end

// snippet.identity
// A held client id, else a Client ID Metadata Document, else dynamic registration.
let redirect = URL(string: "http://127.0.0.1:53682/callback")!
let base = found.boundToResource(ClientConfiguration(clientID: heldClientID ?? "", redirectURI: redirect))
let client: OAuth2Client
switch try found.clientIdentity(
    configuredClientID: heldClientID, metadataDocument: URL(string: "https://agent.example.org/oauth/client.json")!)
{
case .configured:
    client = try await OAuth2Client(server: found.server, configuration: base)
case .metadataDocument(let document):
    var configuration = base
    configuration.clientID = document.absoluteString   // the document's URL is the client id
    client = try await OAuth2Client(server: found.server, configuration: configuration)
case .dynamicRegistration:
    let registrar = try await ClientRegistrar(server: found.server)
    let registration = try await registrar.register(found.registrationMetadata(redirectURI: redirect, clientName: "my agent"))
    try await store.saveRegistration(registration, issuer: registrar.issuer)
    client = try registrar.client(for: registration, base: base)
}
// snippet.end

// snippet.session
// Sign in (PKCE, and `resource` on the authorization and token requests), keep the tokens
// under the resource's own account, and step up when a tool needs a wider scope.
let signIn = LoopbackSignIn(port: 53682)
let tokens = try await signIn.signIn(client: client)
let options = TokenSession.Options(stepUp: { client, scopes in
    try await signIn.signIn(client: client, options: AuthorizationOptions(scopes: scopes))
})
let session = try await TokenSession(client: client, tokens: tokens, store: store, account: found.account, options: options)
var call = HTTPRequest(method: .post, url: mcp)
call.headerFields[.contentType] = "application/json"
let (answer, body) = try await session.perform(call, body: Data(#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.utf8))
// snippet.end
