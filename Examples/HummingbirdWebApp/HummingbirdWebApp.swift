// oauth2-web-example-hummingbird: a web app that signs its users in with OpenID Connect
// (OAuth2Hummingbird over OAuth2Web's WebSignIn). Without OAUTH2_EXAMPLE_ISSUER it starts the
// embedded test provider (OAuth2Testing) in-process and signs in with it.
//
//   swift run --traits URLSession,Hummingbird oauth2-web-example-hummingbird
//
// Environment (all optional):
//   OAUTH2_EXAMPLE_ISSUER         the provider's issuer (discovery); unset: the embedded provider
//   OAUTH2_EXAMPLE_CLIENT_ID      the app's client id at that provider (required with an issuer)
//   OAUTH2_EXAMPLE_CLIENT_SECRET  its secret
//   OAUTH2_EXAMPLE_HOST           the address to listen on (127.0.0.1)
//   OAUTH2_EXAMPLE_PORT           the port (8080; 0: any free port)
//   OAUTH2_EXAMPLE_PUBLIC_URL     the app's address as browsers reach it (http://HOST:PORT)
//   OAUTH2_EXAMPLE_SCOPES         the scopes of a sign-in ("openid profile email")
//   OAUTH2_EXAMPLE_CA_FILE        a PEM file of the certificate authorities to trust for the
//                                 provider (instead of the system's)
//   OAUTH2_EXAMPLE_API_AUDIENCES  the audiences that name the bearer API (space-separated): a
//                                 token whose introspection answer has an `aud` must name one
//   OAUTH2_EXAMPLE_API_CLIENT_IDS the clients the bearer API serves (space-separated), for a
//                                 provider whose answers have no `aud` (django-oauth-toolkit);
//                                 neither set: the embedded provider's demo confidential
//                                 client, and with another provider no token at all
//   OAUTH2_EXAMPLE_POSTGRES_URL   a postgres:// URL (built with the trait Postgres): sessions,
//                                 sign-ins in progress, tokens and logout tokens' jtis in
//                                 PostgreSQL, shared by every replica; unset: in memory
//   OAUTH2_EXAMPLE_POSTGRES_KEYS  the keys that encrypt its rows ("id:base64" of 32 bytes,
//                                 the current first; comma-separated), required with the URL
//   OAUTH2_EXAMPLE_POSTGRES_SCHEMA the schema of its tables ("oauth2")
// Prints one line `LISTENING <public url>` on standard output once it accepts connections;
// logs go to standard error.

#if Hummingbird
import Foundation
import Logging

@main
enum HummingbirdWebApp {
    static func main() async {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
            return handler
        }
        let logger = Logger(label: "oauth2-web-example")
        do {
            let settings = try ExampleSettings(environment: ProcessInfo.processInfo.environment)
            try await ExampleServer.run(settings: settings, logger: logger, handlesSignals: true) { url, _ in
                // One write, unbuffered: the line is out as soon as it is written.
                FileHandle.standardOutput.write(Data("LISTENING \(url.absoluteString)\n".utf8))
            }
        } catch {
            logger.critical("The example app stopped: \(error)")
            exit(1)
        }
    }
}
#else
@main
enum HummingbirdWebApp {
    static func main() {
        print("oauth2-web-example-hummingbird: built without the package trait `Hummingbird` (swift run --traits URLSession,Hummingbird oauth2-web-example-hummingbird)")
    }
}
#endif
