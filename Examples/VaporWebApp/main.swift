// The example web app on Vapor: OpenID Connect sign-in with server-side sessions, a page
// that needs a signed-in user, an API route that calls the provider's UserInfo with the
// user's access token (refreshed when needed), and an API route for other clients that
// accepts the provider's access tokens as bearer tokens, checked at its introspection endpoint.
//
//   swift run --traits URLSession,Vapor oauth2-web-example-vapor
//
// Settings (environment): OAUTH2_EXAMPLE_ISSUER, OAUTH2_EXAMPLE_CLIENT_ID and
// OAUTH2_EXAMPLE_CLIENT_SECRET name the provider and the client registered there (redirect URI
// PUBLIC_URL/auth/callback, post-logout redirect URI PUBLIC_URL/, back-channel logout URI
// PUBLIC_URL/auth/backchannel-logout); without an issuer the app starts the embedded test
// provider and registers itself there. OAUTH2_EXAMPLE_HOST (127.0.0.1), OAUTH2_EXAMPLE_PORT
// (8080; 0: any free port), OAUTH2_EXAMPLE_PUBLIC_URL (http://HOST:PORT),
// OAUTH2_EXAMPLE_SCOPES ("openid profile email"). The bearer API accepts the tokens that name
// it: OAUTH2_EXAMPLE_API_AUDIENCES (space-separated; a token whose introspection answer has an
// `aud` must name one) and OAUTH2_EXAMPLE_API_CLIENT_IDS (the clients it serves, for a provider
// whose answers have no `aud`, such as django-oauth-toolkit); neither set: the embedded
// provider's demo confidential client, and with another provider no token at all.
// Prints "LISTENING <public URL>" when ready.
#if Vapor
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Testing
import OAuth2Vapor
import OAuth2Web
import NIOPosix
import Vapor

let environment = ProcessInfo.processInfo.environment
let host = environment["OAUTH2_EXAMPLE_HOST"] ?? "127.0.0.1"
let requestedPort = Int(environment["OAUTH2_EXAMPLE_PORT"] ?? "") ?? 8080
let scopes = (environment["OAUTH2_EXAMPLE_SCOPES"] ?? "openid profile email").split(separator: " ").map(String.init)

// Vapor builds its responder from the routes at start, and the routes need the public URL:
// with port 0, ask the system for a free port first.
let port = requestedPort != 0 ? requestedPort : try await {
    let probe = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: host, port: 0).get()
    defer { probe.close(promise: nil) }
    return probe.localAddress?.port ?? 8080
}()
let publicURL = URL(string: environment["OAUTH2_EXAMPLE_PUBLIC_URL"] ?? "http://\(host):\(port)")!
let configuration = WebSignInConfiguration(publicBaseURL: publicURL, scopes: scopes)

// The provider: the one named, or the embedded one with this app registered.
var embedded: TestProvider?
let client: OAuth2Client
if let issuer = environment["OAUTH2_EXAMPLE_ISSUER"].flatMap(URL.init(string:)) {
    client = try await OAuth2Client(
        server: .issuer(issuer),
        configuration: ClientConfiguration(
            clientID: environment["OAUTH2_EXAMPLE_CLIENT_ID"] ?? "web-app", clientSecret: environment["OAUTH2_EXAMPLE_CLIENT_SECRET"],
            redirectURI: configuration.redirectURI, scopes: scopes))
} else {
    let provider = try await TestProvider.start()
    let secret = UUID().uuidString
    provider.register(TestProvider.Client(
        id: "web-example", secret: secret, redirectURIs: [configuration.redirectURI],
        postLogoutRedirectURIs: [configuration.url(configuration.postLogoutPath)],
        backChannelLogoutURI: configuration.url(configuration.backChannelLogoutPath)))
    embedded = provider
    client = try await OAuth2Client(
        server: .issuer(provider.issuer),
        configuration: ClientConfiguration(clientID: "web-example", clientSecret: secret, redirectURI: configuration.redirectURI, scopes: scopes))
    FileHandle.standardError.write(Data("embedded provider: \(provider.issuer.absoluteString) (user \(TestProvider.Demo.username))\n".utf8))
}
let signIn = WebSignIn(client: client, configuration: configuration)
// The bearer-protected API checks the provider's (opaque) access tokens at its introspection
// endpoint, with the app's own client credentials, and accepts only those that name it: the
// provider answers "active" for a token of any client, for any API.
func names(_ variable: String) -> Set<String> { Set((environment[variable] ?? "").split(separator: " ").map(String.init)) }
var accepted = TokenIntrospector.AcceptedTokens(audiences: names("OAUTH2_EXAMPLE_API_AUDIENCES"), clientIDs: names("OAUTH2_EXAMPLE_API_CLIENT_IDS"))
if accepted.audiences.isEmpty, accepted.clientIDs.isEmpty {
    if embedded != nil {
        // The demo confidential client's tokens: the embedded provider names a client in the
        // `aud` of its users' tokens, and gives a client's own tokens (client credentials) no
        // `aud`, only its `client_id`.
        accepted = TokenIntrospector.AcceptedTokens(audiences: [TestProvider.Demo.confidentialClientID], clientIDs: [TestProvider.Demo.confidentialClientID])
    } else {
        FileHandle.standardError.write(Data("the bearer API accepts no token: set OAUTH2_EXAMPLE_API_AUDIENCES or OAUTH2_EXAMPLE_API_CLIENT_IDS\n".utf8))
    }
}
let resourceServer = ResourceServer(introspection: TokenIntrospector(client: client, accepting: accepted))

