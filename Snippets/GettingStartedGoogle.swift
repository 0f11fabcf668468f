// A command-line tool for Google on Linux: the user signs in through the browser once, and
// every later run calls a Google API with the stored tokens, renewed with the refresh token.
//
// Google side: an OAuth client of type "Desktop app" (its redirect is any loopback port),
// the API enabled in the Cloud project, and its scope on the consent screen.

// snippet.hide
import Foundation
import HTTPTypes
import OAuth2
import OAuth2InteractiveSignIn
import OAuth2SecretService

// snippet.show
// snippet.google
// Google gives desktop clients a secret and wants it at the token endpoint; it protects
// nothing (anyone can read it from the program), but keep it out of the source and off
// command lines anyway: here, a file next to the tokens.
let config = URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".config/my-cli")
let secret = try String(contentsOf: config.appendingPathComponent("google-client-secret"), encoding: .utf8)
    .trimmingCharacters(in: .whitespacesAndNewlines)

// The preset: Google's discovery, and access_type=offline on the sign-in, without which
// Google issues no refresh token. Naming scopes replaces the preset's (openid email
// profile), so list them with the API's; Google knows no offline_access.
let client = try await OAuth2Client(
    server: .preset(.google),
    configuration: ClientConfiguration(
        clientID: "1234567890-abc.apps.googleusercontent.com",
        clientSecret: secret,
        scopes: ["openid", "email", "profile", "https://www.googleapis.com/auth/calendar.readonly"]))

let keyring = SecretServiceTokenStore()
let store: any TokenStore = try await keyring.isAvailable()
    ? keyring
    : FileTokenStore(directory: config.appendingPathComponent("tokens"))

let session = if let stored = try await TokenSession.restore(client: client, store: store) {
    stored
} else {
    // Google issues a refresh token only at a user's first consent: prompt=consent asks
    // again, so that a sign-in after a lost store brings a refresh token too.
    try await LoopbackSignIn().signIn(client: client, store: store, options: AuthorizationOptions(prompt: ["consent"]))
}

// Every run: the API call, with the access token renewed first when it is due (Google's
// last an hour). Without a refresh token, that renewal throws signInRequired.
let calendars = URL(string: "https://www.googleapis.com/calendar/v3/users/me/calendarList")!
let (response, body) = try await session.perform(HTTPRequest(method: .get, url: calendars))
print(response.status, String(decoding: body, as: UTF8.self))
// snippet.end
