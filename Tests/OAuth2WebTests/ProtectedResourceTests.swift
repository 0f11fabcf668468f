import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// An API as an RFC 9728 protected resource: the metadata's place and document, the route
/// that serves it, the challenges that point to it, and tokens bound to the resource's
/// identifier (RFC 8707). No socket: requests are `HTTPRequest` values.
@Suite struct ProtectedResourceTests {
    static let identifier = URL(string: "https://api.example.com/mcp")!
    static let metadataURL = "https://api.example.com/.well-known/oauth-protected-resource/mcp"
    let date = ManualDate(TestIssuer.start)

    func resource(_ identifier: URL = identifier, scopes: [String]? = ["tools:read", "tools:call"]) throws(OAuth2Error) -> ProtectedResource {
        try ProtectedResource(
            identifier: identifier, scopesSupported: scopes, name: "Example MCP server",
            documentation: URL(string: "https://docs.example.com/mcp"))
    }

    /// JWTs of `TestIssuer`, whose configured audience is `https://api.example.com` (another
    /// name of the API, kept for the tokens issued before the resource was configured).
    func server(_ resource: ProtectedResource? = nil, dpop: Bool = false, bearer: Bool = true, realm: String? = nil) throws -> ResourceServer {
        var verifier = DPoPProofVerifier(publicBaseURL: URL(string: "https://api.example.com")!, allowedAlgorithms: [.es256, .ps256])
        verifier.now = date.function
        return try ResourceServer(
            resource: resource ?? self.resource(), accessTokens: TestIssuer.verifier(date: date), dpop: dpop ? verifier : nil,
            acceptsBearerTokens: bearer, realm: realm, logger: .init(label: "test"))
    }

    func request(_ method: HTTPRequest.Method = .get, path: String, authority: String = "api.example.com", authorization: String? = nil) -> HTTPRequest {
        var fields = HTTPFields()
        if let authorization { fields[.authorization] = authorization }
        return HTTPRequest(method: method, scheme: "https", authority: authority, path: path, headerFields: fields)
    }

    func document(_ server: ResourceServer) throws -> [String: JSONValue] {
        let answer = try #require(server.metadataResponse(for: request(path: "/.well-known/oauth-protected-resource/mcp")))
        return try JSONDecoder().decode([String: JSONValue].self, from: Data(answer.body))
    }

    func configurationError(_ body: () throws(OAuth2Error) -> Void) -> OAuth2Error.Code? {
        do {
            try body()
            return nil
        } catch {
            return error.code
        }
    }

    // MARK: - The metadata's place (RFC 9728 §3.1)

    @Test func theWellKnownSegmentGoesBetweenTheHostAndThePath() throws {
        func place(_ resource: String) throws -> String {
            try ProtectedResourceMetadata.metadataURL(for: URL(string: resource)!).absoluteString
        }
        #expect(try place("https://api.example.com/mcp") == Self.metadataURL)
        #expect(try place("https://api.example.com/tenant/a/mcp") == "https://api.example.com/.well-known/oauth-protected-resource/tenant/a/mcp")
        // No path, or only the slash after the host: the bare well-known URL.
        #expect(try place("https://api.example.com") == "https://api.example.com/.well-known/oauth-protected-resource")
        #expect(try place("https://api.example.com/") == "https://api.example.com/.well-known/oauth-protected-resource")
        // A trailing slash of a longer path is part of the path: another resource.
        #expect(try place("https://api.example.com/mcp/") == "https://api.example.com/.well-known/oauth-protected-resource/mcp/")
        // Scheme and host lower-cased, the default port dropped, another port kept.
        #expect(try place("HTTPS://API.Example.COM:443/MCP") == "https://api.example.com/.well-known/oauth-protected-resource/MCP")
        #expect(try place("https://api.example.com:8443/mcp") == "https://api.example.com:8443/.well-known/oauth-protected-resource/mcp")
        // Plain HTTP on a loopback host, for development.
        #expect(try place("http://127.0.0.1:8080/mcp") == "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp")
    }

