import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import OAuth2Testing
import Testing

/// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): the rules on
/// the URL and on the document (no socket), then the provider fetching documents from a real
/// HTTPS server whose CA it is told to trust.
@Suite("Client ID Metadata Documents")
struct ClientMetadataDocumentTests {
    typealias DocumentError = TestProvider.ClientMetadataDocumentError
    static let id = "https://app.example.com/oauth/client.json"

    static func code(_ body: () throws -> Void) -> DocumentError.Code? {
        do {
            try body()
            return nil
        } catch let error as DocumentError {
            return error.code
        } catch {
            Issue.record("expected a ClientMetadataDocumentError, got \(error)")
            return nil
        }
    }

    static func document(_ members: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: members))
    }

    static var valid: [String: Any] { [
        "client_id": id, "client_name": "An app", "redirect_uris": ["http://127.0.0.1:53682/callback"],
        "grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none",
    ] }

    // MARK: - The URL (draft §3)

    @Test("a client_id URL must be https with a host and a non-root path, without fragment, credentials or dot segments", arguments: [
        "http://app.example.com/client.json", "https://app.example.com", "https://app.example.com/", "https://app.example.com/c.json#x",
        "https://user:pw@app.example.com/c.json", "https://app.example.com/a/../c.json", "https://app.example.com/./c.json",
        "https:///c.json", "not a url", "ftp://app.example.com/c.json",
    ])
    func refusedURLs(_ clientID: String) {
        #expect(Self.code { _ = try TestProvider.clientMetadataDocumentURL(clientID) } == .invalidClientIDURL)
    }

    @Test("an https URL with a path (and a port or query) names a document")
    func acceptedURLs() throws {
        for clientID in [Self.id, "https://127.0.0.1:8443/client", "https://app.example.com/c?v=1"] {
            #expect(try TestProvider.clientMetadataDocumentURL(clientID).absoluteString == clientID)
        }
    }

    // MARK: - The document (draft §4)

    @Test("a valid document describes a public client with its redirect URIs, grants and scope")
    func validDocument() throws {
        var members = Self.valid
        members["scope"] = "mcp:read mcp:write"
        let client = try TestProvider.validateClientMetadataDocument(Self.document(members), clientID: Self.id)
        #expect(client.id == Self.id)
        #expect(client.isPublic)
        #expect(client.redirectURIs == [URL(string: "http://127.0.0.1:53682/callback")!])
        #expect(client.grantTypes == [.authorizationCode, .refreshToken])
        #expect(client.allowedScopes == ["mcp:read", "mcp:write"])
        var minimal = Self.valid
        minimal["grant_types"] = nil
        minimal["token_endpoint_auth_method"] = nil
        #expect(try TestProvider.validateClientMetadataDocument(Self.document(minimal), clientID: Self.id).grantTypes == [.authorizationCode, .refreshToken])
    }

    @Test("not a JSON object")
    func notJSON() {
        for body in ["", "[]", "\"x\"", "{", "<html></html>"] {
            #expect(Self.code { _ = try TestProvider.validateClientMetadataDocument(Array(body.utf8), clientID: Self.id) } == .notJSON)
        }
    }

    @Test("the document's client_id must be the URL exactly (missing, another, a trailing slash, not a string)", arguments: [
        nil, "https://evil.example.com/oauth/client.json", id + "/", "https://APP.example.com/oauth/client.json",
    ] as [String?])
    func clientIDMismatch(_ other: String?) {
        var members = Self.valid
        members["client_id"] = other
        #expect(Self.code { _ = try TestProvider.validateClientMetadataDocument(Self.document(members), clientID: Self.id) } == .clientIDMismatch)
    }

    @Test("redirect_uris must be present, non-empty, and absolute URIs without a fragment")
    func redirectURIs() {
        for value in [nil, [], ["/relative"], ["http://127.0.0.1/cb#frag"], [42], "http://127.0.0.1/cb"] as [Any?] {
            var members = Self.valid
            members["redirect_uris"] = value
            #expect(Self.code { _ = try TestProvider.validateClientMetadataDocument(Self.document(members), clientID: Self.id) } == .invalidRedirectURIs)
        }
    }

    @Test("no shared secret: client_secret, client_secret_expires_at, or a client_secret_* method")
    func sharedSecret() {
        let cases: [(String, Any)] = [
            ("client_secret", "s3cret"), ("client_secret_expires_at", 0), ("token_endpoint_auth_method", "client_secret_basic"),
            ("token_endpoint_auth_method", "client_secret_post"), ("token_endpoint_auth_method", "client_secret_jwt"),
        ]
        for (name, value) in cases {
            var members = Self.valid
            members[name] = value
            let error = Self.catching { try TestProvider.validateClientMetadataDocument(Self.document(members), clientID: Self.id) }
            #expect(error?.code == .sharedSecret, "\(name)")
            #expect(error?.message.contains("s3cret") == false, "the message never repeats a secret")
        }
    }

    @Test("only token_endpoint_auth_method none, and only the authorization code and refresh grants")
    func unsupportedMetadata() {
        let cases: [(String, Any)] = [
            ("token_endpoint_auth_method", "private_key_jwt"), ("token_endpoint_auth_method", 1),
            ("grant_types", ["client_credentials"]), ("grant_types", ["authorization_code", "password"]), ("grant_types", "authorization_code"),
            ("scope", ["mcp:read"]),
        ]
        for (name, value) in cases {
            var members = Self.valid
            members[name] = value
            #expect(Self.code { _ = try TestProvider.validateClientMetadataDocument(Self.document(members), clientID: Self.id) } == .unsupportedMetadata, "\(name)")
        }
    }

    static func catching(_ body: () throws -> TestProvider.Client) -> DocumentError? {
        do {
            _ = try body()
            return nil
        } catch let error as DocumentError {
            return error
        } catch {
            Issue.record("expected a ClientMetadataDocumentError, got \(error)")
            return nil
        }
    }

    // MARK: - Configuration and metadata

    @Test("the metadata advertises client_id_metadata_document_supported only when documents are on")
    func advertised() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let metadata = try await Self.metadata(provider)
            #expect(metadata["client_id_metadata_document_supported"] == nil)
        }
        var configuration = TestProvider.Configuration.demo
        configuration.clientMetadataDocuments = .init(trustedRootCertificatesPEM: [try Self.caPEM()])
        try await TestProvider.withProvider(configuration: configuration) { provider in
            let metadata = try await Self.metadata(provider)
            #expect(metadata["client_id_metadata_document_supported"] == .bool(true))
            let server = try await OAuth2Client(
                server: .issuer(provider.issuer), configuration: ClientConfiguration(clientID: "x"),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            #expect(server.metadata.clientIDMetadataDocumentSupported == true)
        }
    }

    @Test("unreadable trusted roots or a non-positive bound refuse to start")
    func badConfiguration() async {
        for settings in [
            TestProvider.ClientMetadataDocuments(trustedRootCertificatesPEM: ["not a certificate"]),
            TestProvider.ClientMetadataDocuments(maximumSize: 0), TestProvider.ClientMetadataDocuments(timeout: .zero),
        ] {
            var configuration = TestProvider.Configuration.demo
            configuration.clientMetadataDocuments = settings
            let error = await Fixture.providerError { _ = try await TestProvider.start(configuration: configuration) }
            #expect(error?.code == .invalidConfiguration)
        }
    }

    static func metadata(_ provider: TestProvider) async throws -> [String: JSONValue] {
        let (response, body) = try await Fixture.send(.get, provider.url(for: .discovery))
        #expect(response.status == .ok)
        return Fixture.json(body)
    }

    static func caPEM() throws -> String {
        try String(contentsOfFile: TestTLS.caBundlePath, encoding: .utf8)
    }
}

