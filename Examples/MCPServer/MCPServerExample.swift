// oauth2-mcp-server-example: an MCP server (the MCP Swift SDK's Streamable HTTP transport behind
// Hummingbird) that is an OAuth 2.0 protected resource (RFC 9728) through OAuth2Hummingbird:
// its resource identifier is its /mcp URL, it publishes its metadata at
// /.well-known/oauth-protected-resource/mcp, and each tool needs its own scope (`echo`:
// mcp:read, `write_note`: mcp:write; a call without the scope is answered 403
// insufficient_scope naming it, for the client's step-up). Without OAUTH2_EXAMPLE_ISSUER it
// starts the embedded test provider (OAuth2Testing) in-process and registers a public MCP
// client there.
//
//   swift run --traits URLSession,Hummingbird,MCP oauth2-mcp-server-example
//
// Environment (all optional):
//   OAUTH2_EXAMPLE_ISSUER         the authorization server's issuer; unset: the embedded provider
//   OAUTH2_EXAMPLE_CLIENT_ID      the server's own client id there, for token introspection
//                                 (required with an issuer)
//   OAUTH2_EXAMPLE_CLIENT_SECRET  its secret
//   OAUTH2_EXAMPLE_HOST           the address to listen on (127.0.0.1)
//   OAUTH2_EXAMPLE_PORT           the port (8090; 0: any free port)
//   OAUTH2_EXAMPLE_PUBLIC_URL     the server's address as clients reach it (http://HOST:PORT);
//                                 the resource identifier is this URL + /mcp
//   OAUTH2_EXAMPLE_CLIENT_METADATA_DOCUMENTS     on: the embedded provider accepts clients
//                                 identified by a Client ID Metadata Document (an https URL
//                                 as client_id), fetched with the system's trust roots
//   OAUTH2_EXAMPLE_CLIENT_METADATA_DOCUMENTS_CA  a PEM file of roots to trust instead
//                                 (implies on; for tests serving documents with their own CA)
//   OAUTH2_EXAMPLE_PROVIDER_TLS_CERTIFICATE  a PEM certificate chain for 127.0.0.1: the embedded
//   OAUTH2_EXAMPLE_PROVIDER_TLS_KEY          provider serves HTTPS with it and this key (PEM), its
//                                 issuer https://127.0.0.1:<port> (for clients that take only
//                                 HTTPS authorization servers); unset: plain HTTP on loopback
//   OAUTH2_EXAMPLE_PROVIDER_TLS_CA  a PEM file of the roots the server trusts when it
//                                 introspects tokens there (default: the system's, SSL_CERT_FILE)
// Prints `PORT <port listened on>` and `LISTENING <resource identifier>` on standard output
// once it accepts connections (the port matters behind OAUTH2_EXAMPLE_PUBLIC_URL),
// and with the embedded provider first `PROVIDER <issuer> <client id>` (the public client an
// MCP client signs in with); logs go to standard error.

#if MCP && Hummingbird
import Foundation
import Logging

@main
enum MCPServerExample {
    static func main() async {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
            return handler
        }
        let logger = Logger(label: "oauth2-mcp-server-example")
        do {
            let settings = try MCPExampleSettings(environment: ProcessInfo.processInfo.environment)
            try await MCPExampleServer.run(
                settings: settings, logger: logger, handlesSignals: true,
                onProvider: { issuer, clientID in
                    FileHandle.standardOutput.write(Data("PROVIDER \(issuer.absoluteString) \(clientID)\n".utf8))
                },
                onListening: { resource, port in
                    // One write, unbuffered: the lines are out as soon as they are written.
                    FileHandle.standardOutput.write(Data("PORT \(port)\nLISTENING \(resource.absoluteString)\n".utf8))
                })
        } catch {
            logger.critical("The example MCP server stopped: \(error)")
            exit(1)
        }
    }
}
#else
@main
enum MCPServerExample {
    static func main() {
        print("oauth2-mcp-server-example: built without the package traits `MCP` and `Hummingbird` (swift run --traits URLSession,Hummingbird,MCP oauth2-mcp-server-example)")
    }
}
#endif
