// The security model in code: what a caller can tighten (algorithms, leeway, audiences,
// deadlines, retries) and how refusals come back (typed errors, redacted descriptions).

// snippet.hide
import Foundation
import OAuth2

let issuer = URL(string: "https://id.example.com")!
let callbackURL = URL(string: "http://127.0.0.1:53682/callback?code=x&state=y")!

// snippet.show
// snippet.validation
var configuration = ClientConfiguration(
    clientID: "my-cli", redirectURI: URL(string: "http://127.0.0.1:53682/callback")!, scopes: ["openid", "profile"])
configuration.idTokenValidation = IDTokenValidationOptions(
    allowedAlgorithms: [.es256, .edDSA],                 // nil: the provider's list, else RS256; never "none"
    leeway: 30,                                          // clock tolerance for exp, iat, auth_time
    trustedAudiences: ["https://api.example.com"])       // any other extra audience is refused
// snippet.end

// snippet.deadline
var environment = HTTPEnvironment()
environment.requestDeadline = .seconds(10)               // connect + head + whole body, retries included
environment.retryPolicy = .never                         // no retry of discovery, JWK set, UserInfo, introspection
// snippet.end

// snippet.refusals
let client = try await OAuth2Client(server: .issuer(issuer), configuration: configuration, environment: environment)
let request = try await client.startAuthorization()     // PKCE S256, state, nonce: always
do {
    let tokens = try await client.completeAuthorization(callbackURL: callbackURL, request: request)
    print(tokens)                                        // TokenSet(tokenType: Bearer, accessToken: <redacted>…)
} catch let error as OAuth2Error {
    switch error.code {
    case .stateMismatch, .issuerMismatch, .redirectMismatch:
        print("the callback is not this request's answer; nothing was sent to the token endpoint")
    case .invalidIDToken:
        print("ID token refused: \(error.joseReason.map { "\($0)" } ?? "?")")   // .nonceMismatch, .signatureInvalid…
    case .accessDenied:
        print("the user said no")
    default:
        print(error)                                     // never holds a token, code or secret
    }
}
// snippet.end