/// The provider fetching documents from a real HTTPS server (the suite's TLS fixtures: a
/// certificate for 127.0.0.1 from a CA the provider is told to trust).
@Suite("Client ID Metadata Documents over HTTPS")
struct ClientMetadataDocumentFetchTests {
    /// A provider trusting the fixtures' CA, and a document server answering `reply` at
    /// `/client.json`, counting requests.
    static func withSetup(
        cacheLifetime: Duration = .seconds(600), maximumSize: Int = 5120, certificate: TestTLS.Certificate = .valid,
        reply: @escaping @Sendable (String) -> LocalHTTPServer.Reply,
        _ body: (TestProvider, String, @Sendable () -> Int) async throws -> Void
    ) async throws {
        let count = Counter()
        let port = Counter()
        let server = try await LocalHTTPServer(tls: TestTLS.context(certificate)) { request in
            count.increment()
            return request.path == "/client.json" ? reply("https://127.0.0.1:\(port.value)/client.json") : .json(404, "{}")
        }
        port.set(server.port)
        var configuration = TestProvider.Configuration.demo
        configuration.clientMetadataDocuments = .init(
            trustedRootCertificatesPEM: [try ClientMetadataDocumentTests.caPEM()], maximumSize: maximumSize, timeout: .seconds(30),
            cacheLifetime: cacheLifetime)
        do {
            try await TestProvider.withProvider(configuration: configuration) { provider in
                try await body(provider, "https://127.0.0.1:\(server.port)/client.json", { count.value })
            }
            await server.shutdown()
        } catch {
            await server.shutdown()
            throw error
        }
    }

    static func document(_ clientID: String, extra: [String: String] = [:]) -> LocalHTTPServer.Reply {
        var members: [String: Any] = ["client_id": clientID, "redirect_uris": [Fixture.redirectURI.absoluteString], "token_endpoint_auth_method": "none"]
        for (name, value) in extra { members[name] = value }
        return .json(200, String(decoding: try! JSONSerialization.data(withJSONObject: members), as: UTF8.self))
    }

    static func client(_ provider: TestProvider, _ clientID: String, redirectURI: URL = Fixture.redirectURI) async throws -> OAuth2Client {
        try await OAuth2Client(
            server: .issuer(provider.issuer),
            configuration: ClientConfiguration(clientID: clientID, redirectURI: redirectURI, scopes: ["openid", "offline_access"]),
            environment: HTTPEnvironment(metadataCache: MetadataCache()))
    }

