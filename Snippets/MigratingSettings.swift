// Porting an app from p2/OAuth2, OktaOidc or AppAuth: their settings read as they are, their
// calls one by one.

// snippet.hide
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import OAuth2

let callbackURL = URL(string: "http://127.0.0.1:8080/callback?code=x&state=y")!

// snippet.show
// snippet.p2Settings
// p2/OAuth2's settings dictionary, keys unchanged (here as JSON; a property list works too).
// An app on users' devices is a public client: no "client_secret" here. Whatever the app
// ships, its users can read, so a secret in it is no secret; PKCE (always on) protects the
// code instead. A provider that insists on a secret needs a server of yours to hold it.
let p2 = try SettingsFile(data: Data("""
    {
      "client_id": "my_swift_app",
      "authorize_uri": "https://id.example.com/oauth/authorize",
      "token_uri": "https://id.example.com/oauth/token",
      "redirect_uris": ["http://127.0.0.1:8080/callback"],
      "scope": "openid profile offline_access",
      "keychain": false
    }
    """.utf8))
print(p2.format, p2.ignoredKeys)   // p2/OAuth2 ["keychain"]: read, and without effect here
let app = try await OAuth2Client(server: p2.server, configuration: p2.configuration)
// snippet.end

// snippet.oktaSettings
// OktaOidc's Okta.plist, unchanged: discovery from `issuer`, a public client, PKCE.
let okta = try SettingsFile(contentsOf: URL(fileURLWithPath: "Okta.plist"))
let client = try await OAuth2Client(server: okta.server, configuration: okta.configuration)
// snippet.end

// snippet.presets
// p2's site subclasses (OAuth2CodeGrantFacebook, …) are presets here: plain values.
let reddit = try await OAuth2Client(
    server: .preset(.reddit),
    configuration: ClientConfiguration(clientID: "my-app", redirectURI: URL(string: "http://127.0.0.1:8080/cb")!))
// snippet.end

// snippet.calls
let request = try await client.startAuthorization()           // p2 authorizeURL(params:), OIDAuthorizationRequest
// … open request.url; the redirect comes back as callbackURL …
let tokens = try await client.completeAuthorization(callbackURL: callbackURL, request: request)   // handleRedirectURL(_:)
let session = try await TokenSession(client: client, tokens: tokens) // AppAuth OIDAuthState, OktaOidc's state manager
let renewed = try await session.refresh()                        // OktaOidc renew, AppAuth performTokenRequest
let me = try await client.userInfo(for: tokens)                // OktaOidc getUser
let state = try await client.introspect(tokens.accessToken)    // OktaOidc introspect
try await client.revoke(tokens.accessToken, hint: .accessToken) // OktaOidc revoke
var api = HTTPRequest(method: .get, url: URL(string: "https://api.github.com/user")!)
api = try await session.authorize(api)                         // p2 request(forURL:)
print(me.subject, state.active, renewed.scopes, api)
// snippet.end
// snippet.hide
_ = (app, reddit)