    @Test func aResourceIdentifierWithAQueryAFragmentOrPlainHTTPIsRefused() {
        func code(_ resource: String) -> OAuth2Error.Code? {
            configurationError { () throws(OAuth2Error) in _ = try ProtectedResourceMetadata.metadataURL(for: URL(string: resource)!) }
        }
        #expect(code("https://api.example.com/mcp?tenant=a") == .invalidConfiguration)
        #expect(code("https://api.example.com/mcp?") == .invalidConfiguration)
        #expect(code("https://api.example.com/mcp#tools") == .invalidConfiguration)
        #expect(code("https://user:pass@api.example.com/mcp") == .invalidConfiguration)
        #expect(code("http://api.example.com/mcp") == .insecureEndpoint)
        #expect(code("/mcp") == .insecureEndpoint)
        // The same rules when the resource is configured.
        #expect(configurationError { () throws(OAuth2Error) in _ = try resource(URL(string: "https://api.example.com/mcp?x=1")!) } == .invalidConfiguration)
        #expect(configurationError { () throws(OAuth2Error) in _ = try resource(scopes: ["tools call"]) } == .invalidConfiguration)
        #expect(
            configurationError { () throws(OAuth2Error) in
                _ = try ProtectedResource(identifier: Self.identifier, authorizationServers: ["http://id.example.com"])
            } == .insecureEndpoint)
    }

    // MARK: - The document (RFC 9728 §2)

    @Test func theDocumentIsBuiltFromTheConfiguration() throws {
        let document = try document(server(dpop: true))
        #expect(document["resource"] == "https://api.example.com/mcp")
        // The authorization servers: the verifier's trusted issuers, unless configured.
        #expect(document["authorization_servers"] == .array([.string(TestIssuer.issuer)]))
        #expect(document["scopes_supported"] == ["tools:read", "tools:call"])
        #expect(document["bearer_methods_supported"] == ["header"])
        #expect(document["dpop_signing_alg_values_supported"] == ["ES256", "PS256"])
        #expect(document["dpop_bound_access_tokens_required"] == false)
        #expect(document["resource_name"] == "Example MCP server")
        #expect(document["resource_documentation"] == "https://docs.example.com/mcp")
        #expect(document["signed_metadata"] == nil)
        // The typed value says the same.
        let metadata = try #require(try server(dpop: true).metadata)
        #expect(metadata.resource == "https://api.example.com/mcp")
        #expect(metadata.authorizationServers == [TestIssuer.issuer])
        #expect(metadata.dpopBoundAccessTokensRequired == false)
        #expect(try JSONDecoder().decode(ProtectedResourceMetadata.self, from: JSONEncoder().encode(metadata)) == metadata)
    }

    @Test func dpopMembersFollowTheServersSchemes() throws {
        let dpopOnly = try document(server(dpop: true, bearer: false))
        #expect(dpopOnly["dpop_bound_access_tokens_required"] == true)
        let bearerOnly = try document(server(dpop: false))
        #expect(bearerOnly["dpop_signing_alg_values_supported"] == nil)
        #expect(bearerOnly["dpop_bound_access_tokens_required"] == nil)
    }

    @Test func configuredAuthorizationServersAndExtraMembers() throws {
        let resource = try ProtectedResource(
            identifier: Self.identifier, authorizationServers: ["https://login.example.com/tenant"],
            additionalFields: ["resource_policy_uri": "https://example.com/policy", "resource": "https://evil.example"])
        let document = try document(server(resource))
        #expect(document["authorization_servers"] == ["https://login.example.com/tenant"])
        #expect(document["resource_policy_uri"] == "https://example.com/policy")
        // A registered member the server sets wins over an extra one.
        #expect(document["resource"] == "https://api.example.com/mcp")
        #expect(document["scopes_supported"] == nil)
    }

    @Test func noAuthorizationServerToAdvertiseIsAConfigurationError() throws {
        let dpop = DPoPProofVerifier(publicBaseURL: URL(string: "https://api.example.com")!)
        let resource = try resource()
        let code = configurationError { () throws(OAuth2Error) in _ = try ResourceServer(resource: resource, dpop: dpop) }
        #expect(code == .invalidConfiguration)
    }

    @Test func signedMetadataIsAJWSOfTheMembersWithTheAttestingIssuer() throws {
        let key = try JWSSigningKey.generate(.es256, keyID: "metadata-1")
        let resource = try ProtectedResource(
            identifier: Self.identifier, scopesSupported: ["tools:call"],
            signature: ProtectedResource.MetadataSignature(key: key, issuer: "https://api.example.com"))
        let document = try document(server(resource))
        let signed = try #require(document["signed_metadata"]?.stringValue)
        let jws = try JWS(compact: signed)
        #expect(jws.isSigned(by: try #require(key.publicKey)))
        let claims = try jws.claims()
        #expect(claims["iss"] == "https://api.example.com")
        #expect(claims["resource"] == "https://api.example.com/mcp")
        #expect(claims["scopes_supported"] == ["tools:call"])
        #expect(claims["signed_metadata"] == nil)
    }

    @Test func theDocumentNeedsAResource() throws {
        #expect(throws: OAuth2Error.self) { try ProtectedResourceMetadata(fields: ["authorization_servers": ["https://id.example.com"]]) }
        #expect(throws: OAuth2Error.self) { try ProtectedResourceMetadata(fields: ["resource": "https://a.example", "scopes_supported": "a b"]) }
        let parsed = try ProtectedResourceMetadata(fields: ["resource": "https://a.example", "bearer_methods_supported": ["header"], "x-more": 1])
        #expect(parsed.bearerMethodsSupported == ["header"])
        #expect(parsed.fields["x-more"] == 1)
    }

    // MARK: - The route

    @Test func theRouteAnswersGETAndHEADAtItsPathOnly() throws {
        let server = try server()
        let get = try #require(server.metadataResponse(for: request(path: "/.well-known/oauth-protected-resource/mcp")))
        #expect(get.status == .ok)
        #expect(get.headerFields[.contentType] == "application/json")
        #expect(get.headerFields[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
        #expect(get.headerFields[.cacheControl] == "public, max-age=3600")
        #expect(get.headerFields[.accessControlAllowOrigin] == "*")
        let head = try #require(server.metadataResponse(for: request(.head, path: "/.well-known/oauth-protected-resource/mcp")))
        #expect(head.status == .ok && head.body.isEmpty)
        #expect(head.headerFields[.contentType] == "application/json")
        // A query changes nothing.
        #expect(server.metadataResponse(for: request(path: "/.well-known/oauth-protected-resource/mcp?x=1"))?.body == get.body)
        // Other methods: 405; a CORS preflight: 204.
        let post = try #require(server.metadataResponse(for: request(.post, path: "/.well-known/oauth-protected-resource/mcp")))
        #expect(post.status == .methodNotAllowed)
        #expect(post.headerFields[.allow] == "GET, HEAD, OPTIONS")
        #expect(post.body.isEmpty)
        #expect(server.metadataResponse(for: request(.options, path: "/.well-known/oauth-protected-resource/mcp"))?.status == .noContent)
        // Other paths are not the route's: the root well-known URL belongs to the resource
        // `https://api.example.com`, not to this one.
        for path in [
            "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/", "/.well-known/oauth-protected-resource/mcp/",
            "/.well-known/oauth-protected-resource/mcpx", "/mcp", "/.well-known/oauth-protected-resource/MCP",
        ] {
            #expect(server.metadataResponse(for: request(path: path)) == nil, "\(path)")
        }
        // A resource server without a resource serves nothing.
        let plain = ResourceServer(accessTokens: TestIssuer.verifier(date: date))
        #expect(plain.metadataResponse(for: request(path: "/.well-known/oauth-protected-resource/mcp")) == nil)
        #expect(plain.metadata == nil)
    }

    @Test func aResourceWithoutAPathIsServedAtTheBareWellKnownPath() throws {
        let server = try server(resource(URL(string: "https://api.example.com/")!))
        let answer = try #require(server.metadataResponse(for: request(path: "/.well-known/oauth-protected-resource")))
        let document = try JSONDecoder().decode([String: JSONValue].self, from: Data(answer.body))
        #expect(document["resource"] == "https://api.example.com/")
        #expect(server.metadataResponse(for: request(path: "/.well-known/oauth-protected-resource/mcp")) == nil)
    }

    @Test func aHostileHostHeaderChangesNothing() async throws {
        let server = try server()
        let honest = try #require(server.metadataResponse(for: request(path: "/.well-known/oauth-protected-resource/mcp")))
        let hostile = try #require(server.metadataResponse(for: request(path: "/.well-known/oauth-protected-resource/mcp", authority: "evil.example")))
        #expect(honest.body == hostile.body)
        #expect(!String(decoding: hostile.body, as: UTF8.self).contains("evil"))
        // The challenges point to the configured place, whatever the Host.
        let refused = await server.authorize(request(path: "/mcp", authority: "evil.example"))
        guard case .refused(let challenge) = refused else { return #expect(Bool(false), "accepted without a token") }
        #expect(challenge.headerFields[.wwwAuthenticate]?.contains("evil") == false)
    }

    // MARK: - Challenges (RFC 9728 §5.1, RFC 6750 §3)

    func challenge(_ server: ResourceServer, authorization: String? = nil, scopes: [String] = ["tools:call"]) async throws -> AccessTokenChallenge {
        let decision = await server.authorize(request(path: "/mcp", authorization: authorization), requiredScopes: scopes)
        guard case .refused(let challenge) = decision else { throw AccessTokenError(.invalidRequest, reason: .malformed, "accepted") }
        return challenge
    }

    @Test func aRequestWithoutATokenLearnsWhereTheMetadataIsAndWhichScopes() async throws {
        let challenge = try await challenge(server())
        #expect(challenge.status == .unauthorized)
        let header = try #require(challenge.headerFields[.wwwAuthenticate])
        #expect(header == #"Bearer scope="tools:call", resource_metadata="\#(Self.metadataURL)""#)
        let parsed = try #require(WWWAuthenticate(header))
        #expect(parsed.parameters["resource_metadata"] == Self.metadataURL)
        #expect(parsed.parameters["error"] == nil)
    }

    @Test func anInvalidTokenGetsItsErrorAndTheMetadata() async throws {
        let expired = TestIssuer.token(at: date.now.addingTimeInterval(-7200)) { $0["aud"] = .string(Self.identifier.absoluteString) }
        let challenge = try await challenge(server(), authorization: "Bearer \(expired)")
        #expect(challenge.status == .unauthorized)
        let header = try #require(challenge.headerFields[.wwwAuthenticate])
        let parsed = try #require(WWWAuthenticate(header))
        #expect(parsed.parameters["error"] == "invalid_token")
        #expect(parsed.parameters["resource_metadata"] == Self.metadataURL)
        #expect(parsed.parameters["scope"] == "tools:call")
    }

    @Test func aMissingScopeIs403NamingTheRoutesScopes() async throws {
        let token = TestIssuer.token { $0["aud"] = .string(Self.identifier.absoluteString) }
        let challenge = try await challenge(server(), authorization: "Bearer \(token)", scopes: ["tools:call", "orders:read"])
        #expect(challenge.status == .forbidden)
        let header = try #require(challenge.headerFields[.wwwAuthenticate])
        let parsed = try #require(WWWAuthenticate(header))
        #expect(parsed.parameters["error"] == "insufficient_scope")
        #expect(parsed.parameters["scope"] == "tools:call orders:read")
        #expect(parsed.parameters["resource_metadata"] == Self.metadataURL)
    }

    @Test func everyChallengeOfSeveralSchemesNamesTheMetadata() async throws {
        let challenge = try await challenge(server(dpop: true, realm: "mcp"))
        let header = try #require(challenge.headerFields[.wwwAuthenticate])
        #expect(
            header
                == #"Bearer realm="mcp", scope="tools:call", resource_metadata="\#(Self.metadataURL)", DPoP realm="mcp", scope="tools:call", resource_metadata="\#(Self.metadataURL)", algs="ES256 PS256""#
        )
        // A DPoP-only API: one DPoP challenge, still with the metadata and the algorithms.
        let dpopOnly = try #require(try await self.challenge(server(dpop: true, bearer: false)).headerFields[.wwwAuthenticate])
        #expect(dpopOnly == #"DPoP scope="tools:call", resource_metadata="\#(Self.metadataURL)", algs="ES256 PS256""#)
    }

    @Test func parameterValuesAreQuotedAndEscaped() {
        let error = AccessTokenError(.insufficientScope, reason: .missingScope, "Needs \"more\".", requiredScopes: ["a", "b\"c", "d e", "f"])
        let challenge = AccessTokenChallenge(
            error: error, schemes: [.bearer], realm: #"say "hi" \ bye"#, resourceMetadata: URL(string: Self.metadataURL)!)
        let header = challenge.headerFields[.wwwAuthenticate]
        // Quotes and backslashes escaped; a "scope" that is no scope token left out; the
        // description keeps only the characters RFC 6750 §3 allows.
        #expect(
            header
                == #"Bearer realm="say \"hi\" \\ bye", error="insufficient_scope", error_description="Needs more.", scope="a f", resource_metadata="\#(Self.metadataURL)""#
        )
        // Without a resource, the challenge is as before.
        let bare = AccessTokenChallenge(error: AccessTokenError(.missingToken, reason: .missingToken, "none"), schemes: [.bearer])
        #expect(bare.headerFields[.wwwAuthenticate] == "Bearer")
    }

    // MARK: - Tokens for this resource (RFC 8707)

    func verdict(_ server: ResourceServer, _ token: String) async -> AccessTokenError? {
        await refusal { () async throws(AccessTokenError) in try await server.verifyToken(token) }
    }

    @Test func aJWTMustNameThisResource() async throws {
        let server = try server()
        // `aud` a string or an array naming the identifier.
        #expect(await verdict(server, TestIssuer.token { $0["aud"] = "https://api.example.com/mcp" }) == nil)
        #expect(await verdict(server, TestIssuer.token { $0["aud"] = ["https://other.example", "https://api.example.com/mcp"] }) == nil)
        // The issuer's configured audience still names the API: existing tokens keep working.
        #expect(await verdict(server, TestIssuer.token()) == nil)
        // Another resource, on this host or another; a near miss; no aud.
        for audience: JSONValue in [
            "https://api.example.com/other-mcp", "https://api.example.com/mcp/", "https://other.example/mcp", "https://api.example.com/mcp?x",
            ["https://other.example/mcp"], [],
        ] {
            let refused = await verdict(server, TestIssuer.token { $0["aud"] = audience })
            #expect(refused?.code == .invalidToken, "\(audience)")
            #expect(refused?.reason == .jose(.audienceMismatch), "\(audience)")
            #expect(refused?.status == .unauthorized)
        }
        let missing = await verdict(server, TestIssuer.token { $0["aud"] = nil })
        #expect(missing?.reason == .jose(.audienceMismatch))
        // Through the whole check: 401 invalid_token with the metadata.
        let challenge = try await challenge(server, authorization: "Bearer \(TestIssuer.token { $0["aud"] = "https://other.example/mcp" })")
        #expect(challenge.status == .unauthorized)
        #expect(challenge.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
    }

    @Test func aResourceWithoutAPathIsNamedWithOrWithoutTheSlash() async throws {
        let issuer = TrustedIssuer(issuer: TestIssuer.issuer, audiences: [], keys: .fixed(TestIssuer.keySet))
        var verifier = AccessTokenVerifier(issuers: [issuer])
        verifier.now = date.function
        let server = try ResourceServer(resource: ProtectedResource(identifier: URL(string: "https://MCP.example.com")!), accessTokens: verifier)
        #expect(await verdict(server, TestIssuer.token { $0["aud"] = "https://mcp.example.com" }) == nil)
        #expect(await verdict(server, TestIssuer.token { $0["aud"] = "https://mcp.example.com/" }) == nil)
        #expect(await verdict(server, TestIssuer.token { $0["aud"] = "https://mcp.example.com/mcp" })?.reason == .jose(.audienceMismatch))
        // The issuer names no audience of its own: only the resource's identifier is accepted.
        #expect(await verdict(server, TestIssuer.token())?.reason == .jose(.audienceMismatch))
        // The same verifier without the resource accepts nothing (an empty audience set).
        #expect(await refusal { () async throws(AccessTokenError) in try await verifier.verify(TestIssuer.token { $0["aud"] = "https://mcp.example.com" }) } != nil)
    }

    /// An introspector whose server answers `answers[token]`, accepting answers with `aud`
    /// `https://api.example.com` (the API's older name), or without `aud` from `client-1`.
    func introspectingServer(_ answers: [String: String]) throws -> ResourceServer {
        let transport = RecordingTransport { _, body in
            let form = FormURLEncoding.decode(String(decoding: body ?? Data(), as: UTF8.self)) ?? []
            let token = form.first { $0.0 == "token" }?.1 ?? ""
            return jsonResponse(200, answers[token] ?? #"{"active":false}"#)
        }
        let metadata = ServerMetadata(
            issuer: URL(string: TestIssuer.issuer)!, tokenEndpoint: URL(string: "https://id.example.com/token")!,
            introspectionEndpoint: URL(string: "https://id.example.com/introspect")!)
        let client = try OAuth2Client(
            metadata: metadata, configuration: ClientConfiguration(clientID: "mcp-api", clientSecret: "api-secret"),
            environment: HTTPEnvironment(transport: transport, retryPolicy: .never))
        let introspector = TokenIntrospector(
            client: client, accepting: .init(audiences: ["https://api.example.com"], clientIDs: ["client-1"]), issuer: nil, policy: .init(),
            logger: CapturedLog().logger(), now: date.function)
        return try ResourceServer(resource: resource(), introspection: introspector)
    }

    @Test func anIntrospectionAnswerMustNameThisResource() async throws {
        let exp = Int(date.now.timeIntervalSince1970) + 300
        func answer(_ extra: String) -> String {
            #"{"active":true,"sub":"user-1","client_id":"client-1","scope":"tools:call","exp":\#(exp)\#(extra)}"#
        }
        let server = try introspectingServer([
            "for-mcp": answer(#","aud":"https://api.example.com/mcp""#),
            "for-several": answer(#","aud":["https://other.example","https://api.example.com/mcp"]"#),
            "for-old-name": answer(#","aud":"https://api.example.com""#),
            "for-other": answer(#","aud":"https://other.example/mcp""#),
            "no-aud": answer(""),
        ])
        #expect(await verdict(server, "for-mcp") == nil)
        #expect(await verdict(server, "for-several") == nil)
        #expect(await verdict(server, "for-old-name") == nil, "the introspector's own audiences still name the API")
        #expect(await verdict(server, "no-aud") == nil, "without aud, the introspector's client rule applies as before")
        let other = await verdict(server, "for-other")
        #expect(other?.code == .invalidToken)
        #expect(other?.reason == .jose(.audienceMismatch))
        // The introspector alone (no resource) refuses the resource's tokens: the identifier
        // names the API only through the resource server that is configured with it.
        let introspector = try #require(server.introspection)
        #expect(await refusal { () async throws(AccessTokenError) in try await introspector.verify("for-mcp") }?.reason == .jose(.audienceMismatch))
    }
}
