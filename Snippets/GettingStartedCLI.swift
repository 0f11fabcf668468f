// A command-line tool: sign the user in through the system browser once, keep the tokens in
// the desktop keyring (or a private file where there is no keyring), and authorize every later
// run's requests without asking again.

// snippet.hide
import Foundation
import HTTPTypes
import OAuth2
import OAuth2InteractiveSignIn
import OAuth2SecretService

// snippet.show
let client = try await OAuth2Client(
    server: .issuer(URL(string: "https://accounts.example.com")!),
    configuration: ClientConfiguration(clientID: "my-cli", scopes: ["openid", "profile", "offline_access"]))

// The keyring when a Secret Service answers, else a private directory (0700, files 0600).
let keyring = SecretServiceTokenStore()
let store: any TokenStore = try await keyring.isAvailable()
    ? keyring
    : FileTokenStore(directory: URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".config/my-cli/tokens"))

// A stored sign-in is used as it is; without one, the user signs in in the browser.
let session: TokenSession
if let restored = try await TokenSession.restore(client: client, store: store) {
    session = restored
} else {
    let tokens = try await LoopbackSignIn(timeout: .seconds(300)).signIn(client: client)
    session = try await TokenSession(client: client, tokens: tokens, store: store)
}
// An authorized request; the token is renewed with the refresh token when due, and never printed.
let (response, body) = try await session.perform(HTTPRequest(method: .get, url: URL(string: "https://api.example.com/me")!))
print(response.status, body.count)
