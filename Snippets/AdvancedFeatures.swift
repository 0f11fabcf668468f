// Sender-constrained tokens (DPoP, mutual TLS), pushed and signed authorization requests (PAR, JAR),
// JWT client authentication, token exchange, the JWT bearer grant, dynamic registration.

// snippet.hide
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2Web

let issuer = URL(string: "https://id.example.com")!
let redirect = URL(string: "http://127.0.0.1:53682/callback")!
let callbackURL = URL(string: "http://127.0.0.1:53682/callback?code=x&state=y")!
let store = MemoryTokenStore()
let secret = ProcessInfo.processInfo.environment["CLIENT_SECRET"] ?? ""

// snippet.show
// snippet.dpop
var configuration = ClientConfiguration(clientID: "my-cli", redirectURI: redirect, scopes: ["openid", "api"])
configuration.dpop = DPoPOptions(key: try DPoPKey.generate())   // ES256; or .generate(.edDSA)…
configuration.usePushedAuthorizationRequests = true              // PAR even when not required
configuration.requestObject = RequestObjectOptions()             // JAR: parameters in a signed object

let client = try await OAuth2Client(server: .issuer(issuer), configuration: configuration)
let request = try await client.startAuthorization()              // pushed; carries dpop_jkt
// … open request.url, receive callbackURL …
let tokens = try await client.completeAuthorization(callbackURL: callbackURL, request: request)
print(tokens.tokenType, tokens.accessTokenKeyThumbprint ?? "")   // DPoP, the key's RFC 7638 thumbprint
let bound = try await TokenSession(client: client, tokens: tokens)
let (response, _) = try await bound.perform(
    HTTPRequest(method: .get, url: URL(string: "https://api.example.com/me")!))   // with a proof
// snippet.end

// snippet.dpop-service
// A service calling a DPoP API as itself: client credentials, its tokens bound to a key the
// process generates at start (a restarted worker asks for new tokens, bound to its new key).
var worker = ClientConfiguration(clientID: "orders-worker", clientSecret: secret, scopes: ["orders:read"])
worker.dpop = DPoPOptions(key: try DPoPKey.generate())
let workerClient = try await OAuth2Client(server: .issuer(issuer), configuration: worker)
let api = TokenSession(client: workerClient, options: TokenSession.Options(renewal: .clientCredentials()))
// Authorization: DPoP <token> and a fresh proof on every request; the API's use_dpop_nonce
// answered once with its nonce.
let (orders, _) = try await api.perform(HTTPRequest(method: .get, url: URL(string: "https://api.example.com/orders")!))
// snippet.end

// snippet.mutualTLS
// Mutual TLS (RFC 8705): the transport presents the client's certificate; the client
// authenticates with it (tls_client_auth, or self_signed_tls_client_auth) and its tokens
// are bound to it. Requests go to the server's mtls_endpoint_aliases when it has them.
let tls = AsyncHTTPClientTransport.TLSOptions(clientCertificatePath: "client.pem", clientKeyPath: "client.key")
try tls.validate()                                               // the pair is read now
let mtlsTransport = AsyncHTTPClientTransport(tls: tls)
let mtlsClient = try await OAuth2Client(
    server: .issuer(issuer),
    configuration: ClientConfiguration(clientID: "orders-worker", authenticationMethod: .tlsClientAuth, scopes: ["orders:read"]),
    environment: HTTPEnvironment(transport: mtlsTransport))
let mtlsTokens = try await mtlsClient.clientCredentials()      // cnf.x5t#S256 in the token
// The API is called over the same transport, so with the same certificate.
let (mtlsOrders, _) = try await TokenSession(client: mtlsClient, tokens: mtlsTokens)
    .perform(HTTPRequest(method: .get, url: URL(string: "https://api.example.com/orders")!))

// The API's side: behind nginx, which verifies the certificate and forwards it with
// `proxy_set_header X-SSL-Client-Cert $ssl_client_escaped_cert;`. Never trusted by default.
let keys = try TrustedIssuer.KeySource.jwks(URL(string: "https://id.example.com/jwks")!, environment: HTTPEnvironment(transport: mtlsTransport))
let ordersAPI = ResourceServer(
    accessTokens: AccessTokenVerifier(issuers: [TrustedIssuer(issuer: issuer.absoluteString, audiences: ["orders"], keys: keys)]),
    clientCertificates: .forwardedHeader(HTTPField.Name("X-SSL-Client-Cert")!))
// A service that terminates TLS itself uses `.connection` and passes the peer's DER
// certificate: `await ordersAPI.authorize(request, clientCertificate: der, requiredScopes: […])`.
// snippet.end

// snippet.privateKeyJWT
// private_key_jwt (RFC 7523 §2.2): a key from a PEM (PKCS#8, PKCS#1, SEC1) or a JWK file.
var service = ClientConfiguration(clientID: "svc", scopes: ["read"])
service.privateKey = try JWSSigningKey(contentsOf: URL(fileURLWithPath: "client-key.pem"), keyID: "key-1")
service.clientAssertion.audience = .tokenEndpoint                 // what `aud` names (the issuer by default)
// Or client_secret_jwt: a secret, and service.authenticationMethod = .clientSecretJWT.
// snippet.end

// snippet.exchange
// Token exchange (RFC 8693): a token for another service; the session keeps its own.
let session = try await TokenSession(client: client, tokens: tokens, store: store)
let downstream = try await session.exchange(audiences: ["https://backend.example.com"])
print(downstream.issuedTokenType, downstream.tokenSet?.expiresAt ?? .distantFuture)

// The JWT bearer grant (RFC 7523 §2.1): an assertion you have, or one signed here.
let signer = try JWSSigningKey(contentsOf: URL(fileURLWithPath: "idp-key.pem"), keyID: "k1")
let delegated = try await client.jwtBearer(
    signing: client.jwtBearerAssertion(issuer: "https://idp.example.com", subject: "alice"), with: signer)
// snippet.end

// snippet.registration
// Dynamic client registration (RFC 7591) and management (RFC 7592).
let registrar = try await ClientRegistrar(server: .issuer(issuer))
let registration = try await registrar.register(RegistrationMetadata(
    redirectURIs: [redirect], grantTypes: ["authorization_code", "refresh_token"],
    clientName: "my tool", scopes: ["openid", "profile"]))
try await store.saveRegistration(registration, issuer: registrar.issuer)   // secret + registration token
let registered = try registrar.client(for: registration)                     // ready to sign in
let current = try await registrar.read(registration)
try await registrar.delete(current)
// snippet.end
// snippet.hide
_ = (response, delegated, registered, orders)