var logger = Logger(label: "oauth2-web-example-vapor")
logger.logLevel = .info
let app = try await Application.make(.production, logger: logger)

/// `text` for HTML.
func escaped(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;")
}

func page(_ title: String, _ body: String) -> Response {
    let html = "<!doctype html><meta charset=utf-8><title>\(escaped(title))</title>\n\(body)\n"
    return Response(status: .ok, headers: ["Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"], body: .init(string: html))
}

// The sign-in routes under /auth (login, callback, logout, the logout channels), and the
// signed-in user, if any, in every request (request.webUser).
app.middleware.use(VaporWebSignInMiddleware(signIn))

app.get { request in
    let status = request.webUser.map { "Signed in as \(escaped($0.subject))" } ?? "Not signed in"
    return page("Home", "<p id=\"status\">\(status)</p>\n<p><a href=\"/profile\">Profile</a></p>")
}

app.get("healthz") { _ in "ok" }

// Pages that need a signed-in user: a browser that has none is sent to sign in.
let signedIn = app.grouped(VaporRequireSignIn(signIn))

signedIn.get("profile") { request in
    let user = try request.requireWebUser()
    return page("Profile", """
        <p id="subject">\(escaped(user.subject))</p>
        <p id="name">\(escaped(user.claims["name"]?.stringValue ?? ""))</p>
        <p><a href="/api/userinfo">UserInfo</a></p>
        <form id="signout" method="post" action="/auth/logout"><input type="hidden" name="csrf" value="\(escaped(user.csrfToken))"><button type="submit" id="signout-button">Sign out</button></form>
        """)
}

signedIn.get("api", "userinfo") { request in
    let user = try request.requireWebUser()
    let info = try await client.userInfo(for: try await user.tokenSession.freshTokens())
    let body = try JSONEncoder().encode(info.claims)
    return Response(status: .ok, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"], body: .init(data: body))
}

// An API for other clients: the provider's access token as a bearer token.
app.grouped(VaporResourceServerMiddleware(resourceServer)).get("api", "bearer", "whoami") { request in
    guard let token = request.accessToken else { throw Abort(.unauthorized) }
    var claims: [String: JSONValue] = ["scope": .string(token.scopes.sorted().joined(separator: " "))]
    if let subject = token.subject { claims["sub"] = .string(subject) }
    if let clientID = token.clientID { claims["client_id"] = .string(clientID) }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return Response(status: .ok, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"], body: .init(data: try encoder.encode(claims)))
}

/// Starts the server and says so on stdout.
func start(_ app: Application) async throws {
    try await app.server.start(address: .hostname(host, port: port))
    FileHandle.standardOutput.write(Data("LISTENING \(publicURL.absoluteString)\n".utf8))
}

/// Stops the server, the app and the embedded provider.
func stop(_ app: Application) async throws {
    await app.server.shutdown()
    try await app.asyncShutdown()
    await embedded?.shutdown()
}

try await start(app)
// Serve until SIGINT or SIGTERM.
let signalSources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
    signal(number, SIG_IGN)
    return DispatchSource.makeSignalSource(signal: number)
}
let signals = AsyncStream<Void> { continuation in
    for source in signalSources {
        source.setEventHandler { continuation.yield() }
        source.resume()
    }
}
for await _ in signals { break }
try await stop(app)
#else
print("oauth2-web-example-vapor: built without the Vapor trait (swift run --traits URLSession,Vapor oauth2-web-example-vapor)")
#endif
