// Tests of your own code against OAuth2Testing's embedded OpenID provider: a real server on
// 127.0.0.1 that signs a configured user in without a page, with failures you script.

// snippet.hide
import Foundation
import OAuth2
import OAuth2InteractiveSignIn
import OAuth2Testing

// snippet.show
// snippet.signIn
try await TestProvider.withProvider(configuration: .demo) { provider in
    let client = try await OAuth2Client(
        server: .issuer(provider.issuer),
        configuration: ClientConfiguration(
            clientID: TestProvider.Demo.publicClientID,
            redirectURI: URL(string: "http://127.0.0.1:53682/callback")!,   // any port: RFC 8252 §7.3
            scopes: ["openid", "profile", "offline_access"]))
    let request = try await client.startAuthorization()
    let callback = try await provider.followRedirect(from: request.url)   // plays the browser
    let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
    precondition(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)
}
// snippet.end

// snippet.failures
try await TestProvider.withProvider { provider in
    let client = try await OAuth2Client(
        server: .issuer(provider.issuer),
        configuration: ClientConfiguration(
            clientID: TestProvider.Demo.confidentialClientID,
            clientSecret: TestProvider.Demo.confidentialClientSecret,
            scopes: ["api"]))
    let session = TokenSession(client: client, options: TokenSession.Options(renewal: .clientCredentials()))
    _ = try await session.freshAccessToken()

    provider.failNext(.token, with: .status(503, retryAfter: 2))   // the next token request meets a 503
    provider.resetRequestCounts()
    do {
        _ = try await session.refresh()                            // renew now, whatever the expiry
        preconditionFailure("the 503 should have been thrown")
    } catch let error as OAuth2Error {
        precondition(error.isTransient && error.retryAfter == 2)
    }
    // Until Retry-After has passed, the session answers the same error without a request.
    do {
        _ = try await session.refresh()
        preconditionFailure("the session should have waited for Retry-After")
    } catch let error as OAuth2Error {
        precondition(error.isTransient && error.retryAfter != nil)
    }
    precondition(provider.requestCount(.token) == 1)
}
// snippet.end

// snippet.loopback
// A whole interactive sign-in, the provider standing in for the browser.
try await TestProvider.withProvider { provider in
    let client = try await OAuth2Client(
        server: .issuer(provider.issuer),
        configuration: ClientConfiguration(clientID: TestProvider.Demo.publicClientID, scopes: ["openid"]))
    let signIn = LoopbackSignIn(browser: .custom { url in (try? await provider.openInBrowser(url)) != nil })
    let tokens = try await signIn.signIn(client: client)
    precondition(tokens.idToken != nil)
}
// snippet.end

// snippet.device
try await TestProvider.withProvider { provider in
    let client = try await OAuth2Client(
        server: .issuer(provider.issuer),
        configuration: ClientConfiguration(clientID: TestProvider.Demo.publicClientID, scopes: ["openid"]))
    let authorization = try await client.startDeviceAuthorization()
    try provider.approveDevice(userCode: authorization.userCode)   // or denyDevice(userCode:)
    let tokens = try await client.pollDeviceToken(authorization)
    precondition(provider.isActive(token: tokens.accessToken))
}
// snippet.end

// snippet.configuration
let configuration = TestProvider.Configuration(
    clients: [
        TestProvider.Client(id: "app", redirectURIs: [URL(string: "http://127.0.0.1/callback")!]),
        TestProvider.Client(id: "worker", secret: "s3cret", grantTypes: [.clientCredentials]),
    ],
    users: [TestProvider.User(username: "alice", password: "pw", claims: ["email": "alice@example.com"])],
    autoApprovedUser: "alice",
    lifetimes: TestProvider.Lifetimes(accessToken: .seconds(2)),
    signingAlgorithm: .es256,
    rotatesRefreshTokens: true)
let provider = try await TestProvider.start(configuration: configuration)
_ = try provider.rotateKeys()                                      // a new kid: clients must refetch the JWK set
await provider.shutdown()
// snippet.end

// snippet.backChannel
/// Your app's back-channel logout endpoint listens on 127.0.0.1:`appPort`; `sessionID` is the
/// `sid` of the ID token it received when the test signed in.
func backChannelLogoutReachesTheApp(provider: TestProvider, appPort: Int, sessionID: String) async throws {
    var client = TestProvider.Configuration.demo.clients[0]
    client.backChannelLogoutURI = URL(string: "http://127.0.0.1:\(appPort)/backchannel-logout")!
    provider.register(client)
    let delivery = try await provider.sendBackChannelLogout(clientID: client.id, sessionID: sessionID)
    precondition(delivery.statusCode == 200)
    // The same token again must be refused as a replay: POST
    // "logout_token=" + delivery.logoutToken to the endpoint and expect 400.
}
// snippet.end