    @Test("a client known only by its document signs in, refreshes, and the document is fetched once while cached")
    func signIn() async throws {
        try await Self.withSetup(reply: { Self.document($0) }) { provider, clientID, fetches in
            let client = try await Self.client(provider, clientID)
            let tokens = try await Fixture.signIn(client, provider)
            #expect(tokens.refreshToken != nil)
            _ = try await client.requestToken(.refreshToken(try #require(tokens.refreshToken)))
            #expect(fetches() == 1)
            #expect(provider.clientMetadataDocumentRefusals.isEmpty, "\(provider.clientMetadataDocumentRefusals)")
            #expect(provider.clientMetadataDocumentRefusals.isEmpty)
        }
    }

    @Test("with a zero cache lifetime the document is fetched at every request")
    func noCache() async throws {
        try await Self.withSetup(cacheLifetime: .zero, reply: { Self.document($0) }) { provider, clientID, fetches in
            _ = try await Fixture.signIn(try await Self.client(provider, clientID), provider)
            #expect(fetches() == 2, "the authorization and the token request")
        }
    }

    @Test("a redirect_uri the document does not list is refused with an error page, never a redirect")
    func unlistedRedirect() async throws {
        try await Self.withSetup(reply: { Self.document($0) }) { provider, clientID, _ in
            let client = try await Self.client(provider, clientID, redirectURI: URL(string: "http://127.0.0.1:9/elsewhere")!)
            let request = try client.authorizationRequest()
            let error = await Fixture.providerError { _ = try await provider.followRedirect(from: request.url) }
            #expect(error?.code == .errorPage)
            #expect(error?.statusCode == 400)
        }
    }

    @Test("refused documents answer invalid_client without a redirect, and are recorded with their reason")
    func refusals() async throws {
        let cases: [(LocalHTTPServer.Reply?, TestProvider.ClientMetadataDocumentError.Code, Int)] = [
            (nil, .clientIDMismatch, 5120),  // the document names another client
            (.json(302, "{}", headers: [.location: "https://127.0.0.1:1/other.json"]), .badStatus, 5120),
            (.json(404, "{}"), .badStatus, 5120),
            (.body(200, Data("{}".utf8), contentType: "text/html"), .notJSON, 5120),
            (.json(200, "{\"client_id\": \"" + String(repeating: "x", count: 200) + "\"}"), .tooLarge, 64),
        ]
        for (reply, expected, size) in cases {
            try await Self.withSetup(maximumSize: size, reply: { reply ?? Self.document($0 + "x") }) { provider, clientID, _ in
                let client = try await Self.client(provider, clientID)
                let request = try client.authorizationRequest()
                let error = await Fixture.providerError { _ = try await provider.followRedirect(from: request.url) }
                #expect(error?.statusCode == 400, "\(expected)")
                #expect(error?.body?.contains("invalid_client") == true, "\(expected)")
                #expect(provider.clientMetadataDocumentRefusals.map(\.error.code) == [expected])
                #expect(provider.clientMetadataDocumentRefusals.first?.clientID == clientID)
            }
        }
    }

    @Test("a document server whose certificate the provider does not trust is refused (fetch_failed)")
    func untrusted() async throws {
        try await Self.withSetup(certificate: .unknownCA, reply: { Self.document($0) }) { provider, clientID, _ in
            let request = try (try await Self.client(provider, clientID)).authorizationRequest()
            let error = await Fixture.providerError { _ = try await provider.followRedirect(from: request.url) }
            #expect(error?.statusCode == 400)
            #expect(provider.clientMetadataDocumentRefusals.map(\.error.code) == [.fetchFailed])
        }
    }

    @Test("a client_id at an http URL is refused without a fetch (invalid_client_id_url), at the authorization and token endpoints")
    func httpClientID() async throws {
        try await Self.withSetup(reply: { Self.document($0) }) { provider, clientID, fetches in
            let insecure = clientID.replacingOccurrences(of: "https://", with: "http://")
            let request = try (try await Self.client(provider, insecure)).authorizationRequest()
            let error = await Fixture.providerError { _ = try await provider.followRedirect(from: request.url) }
            #expect(error?.statusCode == 400)
            #expect(error?.body?.contains("https") == true)
            let (response, body) = try await Fixture.send(
                .post, provider.url(for: .token),
                form: [("grant_type", "authorization_code"), ("code", "x"), ("client_id", insecure), ("redirect_uri", Fixture.redirectURI.absoluteString), ("code_verifier", String(repeating: "a", count: 43))])
            #expect(response.status.code == 401)
            #expect(Fixture.json(body)["error"] == .string("invalid_client"))
            #expect(provider.clientMetadataDocumentRefusals.map(\.error.code) == [.invalidClientIDURL, .invalidClientIDURL])
            #expect(fetches() == 0)
        }
    }
}

/// A thread-safe counter for handlers.
final class Counter: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var count = 0
    func increment() { lock.withLock { count += 1 } }
    func set(_ value: Int) { lock.withLock { count = value } }
    var value: Int { lock.withLock { count } }
}
