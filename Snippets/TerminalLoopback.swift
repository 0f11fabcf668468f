// Sign-in from a terminal with a loopback redirect (RFC 8252): the one-call form, the options
// real providers need, and the same flow assembled from its pieces.

// snippet.hide
import Foundation
import OAuth2
import OAuth2InteractiveSignIn

let client = try await OAuth2Client(
    server: .issuer(URL(string: "https://accounts.example.com")!),
    configuration: ClientConfiguration(clientID: "my-cli", scopes: ["openid", "offline_access"]))

// snippet.show
// snippet.oneCall
// 127.0.0.1, a free port, /callback; the system browser; 5 minutes at most.
let tokens = try await LoopbackSignIn().signIn(client: client)
// snippet.end

// snippet.options
// A provider that registered exactly http://localhost:8400/oauth (it compares redirect URIs
// character for character), over SSH where no browser can open: the URL is only printed.
let overSSH = LoopbackSignIn(host: .localhost, port: 8400, callbackPath: "/oauth", timeout: .seconds(600), browser: .none)
let remoteTokens = try await overSSH.signIn(client: client, options: AuthorizationOptions(loginHint: "alice@example.com"))
// snippet.end

// snippet.pieces
let listener = try await LoopbackRedirectListener.start()   // 127.0.0.1, a port the system picks
let request = try await client.startAuthorization(AuthorizationOptions(redirectURI: listener.redirectURI))
if await !BrowserLauncher().open(request.url) {                // $BROWSER, then xdg-open, then open
    print("Open this address in a browser: \(request.url)")
}
// Only a GET of /callback with this request's state ends the wait (completeAuthorization
// checks the state again, in constant time, with iss and the rest).
let callback = try await listener.waitForCallback(timeout: .seconds(300)) { url in
    let state = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value
    return state == request.state ? LoopbackRedirectListener.defaultVerdict(url) : .reject
}
let byHand = try await client.completeAuthorization(callbackURL: callback, request: request)
// snippet.end

// snippet.browserCommands
// What `BROWSER='firefox --new-window %s:chromium'` would run, without running it.
let commands = BrowserLauncher.commands(
    for: URL(string: "https://accounts.example.com/authorize?client_id=my-cli")!,
    environment: ["BROWSER": "firefox --new-window %s:chromium"],
    platform: .linux)
// firefox --new-window <url>, chromium <url>, xdg-open <url>
print(commands.map(\.description))
// snippet.end

// snippet.signOut
// RP-initiated logout, the provider's redirect received on a listener and its state checked.
try await LoopbackSignIn(port: 8400).signOut(client: client, options: EndSessionOptions(idTokenHint: tokens.idToken))
// snippet.end
// snippet.hide
_ = (remoteTokens, byHand)
