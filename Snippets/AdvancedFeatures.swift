// Sender-constrained tokens (DPoP), pushed and signed authorization requests (PAR, JAR),
// JWT client authentication, token exchange, the JWT bearer grant, dynamic registration,
// encrypted ID tokens, UserInfo and introspection answers, encrypted request objects.
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
let notificationRequest = HTTPRequest(method: .post, scheme: "https", authority: "teller.example.com", path: "/ciba/ping")
let notificationBody: [UInt8] = []

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
// certificate: `await ordersAPI.authorize(request, clientCertificate: der, requiredScopes: […])`;
// HummingbirdResourceServerMiddleware and VaporResourceServerMiddleware do it for you.
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

// snippet.encryption
// Encrypted ID tokens, UserInfo and introspection answers (JWE): the decryption keys kept in a
// private JWK set file, beside the signing keys; their public halves registered (`use: enc`)
// with the algorithms the server encrypts with.
let decryptionKeys = try JWEDecryptionKey.keys(jwkSetFile: URL(fileURLWithPath: "client-keys.jwks.json"))
var sealed = ClientConfiguration(clientID: "my-app", clientSecret: secret, redirectURI: redirect, scopes: ["openid"])
sealed.encryption = EncryptionOptions(
    decryptionKeys: decryptionKeys,                                // the new and the old during a rotation
    idToken: .registered(.rsaOAEP256, .a256GCM),                   // id_token_encrypted_response_alg/enc
    userInfo: .registered(.rsaOAEP256, .a256GCM),
    introspection: .registered(.ecdhESA128KW, .a128CBCHS256),      // introspection_encrypted_response_alg/enc
    requiresEncryptedIDTokens: true,                               // a plain ID token is a downgrade
    requiresEncryptedIntrospection: true)
let metadata = RegistrationMetadata(redirectURIs: [redirect], clientName: "my app")
print(sealed.encryption?.publicKeys.jsonData.count ?? 0, metadata.clientName ?? "")   // publish or register these keys
// snippet.jarm
// JWT-secured authorization responses (JARM): the callback carries one `response` JWT, signed
// by the server (and encrypted to the client's key when it registered one), checked before the
// code is used.
var secured = ClientConfiguration(clientID: "my-app", clientSecret: secret, redirectURI: redirect, scopes: ["openid"])
secured.jarm = JARMOptions(
    responseMode: "query.jwt",                                     // or jwt, fragment.jwt, form_post.jwt
    signingAlgorithm: .ps256)                                      // authorization_signed_response_alg
let securedClient = try await OAuth2Client(server: .issuer(issuer), configuration: secured)
let securedRequest = try await securedClient.startAuthorization()   // asks for response_mode=query.jwt
// … open securedRequest.url, receive callbackURL (…/callback?response=eyJ…) …
let securedTokens = try await securedClient.completeAuthorization(callbackURL: callbackURL, request: securedRequest)
// snippet.encryptedRequests
// Request objects signed, then encrypted to the server (request_object_encryption_alg/enc): the
// key comes from its JWK set, the pair must be among those its metadata offers.
sealed.requestObject = RequestObjectOptions(encryption: RequestObjectEncryption(.rsaOAEP256, .a256GCM))
sealed.usePushedAuthorizationRequests = true                       // or by value in the URL
let sealedClient = try await OAuth2Client(server: .issuer(issuer), configuration: sealed)
let sealedRequest = try await sealedClient.startAuthorization()
// An introspection answer signed, then encrypted to the client: decrypted, then verified.
let sealedAnswer = try await sealedClient.introspect(tokens.accessToken, hint: .accessToken, format: .jwt())
print(sealedRequest.url, sealedAnswer.active)
// snippet.ciba
// CIBA (OpenID Connect Client-Initiated Backchannel Authentication, poll mode): the server asks
// the user on their own device; the client shows the binding message and polls.
var teller = ClientConfiguration(clientID: "branch-teller", clientSecret: secret, scopes: ["openid", "accounts"])
teller.privateKey = try JWSSigningKey(contentsOf: URL(fileURLWithPath: "client-key.pem"), keyID: "key-1")  // to sign requests
let tellerClient = try await OAuth2Client(server: .issuer(issuer), configuration: teller)
// Throws missingEndpoint when the server offers no backchannel_authentication_endpoint.
let authentication = try await tellerClient.startBackchannelAuthentication(BackchannelAuthenticationRequest(
    hint: .loginHint("alice@example.com"), bindingMessage: "W4SCT", requestedExpiry: 300,
    signed: tellerClient.metadata.backchannelAuthenticationRequestSigningAlgValuesSupported != nil))
