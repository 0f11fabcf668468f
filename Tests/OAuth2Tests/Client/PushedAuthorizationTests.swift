import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// Pushed authorization requests (RFC 9126) and signed request objects (RFC 9101).
@Suite struct PushedAuthorizationTests {
    static let par = URL(string: "https://as.example.com/par")!

    static func metadata(required: Bool? = nil) -> ServerMetadata {
        var extra: [String: JSONValue] = ["pushed_authorization_request_endpoint": .string(par.absoluteString)]
        if let required { extra["require_pushed_authorization_requests"] = .bool(required) }
        return Fixtures.metadata.filling(from: ServerMetadata(additionalFields: extra))
    }

    static let pushed = #"{"request_uri":"urn:ietf:params:oauth:request_uri:abc","expires_in":90}"#

    func query(_ url: URL) -> [String: String] {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    @Test func thePushCarriesTheParametersAndTheURLOnlyTheReference() async throws {
        let transport = StubTransport(status: 201, json: Self.pushed)
        let client = try Fixtures.client(transport, metadata: Self.metadata())
        let request = try await client.pushAuthorizationRequest(AuthorizationOptions(prompt: ["consent"]))
        let sent = try #require(transport.sent.first)
        #expect(sent.request.url == Self.par)
        #expect(sent.request.method == .post)
        #expect(sent.request.headerFields[.authorization]?.hasPrefix("Basic ") == true, "authenticated as at the token endpoint")
        let form = sent.form
        #expect(form["response_type"] == "code")
        #expect(form["client_id"] == "client-1")
        #expect(form["redirect_uri"] == Fixtures.redirect.absoluteString)
        #expect(form["scope"] == "openid read")
        #expect(form["state"] == request.state)
        #expect(form["nonce"] == request.nonce)
        #expect(form["code_challenge_method"] == "S256")
        #expect(form["code_challenge"] != nil)
        #expect(form["prompt"] == "consent")
        let body = String(decoding: try #require(sent.body), as: UTF8.self)
        #expect(body.components(separatedBy: "client_id=").count == 2, "client_id once")
        #expect(query(request.url) == ["client_id": "client-1", "request_uri": "urn:ietf:params:oauth:request_uri:abc"])
        #expect(request.url.absoluteString.hasPrefix("https://as.example.com/authorize?"))
        #expect(request.requestURI == "urn:ietf:params:oauth:request_uri:abc")
        let expiresIn = try #require(request.requestURIExpiresAt).timeIntervalSince(request.createdAt)
        #expect(abs(expiresIn - 90) < 1)
    }

    @Test func aPublicClientPushesWithItsClientIDOnce() async throws {
        let transport = StubTransport(status: 201, json: Self.pushed)
        let client = try Fixtures.client(transport, metadata: Self.metadata(), configuration: Fixtures.configuration(secret: nil))
        _ = try await client.pushAuthorizationRequest()
        let body = String(decoding: try #require(transport.sent.first?.body), as: UTF8.self)
        #expect(body.components(separatedBy: "client_id=").count == 2)
        #expect(transport.sent[0].request.headerFields[.authorization] == nil)
    }

    @Test func theServerOrTheConfigurationDecidesWhetherToPush() async throws {
        let transport = StubTransport(status: 201, json: Self.pushed)
        let required = try Fixtures.client(transport, metadata: Self.metadata(required: true))
        #expect(required.pushesAuthorizationRequests)
        #expect(try await required.startAuthorization().requestURI != nil)
        #expect(transport.sent.count == 1)
        do {
            _ = try required.authorizationRequest()
            Issue.record("a by-value request was built for a server that requires PAR")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidConfiguration)
        }
        let optional = try Fixtures.client(transport, metadata: Self.metadata(required: false))
        let byValue = try await optional.startAuthorization()
        #expect(byValue.requestURI == nil)
        #expect(query(byValue.url)["code_challenge"] != nil)
        #expect(transport.sent.count == 1, "no push")
        var configuration = Fixtures.configuration()
        configuration.usePushedAuthorizationRequests = true
        let asked = try Fixtures.client(transport, metadata: Self.metadata(required: false), configuration: configuration)
        #expect(try await asked.startAuthorization().requestURI != nil)
        #expect(transport.sent.count == 2)
    }

    @Test func errorsAreTypedLikeTokenErrors() async throws {
        for (status, body, code) in [
            (400, #"{"error":"invalid_request","error_description":"bad redirect_uri"}"#, OAuth2Error.Code.invalidRequest),
            (401, "", .invalidClient),
            (403, "", .invalidClient),
            (400, #"{"error":"invalid_request_object"}"#, .invalidRequestObject),
            (503, "", .temporarilyUnavailable),
            (201, #"{"expires_in":90}"#, .invalidResponse),
            (201, #"{"request_uri":"has space","expires_in":90}"#, .invalidResponse),
        ] {
            let client = try Fixtures.client(StubTransport { _, _ in response(status, body) }, metadata: Self.metadata())
            do {
                _ = try await client.pushAuthorizationRequest()
                Issue.record("HTTP \(status) \(body) was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == code, "HTTP \(status) \(body)")
            }
        }
        let noEndpoint = try Fixtures.client(StubTransport(status: 201, json: Self.pushed))
        await #expect(throws: OAuth2Error.self) { _ = try await noEndpoint.pushAuthorizationRequest() }
    }

    @Test func aDPoPClientPushesWithAProofAndTheThumbprint() async throws {
        let transport = StubTransport(status: 201, json: Self.pushed)
        var configuration = Fixtures.configuration()
        let key = try DPoPKey.generate()
        configuration.dpop = DPoPOptions(key: key)
        _ = try await Fixtures.client(transport, metadata: Self.metadata(), configuration: configuration).pushAuthorizationRequest()
        let sent = try #require(transport.sent.first)
        #expect(sent.form["dpop_jkt"] == key.thumbprint)
        let proof = try DecodedProof(try #require(sent.request.headerFields[HTTPField.Name("DPoP")!]))
        #expect(proof.claims["htu"] == "https://as.example.com/par")
        #expect(proof.claims["htm"] == "POST")
    }

    @Test func aPushWithJWTAuthenticationAddressesTheEndpoint() async throws {
        let transport = StubTransport(status: 201, json: Self.pushed)
        var configuration = Fixtures.configuration(secret: nil)
        configuration.privateKey = try JWSSigningKey.generate(.es256, keyID: "k")
        configuration.clientAssertion.audience = .requestEndpoint
        _ = try await Fixtures.client(transport, metadata: Self.metadata(), configuration: configuration).pushAuthorizationRequest()
        let assertion = try JWS(compact: try #require(transport.sent.first?.form["client_assertion"]))
        #expect(try assertion.claims()["aud"] == "https://as.example.com/par")
    }
}

@Suite struct RequestObjectTests {
    func query(_ url: URL) -> [String: String] {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    @Test func byValueTheParametersTravelSigned() throws {
        let key = try JWSSigningKey.generate(.ps256, keyID: "ro-1")
        var configuration = Fixtures.configuration()
        configuration.requestObject = RequestObjectOptions(signingKey: key)
        let client = try Fixtures.client(StubTransport(status: 500, json: "{}"), configuration: configuration)
        let request = try client.authorizationRequest(AuthorizationOptions(maxAge: 600, resources: [URL(string: "https://api.a")!, URL(string: "https://api.b")!]))
        let outside = query(request.url)
        #expect(Set(outside.keys) == ["client_id", "request", "response_type", "scope"])
        let jws = try JWS(compact: try #require(outside["request"]))
        #expect(jws.type == "oauth-authz-req+jwt")
        #expect(jws.keyID == "ro-1")
        #expect(jws.isSigned(by: try #require(key.publicKey)))
        let claims = try jws.claims()
        #expect(claims["iss"] == "client-1")
        #expect(claims["aud"] == "https://as.example.com")
        #expect(claims["client_id"] == "client-1")
        #expect(claims["state"]?.stringValue == request.state)
        #expect(claims["nonce"]?.stringValue == request.nonce)
        #expect(claims["redirect_uri"]?.stringValue == Fixtures.redirect.absoluteString)
        #expect(claims["code_challenge_method"] == "S256")
        #expect(claims["max_age"] == .integer(600), "a number, as OpenID Connect defines it")
        #expect(claims["resource"] == .array(["https://api.a", "https://api.b"]))
        #expect(claims["jti"] != nil && claims["exp"] != nil && claims["iat"] != nil && claims["nbf"] != nil)
        #expect((claims["exp"]?.integerValue ?? 0) - (claims["iat"]?.integerValue ?? 0) == 300)
    }

    @Test func theKeyFallsBackToThePrivateKeyThenTheSecret() throws {
        var configuration = Fixtures.configuration()
        configuration.requestObject = RequestObjectOptions()
        let bySecret = try Fixtures.client(StubTransport(status: 500, json: "{}"), configuration: configuration).authorizationRequest()
        let hmac = try JWS(compact: try #require(query(bySecret.url)["request"]))
        #expect(hmac.algorithm == .hs256)
        #expect(hmac.isSigned(bySecret: "s3cr3t"))
        let privateKey = try JWSSigningKey.generate(.edDSA)
        configuration.privateKey = privateKey
        let byKey = try Fixtures.client(StubTransport(status: 500, json: "{}"), configuration: configuration).authorizationRequest()
        #expect(try JWS(compact: try #require(query(byKey.url)["request"])).isSigned(by: try #require(privateKey.publicKey)))
        var keyless = Fixtures.configuration(secret: nil)
        keyless.requestObject = RequestObjectOptions()
        #expect(throws: OAuth2Error.self) { try Fixtures.client(StubTransport(status: 500, json: "{}"), configuration: keyless).authorizationRequest() }
    }

    @Test func throughPAROnlyTheObjectIsPushed() async throws {
        let transport = StubTransport(status: 201, json: PushedAuthorizationTests.pushed)
        var configuration = Fixtures.configuration(secret: nil)
        configuration.privateKey = try JWSSigningKey.generate(.es256)
        configuration.requestObject = RequestObjectOptions()
        let client = try Fixtures.client(transport, metadata: PushedAuthorizationTests.metadata(), configuration: configuration)
        let request = try await client.pushAuthorizationRequest()
        let form = try #require(transport.sent.first).form
        #expect(Set(form.keys) == ["client_id", "request", "client_assertion_type", "client_assertion"])
        let object = try JWS(compact: try #require(form["request"])).claims()
        #expect(object["state"]?.stringValue == request.state)
        #expect(Set(query(request.url).keys) == ["client_id", "request_uri"])
    }

    @Test func noParameterReplacesAJWTClaim() throws {
        let object = RequestObject(
            parameters: [("iss", "evil"), ("aud", "evil"), ("state", "s")], clientID: "c", audience: "https://as", issuedAt: Date(timeIntervalSince1970: 10),
            lifetime: 60, id: "j")
        #expect(object.claims["iss"] == "c")
        #expect(object.claims["aud"] == "https://as")
        #expect(object.claims["state"] == "s")
        #expect(object.claims["exp"] == .integer(70))
    }
}
