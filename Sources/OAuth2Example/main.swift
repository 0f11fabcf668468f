// oauth2-example: discovery, a client-credentials grant, introspection and revocation against
// a real server. `scripts/demo` runs it against the local Glewlwyd the test scripts start.
//
//   OAUTH2_ISSUER, OAUTH2_CLIENT_ID, OAUTH2_CLIENT_SECRET, OAUTH2_SCOPE override the defaults.
import Foundation
import Logging
import OAuth2

let environment = ProcessInfo.processInfo.environment
func setting(_ name: String, _ fallback: String) -> String {
    environment[name].flatMap { $0.isEmpty ? nil : $0 } ?? fallback
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = environment["OAUTH2_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .debug
    return handler
}

guard let issuer = URL(string: setting("OAUTH2_ISSUER", "http://127.0.0.1:4593/api/oidc")) else {
    FileHandle.standardError.write(Data("OAUTH2_ISSUER is not a URL\n".utf8))
    exit(2)
}
let configuration = ClientConfiguration(
    clientID: setting("OAUTH2_CLIENT_ID", "cc"),
    clientSecret: setting("OAUTH2_CLIENT_SECRET", "cc-secret"),
    scopes: setting("OAUTH2_SCOPE", "read").split(separator: " ").map(String.init)
)

do {
    let client = try await OAuth2Client(server: .issuer(issuer), configuration: configuration)
    print("issuer:          \(client.metadata.issuer ?? "?")")
    print("token endpoint:  \(client.metadata.tokenEndpoint?.absoluteString ?? "none")")
    let tokens = try await client.clientCredentials()
    print("tokens:          \(tokens)")
    if client.metadata.introspectionEndpoint != nil {
        print("active:          \(try await client.introspect(tokens.accessToken).active)")
    }
    if client.metadata.revocationEndpoint != nil {
        try await client.revoke(tokens.accessToken, hint: .accessToken)
        print("revoked; active: \(try await client.introspect(tokens.accessToken).active)")
    }
} catch let error as OAuth2Error {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(error.isTransient ? 75 : 1)
}
