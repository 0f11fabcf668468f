// A service (a worker, a backend calling another backend): client credentials, no user, no
// browser; AsyncHTTPClient as the transport; one session that renews its own token.

// snippet.hide
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import OAuth2
import OAuth2AsyncHTTPClient

// snippet.show
// The client secret from the deployment's secrets (a mounted file here; never in the source,
// a command line or a log line).
let secret = try String(contentsOfFile: "/run/secrets/worker-client-secret", encoding: .utf8)
    .trimmingCharacters(in: .whitespacesAndNewlines)

try await AsyncHTTPClientTransport.withTransport { transport in
    let client = try await OAuth2Client(
        server: .issuer(URL(string: "https://login.example.com/realms/main")!),
        configuration: ClientConfiguration(clientID: "worker", clientSecret: secret, scopes: ["orders.read"]),
        environment: HTTPEnvironment(transport: transport))

    // No sign-in: the session asks for a new token whenever the old one is due or refused.
    let session = TokenSession(client: client, options: TokenSession.Options(renewal: .clientCredentials()))

    for id in 1...3 {
        let request = HTTPRequest(method: .get, url: URL(string: "https://orders.example.com/orders/\(id)")!)
        do {
            let (response, _) = try await session.perform(request)
            print(id, response.status)
        } catch let error as OAuth2Error where error.isTransient {
            print("try again in \(error.retryAfter ?? 5) s: \(error.code)")   // tokens kept, nothing lost
        }
    }
}
