// The shortest useful program: discover a server, get a token for the client itself.

// snippet.hide
import Foundation
import OAuth2

let secret = ProcessInfo.processInfo.environment["CLIENT_SECRET"] ?? ""

// snippet.show
let client = try await OAuth2Client(
    server: .issuer(URL(string: "https://accounts.example.com")!),
    configuration: ClientConfiguration(clientID: "worker", clientSecret: secret, scopes: ["read"]))
let tokens = try await client.clientCredentials()
print(tokens)   // TokenSet(tokenType: Bearer, accessToken: <redacted>, expiresAt: …)