print("Approve the request showing \(authentication.bindingMessage ?? "") on your phone")
let approved = try await tellerClient.pollBackchannelToken(authentication) { event in
    if case .slowDown(let interval) = event { print("polling every \(Int(interval)) s") }
}
print(approved.idTokenClaims?.subject ?? "")   // verified: signature, iss, aud, auth_req_id, rt_hash
// snippet.ciba-ping
// CIBA in ping mode (a client registered with backchannel_token_delivery_mode "ping" and a
// backchannel_client_notification_endpoint): the server POSTs there once the user has decided.
let pings = BackchannelPingInbox()                                 // shared by the endpoint and the waits
let notificationEndpoint = BackchannelPingEndpoint(inbox: pings)   // OAuth2Web; or pings.receive(_:body:)
let pinged = try await tellerClient.startBackchannelAuthentication(
    BackchannelAuthenticationRequest(hint: .loginHint("alice@example.com"), bindingMessage: "K7PQ2"),
    pingInbox: pings)                                              // with a fresh client_notification_token
// For each request to the notification endpoint (an HTTPRequest and its body bytes):
let pingAnswer = notificationEndpoint.handle(notificationRequest, body: notificationBody)
// Respond with pingAnswer.status (204 for the server's ping), headerFields and body.
print(pingAnswer.status, pingAnswer.headerFields, pingAnswer.body.count)
// Meanwhile: one token request once pinged (and a poll every 60 s, should a ping be lost).
let pingedTokens = try await tellerClient.waitForBackchannelPing(pinged, inbox: pings)
print(pingedTokens.idTokenClaims?.subject ?? "")
// snippet.rar
// Rich Authorization Requests (RFC 9396): a type of your own for one kind of detail…
struct PaymentInitiation: AuthorizationDetailType {
    static let type = "payment_initiation"
    var locations: [String]
    var actions: [String]
    var instructedAmount: [String: String]
}
let payment = PaymentInitiation(
    locations: ["https://bank.example.com/payments"], actions: ["initiate"],
    instructedAmount: ["currency": "EUR", "amount": "12.00"])
let bank = try await OAuth2Client(server: .issuer(issuer), configuration: configuration)
// …asked for in the authorization request (by value, pushed or in the request object)…
let paymentRequest = try await bank.startAuthorization(AuthorizationOptions(
    authorizationDetails: [try AuthorizationDetail(payment)]))
let paid = try await bank.completeAuthorization(callbackURL: callbackURL, request: paymentRequest)
// …and read back from what the server granted (kept with the stored token set).
let granted: [PaymentInitiation] = try paid.authorizationDetails(of: PaymentInitiation.self)
// The generic form, here at the token endpoint with client credentials:
let reading = try Grant.clientCredentials(scopes: ["accounts"]).addingAuthorizationDetails([
    AuthorizationDetail(type: "account_information", actions: ["read_balances"])])
let accountTokens = try await workerClient.requestToken(reading)
// snippet.end

// snippet.rar-api
// An API requiring a detail: a granted entry of the type whose members cover these.
let resourceServer = ResourceServer(introspection: TokenIntrospector(
    client: workerClient, accepting: .audiences(["https://bank.example.com"]),
    format: .jwt(.init(audiences: ["orders-worker"]))))   // RFC 9701: signed answers
let apiRequest = HTTPRequest(method: .post, url: URL(string: "https://bank.example.com/payments")!)
switch await resourceServer.authorize(apiRequest, requiredAuthorizationDetails: [
    AuthorizationDetail(type: "payment_initiation", actions: ["initiate"])]) {
case .authorized(let authorized): print(authorized.token.authorizationDetails ?? [])
case .refused(let challenge): print(challenge.status)   // 403 when the details are not granted
}
// The same answer, asked for directly: its signature, iss, aud and iat checked.
let introspected = try await workerClient.introspect(
    paid.accessToken, format: .jwt(.init(audiences: ["orders-worker"])))
// snippet.end
// snippet.hide
_ = (response, delegated, registered, orders, granted, accountTokens, introspected, securedTokens)
