import CryptoExtras
import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// `client_secret_jwt` and `private_key_jwt` (RFC 7523 §2.2): what the assertion says, and
/// that every endpoint that authenticates the client gets one.
@Suite struct ClientAssertionTests {
    static let token = #"{"access_token":"at","token_type":"Bearer","expires_in":60}"#

    func assertion(_ sent: StubTransport.Sent) throws -> (JWS, [String: JSONValue]) {
        #expect(sent.form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        #expect(sent.request.headerFields[.authorization] == nil, "no Basic header besides the assertion")
        #expect(sent.form["client_secret"] == nil)
        let jws = try JWS(compact: try #require(sent.form["client_assertion"]))
        return (jws, try jws.claims())
    }

    @Test(arguments: [JWSAlgorithm.rs256, .ps256, .es256, .edDSA])
    func privateKeyJWTSignsTheRFC7523Claims(algorithm: JWSAlgorithm) async throws {
        let transport = StubTransport(status: 200, json: Self.token)
        let key = try JWSSigningKey.generate(algorithm, keyID: "k-1")
        var configuration = Fixtures.configuration(secret: nil)
        configuration.privateKey = key
        let client = try Fixtures.client(transport, configuration: configuration)
        let before = Date()
        _ = try await client.clientCredentials()
        _ = try await client.clientCredentials()
        let (jws, claims) = try assertion(transport.sent[0])
        #expect(transport.sent[0].form["client_id"] == "client-1")
        #expect(jws.algorithm == algorithm)
        #expect(jws.keyID == "k-1")
        #expect(jws.isSigned(by: try #require(key.publicKey)))
        #expect(claims["iss"] == "client-1")
        #expect(claims["sub"] == "client-1")
        #expect(claims["aud"] == "https://as.example.com", "the issuer by default")
        let iat = try #require(claims["iat"]?.integerValue), exp = try #require(claims["exp"]?.integerValue)
        #expect(abs(Double(iat) - before.timeIntervalSince1970) < 5)
        #expect(exp - iat == 60)
        let (_, second) = try assertion(transport.sent[1])
        #expect(claims["jti"] != nil && claims["jti"] != second["jti"], "a unique jti per assertion")
    }

    @Test func clientSecretJWTIsAnHMACWithTheSecret() async throws {
        let transport = StubTransport(status: 200, json: Self.token)
        var configuration = Fixtures.configuration(secret: "a-long-shared-secret-of-32-bytes", method: .clientSecretJWT)
        configuration.clientAssertion.secretAlgorithm = .hs512
        configuration.clientAssertion.lifetime = 30
        let client = try Fixtures.client(transport, configuration: configuration)
        _ = try await client.clientCredentials()
        let (jws, claims) = try assertion(transport.sent[0])
        #expect(jws.algorithm == .hs512)
        #expect(jws.isSigned(bySecret: "a-long-shared-secret-of-32-bytes"))
        #expect(!jws.isSigned(bySecret: "another-secret"))
        #expect((claims["exp"]?.integerValue ?? 0) - (claims["iat"]?.integerValue ?? 0) == 30)
        #expect(!transport.sent[0].body.map { String(decoding: $0, as: UTF8.self) }!.contains("a-long-shared-secret"))
    }

    @Test func theAudienceCanNameAnEndpoint() async throws {
        let transport = StubTransport(status: 200, json: #"{"active":false}"#)
        var configuration = Fixtures.configuration(method: .clientSecretJWT)
        for (audience, expected) in [
            (ClientAssertionOptions.Audience.tokenEndpoint, "https://as.example.com/token"),
            (.requestEndpoint, "https://as.example.com/introspect"),
            (.custom("urn:example:as"), "urn:example:as"),
            (.issuer, "https://as.example.com"),
        ] {
            configuration.clientAssertion.audience = audience
            _ = try await Fixtures.client(transport, configuration: configuration).introspect("t")
            #expect(try assertion(transport.sent.last!).1["aud"]?.stringValue == expected)
        }
        // Without an issuer in the metadata, the token endpoint.
        let noIssuer = ServerMetadata(tokenEndpoint: URL(string: "https://as.example.com/token")!, revocationEndpoint: URL(string: "https://as.example.com/revoke")!)
        configuration.clientAssertion.audience = .issuer
        let transport2 = StubTransport(status: 200, json: "{}")
        try await Fixtures.client(transport2, metadata: noIssuer, configuration: configuration).revoke("t")
        #expect(try assertion(transport2.sent[0]).1["aud"] == "https://as.example.com/token")
    }

    @Test func revocationAndIntrospectionAuthenticateTheSameWay() async throws {
        let transport = StubTransport(status: 200, json: #"{"active":true}"#)
        var configuration = Fixtures.configuration(secret: nil)
        configuration.privateKey = try JWSSigningKey.generate(.es256)
        let client = try Fixtures.client(transport, configuration: configuration)
        try await client.revoke("t")
        _ = try await client.introspect("t")
        #expect(transport.sent.count == 2)
        for sent in transport.sent { _ = try assertion(sent) }
    }

    @Test func theConfigurationIsChecked() throws {
        var configuration = Fixtures.configuration(secret: nil, method: .privateKeyJWT)
        #expect(throws: OAuth2Error.self) { try configuration.validate() }
        configuration.privateKey = try JWSSigningKey(secret: "0123456789abcdef0123456789abcdef")
        #expect(throws: OAuth2Error.self) { try configuration.validate() }
        configuration.privateKey = try JWSSigningKey.generate(.es256)
        try configuration.validate()
        #expect(configuration.resolvedAuthenticationMethod(supported: nil) == .privateKeyJWT)
        configuration.authenticationMethod = nil
        #expect(configuration.resolvedAuthenticationMethod(supported: ["client_secret_basic"]) == .privateKeyJWT, "a private key means private_key_jwt")
        var secretJWT = Fixtures.configuration(secret: nil, method: .clientSecretJWT)
        #expect(throws: OAuth2Error.self) { try secretJWT.validate() }
        secretJWT.clientSecret = "s"
        secretJWT.clientAssertion.secretAlgorithm = .rs256
        #expect(throws: OAuth2Error.self) { try secretJWT.validate() }
        #expect(!configuration.description.contains("BEGIN"))
        #expect(configuration.description.contains("privateKey: ES256 <redacted>"))
    }

    @Test func theAssertionValueType() throws {
        let issued = Date(timeIntervalSince1970: 1_000_000)
        let assertion = ClientAssertion(clientID: "c", audience: "https://as", issuedAt: issued, lifetime: 120, id: "id-1")
        #expect(assertion.claims == ["iss": "c", "sub": "c", "aud": "https://as", "jti": "id-1", "iat": 1_000_000, "exp": 1_000_120])
        let key = try JWSSigningKey.generate(.ps256)
        let jws = try JWS(compact: try assertion.signed(with: key))
        #expect(jws.isSigned(by: try #require(key.publicKey)))
        #expect(jws.header["typ"] == nil)
    }
}
