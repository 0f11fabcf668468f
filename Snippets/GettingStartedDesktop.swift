// A desktop program (GTK, a game, an editor plug-in) on Linux: the same loopback sign-in as a
// terminal, pages worded for the program, the tokens in the keyring, and a stream of session
// events that keeps the window up to date.

// snippet.hide
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import OAuth2
import OAuth2InteractiveSignIn
import OAuth2SecretService

func showSignedIn(_ name: String?) {}
func showSignInButton() {}

// snippet.show
let client = try await OAuth2Client(
    server: .issuer(URL(string: "https://accounts.example.com")!),
    configuration: ClientConfiguration(clientID: "my-editor", scopes: ["openid", "profile", "offline_access"]))
let store = SecretServiceTokenStore()
try await store.checkAvailability()   // throws TokenStoreError (.unavailable) without a keyring

// The browser tab the user comes back from says which program signed them in.
let signIn = LoopbackSignIn(pages: LoopbackPages(
    applicationName: "My Editor",
    successMessage: "You are signed in. You can close this tab and return to My Editor."))
let tokens = try await signIn.signIn(client: client, options: AuthorizationOptions(prompt: ["select_account"]))
let session = try await TokenSession(client: client, tokens: tokens, store: store)
showSignedIn(tokens.idTokenClaims?.name)   // the ID token was verified before it got here

// Keep the window in step with the session, from any task.
Task {
    for await event in session.events() {
        switch event {
        case .signedOut: showSignInButton()
        case .refreshFailed(let error) where error.isTransient: break   // offline: the tokens are kept
        default: break
        }
    }
}

// Every call to the API goes through the session: a fresh token, one renewal and one retry on a 401.
let (response, body) = try await session.perform(HTTPRequest(method: .get, url: URL(string: "https://api.example.com/me")!))
print(response.status, body.count)
