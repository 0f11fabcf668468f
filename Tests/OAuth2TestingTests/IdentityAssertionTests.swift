import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2Testing
import OAuth2TestSupport
import OAuth2Web
import Testing

/// The identity assertion grant (MCP enterprise-managed authorization, SEP-990) with two
/// providers on ephemeral ports: one the organisation's identity provider (leg 1, token
/// exchange of its ID token for an ID-JAG), the other the MCP server's authorization server
/// (leg 2, the JWT bearer grant), and the library's client between them.
@Suite("Identity assertion grant")
struct IdentityAssertionTests {
    static let mcp = URL(string: "https://mcp.example.com/mcp")!
    static let agentID = "mcp-agent"
    static let agentSecret = "mcp-agent-secret"
    static let resourceServerID = "mcp-server"
    static let resourceServerSecret = "mcp-server-secret"

    /// The demo provider as the identity provider: its confidential client is `mcp-agent`
    /// at the authorization server.
    static func identityProviderConfiguration() -> TestProvider.Configuration {
        var configuration = TestProvider.Configuration.demo
        configuration.identityAssertions.clientIDsAtAuthorizationServers = [TestProvider.Demo.confidentialClientID: agentID]
        return configuration
    }

    /// The MCP server's authorization server, trusting `trusted`.
    static func authorizationServerConfiguration(trusting trusted: [TestProvider.IdentityAssertions.TrustedIssuer]) -> TestProvider.Configuration {
        var configuration = TestProvider.Configuration(
            clients: [
                .init(id: agentID, secret: agentSecret, grantTypes: [.jwtBearer], allowedScopes: ["mcp:read", "mcp:write"]),
                .init(id: "other-agent", secret: "other-secret", grantTypes: [.jwtBearer]),
                .init(id: "public-agent", grantTypes: [.jwtBearer]),
                .init(id: resourceServerID, secret: resourceServerSecret, grantTypes: [.clientCredentials]),
            ],
            users: [])
        configuration.identityAssertions.trustedIssuers = trusted
        return configuration
    }

    static func client(_ provider: TestProvider, id: String, secret: String?, scopes: [String] = []) async throws -> OAuth2Client {
        try await OAuth2Client(
            server: .issuer(provider.issuer),
            configuration: ClientConfiguration(clientID: id, clientSecret: secret, scopes: scopes),
            environment: HTTPEnvironment(metadataCache: MetadataCache()))
    }

    /// The identity provider's client, and the user's ID token from it.
    static func signedIn(_ idp: TestProvider) async throws -> (OAuth2Client, String) {
        let client = try await Self.client(
            idp, id: TestProvider.Demo.confidentialClientID, secret: TestProvider.Demo.confidentialClientSecret, scopes: ["openid"])
        let tokens = try await client.password(username: TestProvider.Demo.username, password: TestProvider.Demo.password)
        return (client, try #require(tokens.idToken))
    }

    /// Runs `body` with an identity provider and an authorization server that trusts it.
    static func withBoth(_ body: (TestProvider, TestProvider) async throws -> Void) async throws {
        try await TestProvider.withProvider(configuration: identityProviderConfiguration()) { idp in
            let trusted = TestProvider.IdentityAssertions.TrustedIssuer(issuer: idp.issuer.absoluteString, keys: idp.publicKeys)
            try await TestProvider.withProvider(configuration: authorizationServerConfiguration(trusting: [trusted])) { server in
                try await body(idp, server)
            }
        }
    }

    // MARK: - The whole flow

    @Test("ID token → ID-JAG at the identity provider → access token at the authorization server, bound to the MCP resource")
    func wholeFlow() async throws {
        try await Self.withBoth { idp, server in
            let (idpClient, idToken) = try await Self.signedIn(idp)
            let agent = try await Self.client(server, id: Self.agentID, secret: Self.agentSecret)
            let flow = IdentityAssertionAuthorization(
                identityProvider: idpClient, authorizationServer: agent, resource: Self.mcp, scopes: ["mcp:read"])

            let grant = try await flow.grant(idToken: idToken)
            let jws = try JWS(compact: grant.assertion)
            #expect(jws.type == "oauth-id-jag+jwt")
            let claims = try jws.claims()
            #expect(claims["iss"] == .string(idp.issuer.absoluteString))
            #expect(claims["sub"] == .string(TestProvider.Demo.subject))
            #expect(claims["aud"] == .string(server.issuer.absoluteString))
            #expect(claims["client_id"] == .string(Self.agentID), "the client's id at the authorization server")
            #expect(claims["resource"] == .string(Self.mcp.absoluteString))
            #expect(claims["scope"] == "mcp:read")
            #expect(claims["jti"]?.stringValue?.isEmpty == false)
            #expect(claims["exp"] != nil && claims["iat"] != nil)
            #expect(try JSONWebKeySet(data: idp.publicKeys.jsonData).candidates(for: jws.algorithm, keyID: jws.keyID).contains { jws.isSigned(by: $0) })

            let tokens = try await agent.jwtBearer(grant)
            #expect(tokens.scopes == ["mcp:read"])
            #expect(tokens.refreshToken == nil)

            // The MCP server's check: introspection at its authorization server, tokens for its resource only.
            let resourceServer = try await Self.client(server, id: Self.resourceServerID, secret: Self.resourceServerSecret)
            let introspector = TokenIntrospector(client: resourceServer, accepting: .audiences([Self.mcp.absoluteString]))
            let verified = try await introspector.verify(tokens.accessToken, requiredScopes: ["mcp:read"])
            #expect(verified.subject == TestProvider.Demo.subject)
            #expect(verified.clientID == Self.agentID)
            let elsewhere = TokenIntrospector(client: resourceServer, accepting: .audiences(["https://other.example.com/mcp"]))
            await #expect(throws: AccessTokenError.self, "a token for the MCP resource is refused by another") {
                _ = try await elsewhere.verify(tokens.accessToken)
            }

            // The same again in one call: a new ID-JAG (new jti) each time.
            let again = try await flow.tokens(idToken: idToken)
            #expect(again.accessToken != tokens.accessToken)
        }
    }

