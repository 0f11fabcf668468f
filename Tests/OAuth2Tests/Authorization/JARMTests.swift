import Foundation
import HTTPTypes
import OAuth2Internals
import Testing
@testable import OAuth2

/// JWT-secured authorization responses (JARM): asked for with `response_mode`, the
/// `response` JWT decrypted, verified with the provider's keys and checked (`iss`, `aud`,
/// `exp`) before its parameters get a plain response's checks; plain answers to a JARM
/// request refused. No socket: a recording transport serves the JWK set and the token
/// endpoint; the client's clock is fixed.
@Suite struct JARMTests {
    static let key = try! JWSSigningKey.generate(.rs256, keyID: "as-1")
    static let jwksURI = URL(string: "https://as.example.com/jwks")!
    static let metadata = Fixtures.metadata.filling(from: ServerMetadata(jwksURI: jwksURI))
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A transport serving the key set and answering the token endpoint.
    static func transport() -> StubTransport {
        StubTransport { request, _ in
            if request.url == jwksURI { return response(200, #"{"keys":[\#(JSONValue.object(key.publicKey!.jsonObject))]}"#) }
            return response(200, StubTransport.tokenJSON)
        }
    }

    static func configuration(_ jarm: JARMOptions? = JARMOptions(), encryption: EncryptionOptions? = nil) -> ClientConfiguration {
        var configuration = ClientConfiguration(clientID: "client-1", redirectURI: Fixtures.redirect, scopes: ["read"])
        configuration.jarm = jarm
        configuration.encryption = encryption
        return configuration
    }

    static func client(
        _ configuration: ClientConfiguration = configuration(), transport: StubTransport = transport(), now: Date = JARMTests.now
    ) throws -> OAuth2Client {
        try OAuth2Client(
            metadata: metadata, configuration: configuration,
            pipeline: HTTPPipeline(
                transport: transport, interceptors: [], logger: .init(label: "test"), userAgent: HTTPEnvironment.defaultUserAgent,
                additionalHeaders: [:]),
            now: { now })
    }

    /// A response's claims: the code and the request's state, from the issuer to the client,
    /// expiring in five minutes.
    static func claims(
        _ request: AuthorizationRequest, iss: String = Fixtures.issuer, aud: JSONValue = "client-1",
        exp: Date? = JARMTests.now.addingTimeInterval(300), extra: [String: JSONValue] = ["code": "c-1"]
    ) -> [String: JSONValue] {
        var claims: [String: JSONValue] = ["iss": .string(iss), "aud": aud, "state": .string(request.state)]
        if let exp { claims["exp"] = .integer(Int64(exp.timeIntervalSince1970)) }
        claims.merge(extra) { _, new in new }
        return claims
    }

    static func callback(_ response: String, fragment: Bool = false) -> URL {
        URL(string: "http://127.0.0.1:9999/callback\(fragment ? "#" : "?")response=\(response)")!
    }

    /// The error `body` throws, checked to name neither the JWT nor the code.
    static func refusal(_ jwt: String, _ body: () async throws -> Any) async -> OAuth2Error? {
        do {
            _ = try await body()
            Issue.record("accepted")
            return nil
        } catch let error as OAuth2Error {
            #expect(!error.description.contains(jwt) && !error.description.contains("c-1"), "the JWT and its code are never echoed")
            return error
        } catch {
            Issue.record("untyped: \(error)")
            return nil
        }
    }

    @Test("A JARM request asks for the configured mode; its signed response is verified and read")
    func aSignedResponseIsVerifiedAndRead() async throws {
        let client = try Self.client()
        let request = try client.authorizationRequest()
        let query = Dictionary(uniqueKeysWithValues: (URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") })
        #expect(query["response_mode"] == "jwt")
        #expect(request.responseMode == "jwt" && request.asksForJWTResponse)
        let response = try await client.authorizationResponse(callbackURL: Self.callback(try Self.key.sign(claims: Self.claims(request))), request: request)
        #expect(response.code == "c-1")
        #expect(response.state == request.state)
        #expect(response.issuer == Fixtures.issuer)
        #expect(response.parameters["aud"] == nil && response.parameters["exp"] == nil)
    }

    @Test("fragment.jwt and form_post.jwt responses; a JARM mode named by the call alone takes RS256")
    func fragmentAndFormPost() async throws {
        let client = try Self.client(Self.configuration(nil))
        let fragment = try client.authorizationRequest(AuthorizationOptions(responseMode: "fragment.jwt"))
        let signed = try Self.key.sign(claims: Self.claims(fragment))
        #expect(try await client.authorizationResponse(callbackURL: Self.callback(signed, fragment: true), request: fragment).code == "c-1")
        let posted = try client.authorizationRequest(AuthorizationOptions(responseMode: "form_post.jwt"))
        let body = [("response", try Self.key.sign(claims: Self.claims(posted)))]
        #expect(try await client.authorizationResponse(parameters: body, request: posted).code == "c-1")
        // A plain request through the same call gets the plain checks.
        let plain = try client.authorizationRequest()
        #expect(!plain.asksForJWTResponse)
        let answer = try await client.authorizationResponse(callbackURL: URL(string: "http://127.0.0.1:9999/callback?code=p-1&state=\(plain.state)")!, request: plain)
        #expect(answer.code == "p-1")
    }

    @Test("completeAuthorization verifies the JWT, then exchanges its code")
    func completeAuthorizationExchangesTheCode() async throws {
        let transport = Self.transport()
        let client = try Self.client(transport: transport)
        let request = try client.authorizationRequest()
        let tokens = try await client.completeAuthorization(callbackURL: Self.callback(try Self.key.sign(claims: Self.claims(request))), request: request)
        #expect(tokens.accessToken == "at-1")
        let sent = try #require(transport.sent.first { $0.request.path == "/token" })
        #expect(sent.form["code"] == "c-1")
        #expect(sent.form["code_verifier"] == request.codeVerifier)
    }

    @Test("An error inside a verified JWT is the server's typed error")
    func anErrorInsideIsTyped() async throws {
        let client = try Self.client()
        let request = try client.authorizationRequest()
        let signed = try Self.key.sign(claims: Self.claims(request, extra: ["error": "access_denied", "error_description": "The user said no."]))
        let error = await Self.refusal(signed) { try await client.authorizationResponse(callbackURL: Self.callback(signed), request: request) }
        #expect(error?.code == .accessDenied && error?.source == .server)
        #expect(error?.message == "The user said no.")
    }

    @Test("Plain parameters to a JARM request are a downgrade, refused before the token endpoint")
    func plainParametersAreADowngrade() async throws {
        let transport = Self.transport()
        let client = try Self.client(transport: transport)
        let request = try client.authorizationRequest()
        let signed = try Self.key.sign(claims: Self.claims(request))
        for query in [
            "code=c-1&state=\(request.state)", "error=access_denied&state=\(request.state)", "response=\(signed)&code=c-1",
            "response=\(signed)&state=\(request.state)", "response=\(signed)&response=\(signed)",
        ] {
            let callback = URL(string: "http://127.0.0.1:9999/callback?\(query)")!
            let error = await Self.refusal(signed) { try await client.completeAuthorization(callbackURL: callback, request: request) }
            #expect(error?.code == .invalidAuthorizationResponse, "\(query)")
        }
        #expect(transport.sent.allSatisfy { $0.request.path != "/token" })
    }

    @Test("The synchronous parser refuses a JARM request's callbacks: it has no keys")
    func theSynchronousParserRefuses() throws {
        let client = try Self.client()
        let request = try client.authorizationRequest()
        let signed = try Self.key.sign(claims: Self.claims(request))
        #expect(throws: OAuth2Error.self) { try AuthorizationResponse(callbackURL: Self.callback(signed), request: request) }
        do { _ = try AuthorizationResponse(callbackURL: Self.callback(signed), request: request) } catch { #expect(error.code == .invalidConfiguration) }
        do {
            _ = try AuthorizationResponse(callbackURL: URL(string: "http://127.0.0.1:9999/callback?code=c-1&state=\(request.state)")!, request: request)
            Issue.record("accepted")
        } catch { #expect(error.code == .invalidAuthorizationResponse) }
    }

    @Test("Wrong iss, wrong aud, expired, no exp, another state: refused, each saying which check")
    func claimsAreChecked() async throws {
        let client = try Self.client()
        let request = try client.authorizationRequest()
        let cases: [([String: JSONValue], OAuth2Error.Code, JOSEError.Reason?)] = [
            (Self.claims(request, iss: "https://as.example.com/"), .invalidAuthorizationResponse, .issuerMismatch),
            (Self.claims(request, aud: "client-2"), .invalidAuthorizationResponse, .audienceMismatch),
            (Self.claims(request, aud: ["client-2", "client-3"]), .invalidAuthorizationResponse, .audienceMismatch),
            (Self.claims(request, exp: Self.now.addingTimeInterval(-61)), .invalidAuthorizationResponse, .expired),
            (Self.claims(request, exp: nil), .invalidAuthorizationResponse, .expired),
            (Self.claims(request, extra: ["code": "c-1", "state": "another"]), .stateMismatch, nil),
            (Self.claims(request, extra: ["code": "c-1", "iss": "https://evil.example"]), .invalidAuthorizationResponse, .issuerMismatch),
        ]
        for (claims, code, reason) in cases {
            let signed = try Self.key.sign(claims: claims)
            let error = await Self.refusal(signed) { try await client.authorizationResponse(callbackURL: Self.callback(signed), request: request) }
            #expect(error?.code == code && error?.joseReason == reason, "\(claims)")
        }
        // Within the leeway, and with the client among several audiences: accepted.
        let late = try Self.key.sign(claims: Self.claims(request, aud: ["other", "client-1"], exp: Self.now.addingTimeInterval(-30)))
        #expect(try await client.authorizationResponse(callbackURL: Self.callback(late), request: request).code == "c-1")
    }

    @Test("alg none, HS256 keyed with the public key, another key, a tampered payload, another algorithm: refused")
    func signaturesAreChecked() async throws {
        let client = try Self.client()
        let request = try client.authorizationRequest()
        let claims = Self.claims(request)
        let payload = Base64URL.encode(Data(JSONValue.object(claims).description.utf8))
        let none = Base64URL.encode(Data(#"{"alg":"none"}"#.utf8)) + "." + payload + "."
        let publicJSON = JSONValue.object(Self.key.publicKey!.jsonObject).description
        let hmac = try JWSSigningKey(secret: publicJSON, algorithm: .hs256).sign(claims: claims)
        let stranger = try JWSSigningKey.generate(.rs256, keyID: "as-1").sign(claims: claims)
        let good = try Self.key.sign(claims: claims)
        var parts = good.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(Data(JSONValue.object(Self.claims(request, extra: ["code": "c-2"])).description.utf8))
        let tampered = parts.joined(separator: ".")
        let es256 = try JWSSigningKey.generate(.es256, keyID: "as-1").sign(claims: claims)
        let cases: [(String, JOSEError.Reason)] = [
            (none, .algorithmNotAllowed), (hmac, .algorithmNotAllowed), (stranger, .signatureInvalid), (tampered, .signatureInvalid),
            (es256, .algorithmNotAllowed), ("not-a-jwt", .malformed),
        ]
        for (jwt, reason) in cases {
            let error = await Self.refusal(jwt) { try await client.authorizationResponse(callbackURL: Self.callback(jwt), request: request) }
            #expect(error?.code == .invalidAuthorizationResponse && error?.joseReason == reason, "\(reason)")
        }
    }

    @Test("The registered algorithm is the only one accepted")
    func theRegisteredAlgorithm() async throws {
        let ecKey = try JWSSigningKey.generate(.es256, keyID: "ec-1")
        let transport = StubTransport { request, _ in
            response(200, #"{"keys":[\#(JSONValue.object(ecKey.publicKey!.jsonObject)),\#(JSONValue.object(Self.key.publicKey!.jsonObject))]}"#)
        }
        let client = try Self.client(Self.configuration(JARMOptions(signingAlgorithm: .es256)), transport: transport)
        let request = try client.authorizationRequest()
        #expect(try await client.authorizationResponse(callbackURL: Self.callback(try ecKey.sign(claims: Self.claims(request))), request: request).code == "c-1")
        let rs = try Self.key.sign(claims: Self.claims(request))
        let error = await Self.refusal(rs) { try await client.authorizationResponse(callbackURL: Self.callback(rs), request: request) }
        #expect(error?.joseReason == .algorithmNotAllowed)
    }

    @Test("A nested response (signed, then encrypted) is decrypted with the client's keys, then verified")
    func nestedEncryptedResponses() async throws {
        let encryptionKey = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "enc-1")
        let options = EncryptionOptions(decryptionKeys: [encryptionKey])
        let client = try Self.client(Self.configuration(JARMOptions(requiresEncryption: true), encryption: options))
        let request = try client.authorizationRequest()
        let signed = try Self.key.sign(claims: Self.claims(request))
        let nested = try JWE.encrypt(Data(signed.utf8), to: encryptionKey.publicKey, algorithm: .rsaOAEP256, encryption: .a256GCM, contentType: "JWT")
        #expect(try await client.authorizationResponse(callbackURL: Self.callback(nested), request: request).code == "c-1")
        #expect(client.unverifiedState(ofCallback: [("response", nested)]) == request.state)

        // Signed only, when encryption is required: a downgrade.
        var error = await Self.refusal(signed) { try await client.authorizationResponse(callbackURL: Self.callback(signed), request: request) }
        #expect(error?.code == .invalidAuthorizationResponse && error?.joseReason == .algorithmNotAllowed)
        // No keys.
        let keyless = try Self.client(Self.configuration())
        error = await Self.refusal(nested) { try await keyless.authorizationResponse(callbackURL: Self.callback(nested), request: request) }
        #expect(error?.joseReason == .keyNotFound)
        // Outside the registered algorithms.
        var narrow = options
        narrow.authorizationResponse = .registered(.ecdhES, .a128GCM)
        let strict = try Self.client(Self.configuration(encryption: narrow))
        error = await Self.refusal(nested) { try await strict.authorizationResponse(callbackURL: Self.callback(nested), request: request) }
        #expect(error?.joseReason == .algorithmNotAllowed)
        // An encrypted payload that is not a signed JWT.
        let unsigned = try JWE.encrypt(Data(JSONValue.object(Self.claims(request)).description.utf8), to: encryptionKey.publicKey, algorithm: .rsaOAEP256, encryption: .a256GCM)
        error = await Self.refusal(unsigned) { try await client.authorizationResponse(callbackURL: Self.callback(unsigned), request: request) }
        #expect(error?.code == .invalidAuthorizationResponse && error?.joseReason == .malformed)
    }

    @Test("The response mode survives storage; a request stored before JARM reads back as plain")
    func theModeIsStored() throws {
        let request = try Self.client().authorizationRequest()
        let restored = try JSONDecoder().decode(AuthorizationRequest.self, from: JSONEncoder().encode(request))
        #expect(restored.responseMode == "jwt" && restored.asksForJWTResponse)
        var object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(request)) as? [String: Any])
        object["responseMode"] = nil
        let older = try JSONDecoder().decode(AuthorizationRequest.self, from: JSONSerialization.data(withJSONObject: object))
        #expect(older.responseMode == nil && !older.asksForJWTResponse)
    }

    @Test("The state of a callback is read for routing only: plain, signed or nested")
    func unverifiedState() throws {
        let client = try Self.client()
        #expect(client.unverifiedState(ofCallback: [("state", "s-1"), ("code", "c")]) == "s-1")
        #expect(client.unverifiedState(ofCallback: [("response", try Self.key.sign(claims: ["state": "s-2"]))]) == "s-2")
        #expect(client.unverifiedState(ofCallback: [("response", "garbage")]) == nil)
        #expect(client.unverifiedState(ofCallback: []) == nil)
    }

    @Test("The configuration's description names the mode and algorithm")
    func description() {
        #expect(Self.configuration(JARMOptions(responseMode: "query.jwt", signingAlgorithm: .ps256)).description.contains("jarm: query.jwt PS256"))
    }
}
