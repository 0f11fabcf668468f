import Foundation
import Logging
import OAuth2
import OAuth2TestSupport
import Testing

/// authgent-server (`scripts/test-servers/authgent.sh`): token exchange (RFC 8693) and the JWT
/// bearer grant (RFC 7523 §2.1). Its tests log under the server word `authgent`; an unreachable
/// server makes them fail, never skip.
enum Authgent {
    static var issuer: URL { URL(string: Server.env("OAUTH2_TEST_AUTHGENT_ISSUER", "http://127.0.0.1:8400"))! }

    /// The confidential client registered at start (client_credentials, token exchange,
    /// jwt-bearer); its credentials are random, so they come from the environment only.
    static func configuration() throws -> ClientConfiguration {
        let id = try #require(Server.environment["OAUTH2_TEST_AUTHGENT_CLIENT_ID"], "source .build/test-servers/env")
        let secret = try #require(Server.environment["OAUTH2_TEST_AUTHGENT_CLIENT_SECRET"], "source .build/test-servers/env")
        return ClientConfiguration(clientID: id, clientSecret: secret)
    }

    /// The private half of the key authgent trusts for assertions it is named the issuer of.
    static func assertionKey() throws -> JWSSigningKey {
        let path = try #require(Server.environment["OAUTH2_TEST_AUTHGENT_ASSERTION_KEY"], "source .build/test-servers/env")
        return try JWSSigningKey(contentsOf: URL(fileURLWithPath: path), algorithm: .es256, keyID: assertionKeyID)
    }

    static var assertionKeyID: String { Server.env("OAUTH2_TEST_AUTHGENT_ASSERTION_KID", "oauth2-test-assertion") }

    /// Discovers the server and records that this test ran against it.
    static func client(transport: TransportKind = .urlSession, variant: String = "") async throws -> OAuth2Client {
        let client = try await OAuth2Client(
            server: .issuer(issuer),
            configuration: try configuration(),
            environment: HTTPEnvironment(transport: transport.transport, logger: Logger(label: "integration"), metadataCache: MetadataCache()))
        IntegrationLog.record("authgent", variant: transport.rawValue + (variant.isEmpty ? "" : "/" + variant))
        return client
    }

    /// A fresh access token of the client itself (client_credentials): the subject of exchanges.
    static func subjectToken(_ client: OAuth2Client) async throws -> TokenSet {
        try await client.requestToken(.clientCredentials())
    }

    /// The claims of a JWT, unverified (the tests read what the server put in its own tokens).
    static func claims(_ jwt: String) throws -> [String: JSONValue] {
        try JWS(compact: jwt).claims()
    }
}