    // MARK: - Leg 1: the identity provider's rules

    @Test("the identity provider refuses an ID token that is not its own for this client, and a wrong request")
    func identityProviderRules() async throws {
        try await Self.withBoth { idp, server in
            let (idpClient, idToken) = try await Self.signedIn(idp)
            let audience = server.issuer.absoluteString
            // An ID token issued to another client (its aud is the public client).
            let publicClient = try await Fixture.publicClient(idp, scopes: ["openid"])
            let othersIDToken = try #require(try await Fixture.signIn(publicClient, idp).idToken)
            for (subject, why) in [
                (othersIDToken, "issued to another client"), ("a.b.c", "not a JWT"),
                (String(idToken.dropLast(4)) + "AAAA", "signature"),
            ] {
                let error = await Fixture.oauthError {
                    _ = try await idpClient.requestIdentityAssertionGrant(idToken: subject, audience: audience)
                }
                #expect(error?.code == .invalidGrant, "\(why)")
                #expect(error?.message?.contains(subject) != true)
            }
            // Another requested type, an actor token, a public client.
            let wrongType = await Fixture.oauthError {
                _ = try await idpClient.exchangeToken(TokenExchangeRequest(
                    subject: .init(idToken, type: .idToken), audiences: [audience], requestedTokenType: .accessToken))
            }
            #expect(wrongType?.code == .invalidRequest)
            let withActor = await Fixture.oauthError {
                _ = try await idpClient.exchangeToken(TokenExchangeRequest(
                    subject: .init(idToken, type: .idToken), actor: .init(idToken, type: .idToken), audiences: [audience],
                    requestedTokenType: .identityAssertionGrant))
            }
            #expect(withActor?.code == .invalidRequest)
            let accessTokenSubject = await Fixture.oauthError {
                _ = try await idpClient.exchangeToken(TokenExchangeRequest(
                    subject: .init(idToken, type: .accessToken), audiences: [audience], requestedTokenType: .identityAssertionGrant))
            }
            #expect(accessTokenSubject?.code == .invalidRequest)
            let noAudience = await Fixture.oauthError {
                _ = try await idpClient.exchangeToken(TokenExchangeRequest(
                    subject: .init(idToken, type: .idToken), requestedTokenType: .identityAssertionGrant))
            }
            #expect(noAudience?.code == .invalidRequest)
            let itself = await Fixture.oauthError {
                _ = try await idpClient.requestIdentityAssertionGrant(idToken: idToken, audience: idp.issuer.absoluteString)
            }
            #expect(itself?.code == .invalidTarget, "an ID-JAG is for another authorization server")
        }
    }

    @Test("the identity provider issues only for its configured audiences")
    func identityProviderAudiences() async throws {
        var configuration = Self.identityProviderConfiguration()
        configuration.identityAssertions.audiences = ["https://as.example.com"]
        try await TestProvider.withProvider(configuration: configuration) { idp in
            let (idpClient, idToken) = try await Self.signedIn(idp)
            let refused = await Fixture.oauthError {
                _ = try await idpClient.requestIdentityAssertionGrant(idToken: idToken, audience: "https://evil.example.com")
            }
            #expect(refused?.code == .invalidTarget)
            let grant = try await idpClient.requestIdentityAssertionGrant(idToken: idToken, audience: "https://as.example.com")
            #expect(try JWS(compact: grant.assertion).claims()["aud"] == "https://as.example.com")
        }
    }

