import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2TestSupport
import Testing

/// What `glewlwyd.sh`'s `seed_extras` adds to Glewlwyd for DPoP, PAR and JWT client
/// authentication: two more OIDC instances of the same server and two clients that
/// authenticate with JWTs (defaults match `scripts/test-servers/lib.sh`).
extension Server {
    /// The instance where every DPoP proof needs a server nonce (`oauth-dpop-nonce-mandatory`).
    static var glewlwydNonceIssuer: URL { URL(string: env("OAUTH2_TEST_GLEWLWYD_NONCE_ISSUER", "http://127.0.0.1:4593/api/oidc-nonce"))! }
    /// The instance that requires pushed authorization requests.
    static var glewlwydPARIssuer: URL { URL(string: env("OAUTH2_TEST_GLEWLWYD_PAR_ISSUER", "http://127.0.0.1:4593/api/oidc-par"))! }

    /// The `client_secret_jwt` client. Glewlwyd wants each assertion's `aud` to be the URL of
    /// the endpoint it is sent to.
    static func jwtSecretClient(secret: String? = nil, scopes: [String] = ["openid", "read"]) -> ClientConfiguration {
        var configuration = ClientConfiguration(
            clientID: env("OAUTH2_TEST_GLEWLWYD_JWT_SECRET_ID", "jwt-secret"),
            clientSecret: secret ?? env("OAUTH2_TEST_GLEWLWYD_JWT_SECRET_SECRET", "jwt-secret-0123456789abcdef0123456789abcdef"),
            authenticationMethod: .clientSecretJWT, redirectURI: redirectURI, scopes: scopes)
        configuration.clientAssertion.audience = .requestEndpoint
        return configuration
    }

    /// The `private_key_jwt` client, signing with `key` (its registered keys are the
    /// fixtures `jwt-client-rsa.pem` (kid rsa-1), `jwt-client-ec.jwk.json` (ec-1) and
    /// `jwt-client-ed25519.pem` (ed-1)).
    static func jwtKeyClient(_ key: JWSSigningKey, scopes: [String] = ["openid", "read"]) -> ClientConfiguration {
        var configuration = ClientConfiguration(
            clientID: env("OAUTH2_TEST_GLEWLWYD_JWT_KEY_ID", "jwt-key"), redirectURI: redirectURI, scopes: scopes)
        configuration.privateKey = key
        configuration.clientAssertion.audience = .requestEndpoint
        return configuration
    }

    /// A key of the `private_key_jwt` client, from the fixture files.
    static func jwtClientKey(_ fixture: String, algorithm: JWSAlgorithm? = nil, keyID: String? = nil) throws -> JWSSigningKey {
        try JWSSigningKey(contentsOf: fixtureURL(fixture), algorithm: algorithm, keyID: keyID)
    }

    static func fixtureURL(_ name: String) -> URL {
        // Tests/OAuth2IntegrationTests/Support/ → Tests/Fixtures/glewlwyd/
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/glewlwyd").appendingPathComponent(name)
    }

    /// Discovers another issuer of this server (an extra Glewlwyd instance) and records that
    /// this test ran against the server.
    func client(
        _ configuration: ClientConfiguration,
        issuer: URL,
        transport: TransportKind = .urlSession,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = Logger(label: "integration")
    ) async throws -> OAuth2Client {
        let client = try await OAuth2Client(
            server: .issuer(issuer),
            configuration: configuration,
            environment: HTTPEnvironment(transport: transport.transport, interceptors: interceptors, logger: logger, metadataCache: MetadataCache()))
        IntegrationLog.record(rawValue, variant: "\(transport.rawValue)/\(issuer.lastPathComponent)/\(configuration.authenticationMethod?.rawValue ?? "auto")")
        return client
    }
}

/// Records the DPoP proofs and nonces a client sends, and the form bodies, by kind of request.
final class ProofRecorder: HTTPInterceptor, @unchecked Sendable {
    struct Entry {
        let kind: RequestKind
        let proof: String?
        let nonce: String?
        /// The request's body as text (a form), empty when it had none.
        let body: String
    }

    private let lock = NSLock()
    private var _entries: [Entry] = []

    func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws {
        let proof = request.headerFields[HTTPField.Name("DPoP")!]
        let nonce = try proof.flatMap { try JWS(compact: $0).claims()["nonce"]?.stringValue }
        let text = body.map { String(decoding: $0, as: UTF8.self) } ?? ""
        lock.withLock { _entries.append(Entry(kind: kind, proof: proof, nonce: nonce, body: text)) }
    }

    var entries: [Entry] { lock.withLock { _entries } }
    func entries(_ kind: RequestKind) -> [Entry] { entries.filter { $0.kind == kind } }
}