    // MARK: - Leg 2: the authorization server's rules

    /// An ID-JAG signed by `key` (trusted by the authorization server under `issuer`), with
    /// the claims changed by `change`.
    static func forged(
        key: JWSSigningKey, issuer: String, audience: String, typ: String? = "oauth-id-jag+jwt",
        _ change: (inout [String: JSONValue]) -> Void = { _ in }
    ) throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "sub": "alice", "aud": .string(audience), "client_id": .string(agentID),
            "jti": .string(UUID().uuidString), "iat": .integer(now), "exp": .integer(now + 300),
            "resource": .string(mcp.absoluteString), "scope": "mcp:read mcp:write",
        ]
        change(&claims)
        return try key.sign(claims: claims, header: typ.map { ["typ": .string($0)] } ?? [:])
    }

    @Test("the authorization server takes a good ID-JAG once, and refuses every broken rule with invalid_grant")
    func authorizationServerRules() async throws {
        let key = try JWSSigningKey.generate(.es256, keyID: "enterprise-idp")
        let stranger = try JWSSigningKey.generate(.es256, keyID: "enterprise-idp")
        let idpIssuer = "https://idp.enterprise.example.com"
        let trusted = TestProvider.IdentityAssertions.TrustedIssuer(issuer: idpIssuer, keys: JSONWebKeySet(keys: [key.publicKey!]))
        try await TestProvider.withProvider(configuration: Self.authorizationServerConfiguration(trusting: [trusted])) { server in
            let audience = server.issuer.absoluteString
            let agent = try await Self.client(server, id: Self.agentID, secret: Self.agentSecret)

            let good = try Self.forged(key: key, issuer: idpIssuer, audience: audience)
            let tokens = try await agent.jwtBearer(assertion: good, scopes: [])
            #expect(tokens.scopes == ["mcp:read", "mcp:write"], "the grant's scopes")
            let replayed = await Fixture.oauthError { _ = try await agent.jwtBearer(assertion: good, scopes: []) }
            #expect(replayed?.code == .invalidGrant)
            #expect(replayed?.message?.contains("jti") == true)

            let cases: [(String, String, String)] = [
                ("typ", try Self.forged(key: key, issuer: idpIssuer, audience: audience, typ: "JWT"), "typ"),
                ("no typ", try Self.forged(key: key, issuer: idpIssuer, audience: audience, typ: nil), "typ"),
                ("aud", try Self.forged(key: key, issuer: idpIssuer, audience: "https://other-as.example.com"), "aud"),
                ("expired", try Self.forged(key: key, issuer: idpIssuer, audience: audience) {
                    $0["exp"] = .integer(Int64(Date().timeIntervalSince1970) - 10)
                }, "expired"),
                ("untrusted issuer", try Self.forged(key: key, issuer: "https://idp.evil.example.com", audience: audience), "not trusted"),
                ("its own issuer", try Self.forged(key: key, issuer: audience, audience: audience), "this provider itself"),
                ("signature", try Self.forged(key: stranger, issuer: idpIssuer, audience: audience), "signature"),
                ("client_id", try Self.forged(key: key, issuer: idpIssuer, audience: audience) { $0["client_id"] = "other-agent" }, "client_id"),
                ("no jti", try Self.forged(key: key, issuer: idpIssuer, audience: audience) { $0["jti"] = nil }, "jti"),
                ("no sub", try Self.forged(key: key, issuer: idpIssuer, audience: audience) { $0["sub"] = nil }, "sub"),
                ("iat in the future", try Self.forged(key: key, issuer: idpIssuer, audience: audience) {
                    $0["iat"] = .integer(Int64(Date().timeIntervalSince1970) + 3600)
                }, "iat"),
            ]
            for (name, assertion, words) in cases {
                let error = await Fixture.oauthError { _ = try await agent.jwtBearer(assertion: assertion, scopes: []) }
                #expect(error?.code == .invalidGrant, "\(name)")
                #expect(error?.message?.contains(words) == true, "\(name): \(error?.message ?? "")")
                #expect(error?.message?.contains(assertion) != true)
            }

            // Another client presenting the agent's ID-JAG.
            let other = try await Self.client(server, id: "other-agent", secret: "other-secret")
            let stolen = await Fixture.oauthError {
                _ = try await other.jwtBearer(assertion: try Self.forged(key: key, issuer: idpIssuer, audience: audience), scopes: [])
            }
            #expect(stolen?.code == .invalidGrant)
            #expect(stolen?.message?.contains("client_id") == true)
            // A public client may not use the grant.
            let publicAgent = try await Self.client(server, id: "public-agent", secret: nil)
            let unauthorized = await Fixture.oauthError {
                _ = try await publicAgent.jwtBearer(
                    assertion: try Self.forged(key: key, issuer: idpIssuer, audience: audience) { $0["client_id"] = "public-agent" }, scopes: [])
            }
            #expect(unauthorized?.code == .unauthorizedClient)
        }
    }

    @Test("the authorization server binds the token to the ID-JAG's resource and scopes, and refuses wider ones")
    func resourceAndScopes() async throws {
        let key = try JWSSigningKey.generate(.rs256, keyID: "enterprise-idp")
        let idpIssuer = "https://idp.enterprise.example.com"
        let trusted = TestProvider.IdentityAssertions.TrustedIssuer(issuer: idpIssuer, keys: JSONWebKeySet(keys: [key.publicKey!]))
        try await TestProvider.withProvider(configuration: Self.authorizationServerConfiguration(trusting: [])) { server in
            let audience = server.issuer.absoluteString
            let agent = try await Self.client(server, id: Self.agentID, secret: Self.agentSecret)
            let untrustedYet = await Fixture.oauthError {
                _ = try await agent.jwtBearer(assertion: try Self.forged(key: key, issuer: idpIssuer, audience: audience), scopes: [])
            }
            #expect(untrustedYet?.code == .invalidGrant)
            server.trustIdentityAssertions(from: trusted)

            let resourceServer = try await Self.client(server, id: Self.resourceServerID, secret: Self.resourceServerSecret)
            let narrowed = try await agent.jwtBearer(
                IdentityAssertionGrant(
                    assertion: try Self.forged(key: key, issuer: idpIssuer, audience: audience), audience: audience, resource: Self.mcp),
                scopes: ["mcp:read"])
            let introspected = try await resourceServer.introspect(narrowed.accessToken)
            #expect(introspected.audience == [Self.mcp.absoluteString])
            #expect(introspected.scopes == ["mcp:read"])
            #expect(introspected.subject == "alice")

            let widerScope = await Fixture.oauthError {
                _ = try await agent.jwtBearer(
                    assertion: try Self.forged(key: key, issuer: idpIssuer, audience: audience) { $0["scope"] = "mcp:read" },
                    scopes: ["mcp:read", "mcp:write"])
            }
            #expect(widerScope?.code == .invalidScope)
            let otherResource = await Fixture.oauthError {
                _ = try await agent.jwtBearer(
                    IdentityAssertionGrant(
                        assertion: try Self.forged(key: key, issuer: idpIssuer, audience: audience), audience: audience,
                        resource: URL(string: "https://evil.example.com/mcp")!))
            }
            #expect(otherResource?.code == .invalidTarget)
        }
    }

    // MARK: - A peer: the MCP Python SDK

    /// The Python with the MCP SDK (`mcp` 2.3.0, as Tests/MCPPython/venv.sh pins it):
    /// `$OAUTH2_TEST_MCP_PYTHON`, which scripts/test sets.
    static let python: String? = {
        let candidate = ProcessInfo.processInfo.environment["OAUTH2_TEST_MCP_PYTHON"]
        return candidate.flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }
    }()

    /// Without the venv the test fails (a peer journey never skips): scripts/test makes it
    /// before `swift test` and sets `$OAUTH2_TEST_MCP_PYTHON`.
    @Test("the MCP Python SDK's IdentityAssertionOAuthProvider presents our identity provider's ID-JAG to our authorization server")
    func pythonSDK() async throws {
        let python = try #require(
            Self.python,
            "set OAUTH2_TEST_MCP_PYTHON to the python that Tests/MCPPython/venv.sh prints (scripts/test does)")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("MCPPython/identity_assertion.py")
        try await Self.withBoth { idp, server in
            let run = try await ChildProcess.run(
                python, arguments: [script.path, "--idp", idp.issuer.absoluteString, "--as", server.issuer.absoluteString],
                joinStandardError: true)
            let text = run.text
            print(text)
            #expect(run.succeeded, "\(text)")
            #expect(text.contains("RESULT passed=") && text.contains("failed=0"), "\(text)")
            if run.succeeded, text.contains("failed=0") {
                IntegrationLog.append("mcp", test: "python-identity-assertion")
            }
        }
    }
}
