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

/// Private keys from JWKs, PEM and files, and back to JWKs.
@Suite struct PrivateKeyLoadingTests {
    /// RFC 7517 Appendix A.2: a P-256 private key.
    static let rfc7517EC: [String: JSONValue] = [
        "kty": "EC", "crv": "P-256",
        "x": "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4", "y": "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM",
        "d": "870MB6gfuTJ4HtUnUvYMyJpr5eUZNP4Bk43bVdj3eAE",
    ]

    @Test func anECPrivateJWKSignsForItsPublicKey() throws {
        let key = try JWSSigningKey(jwk: Self.rfc7517EC)
        #expect(key.algorithm == .es256)
        let compact = try key.sign(claims: ["a": "b"])
        let publicKey = try JSONWebKey(["kty": "EC", "crv": "P-256", "x": Self.rfc7517EC["x"]!, "y": Self.rfc7517EC["y"]!])
        #expect(try JWS(compact: compact).isSigned(by: publicKey))
    }

    @Test func publicMembersMustBelongToThePrivateKey() {
        var wrong = Self.rfc7517EC
        wrong["x"] = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"  // another key's (RFC 7515 A.3)
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: wrong) }
    }

    @Test func theJWKsKidAndAlgAreKeptAndChecked() throws {
        var jwk = Self.rfc7517EC
        jwk["kid"] = "ec-1"
        jwk["alg"] = "ES256"
        #expect(try JWSSigningKey(jwk: jwk).keyID == "ec-1")
        #expect(try JWSSigningKey(jwk: jwk, keyID: "other").keyID == "other")
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: jwk, algorithm: .es384) }
        jwk["alg"] = "RS256"
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: jwk) }
    }

    @Test(arguments: [JWSAlgorithm.rs256, .ps384, .es256, .es384, .es512, .edDSA])
    func privateJWKsRoundTrip(algorithm: JWSAlgorithm) throws {
        let key = try JWSSigningKey.generate(algorithm, keyID: "k")
        let jwk = try #require(key.privateJWK)
        if algorithm.rawValue.hasPrefix("RS") || algorithm.rawValue.hasPrefix("PS") {
            #expect(Set(jwk.keys).isSuperset(of: ["n", "e", "d", "p", "q", "dp", "dq", "qi"]))
        }
        let reloaded = try JWSSigningKey(jwk: jwk)
        #expect(reloaded.algorithm == algorithm)
        #expect(reloaded.keyID == "k")
        #expect(try JWS(compact: reloaded.sign(claims: ["x": 1])).isSigned(by: try #require(key.publicKey)))
    }

    @Test func anRSAJWKWithoutPrimesLoads() throws {
        let key = try JWSSigningKey.generate(.rs256)
        var jwk = try #require(key.privateJWK)
        for name in ["p", "q", "dp", "dq", "qi"] { jwk[name] = nil }
        let reloaded = try JWSSigningKey(jwk: jwk)
        #expect(try JWS(compact: reloaded.sign(claims: ["x": 1])).isSigned(by: try #require(key.publicKey)))
    }

    @Test func aSymmetricOrMalformedJWKIsRefused() {
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: ["kty": "oct", "k": "AAAA"]) }
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: ["kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"]) }
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: ["kty": "OKP", "crv": "X25519", "x": "AA", "d": "AA"]) }
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwkData: Data("[1]".utf8)) }
    }

    @Test(arguments: [
        (JWSAlgorithm.rs256, JWSAlgorithm.rs256), (.es256, .es256), (.es384, .es384), (.es512, .es512), (.edDSA, .edDSA),
    ])
    func aPEMsTypeChoosesTheAlgorithm(generated: JWSAlgorithm, expected: JWSAlgorithm) throws {
        let pem = try Self.pem(for: generated)
        let key = try JWSSigningKey(pem: pem, keyID: "pem-1")
        #expect(key.algorithm == expected)
        #expect(key.keyID == "pem-1")
        if generated == .rs256 {
            #expect(try JWSSigningKey(pem: pem, algorithm: .ps256).algorithm == .ps256)
        }
        #expect(throws: JOSEError.self) { try JWSSigningKey(pem: pem, algorithm: generated == .edDSA ? .es256 : .edDSA) }
    }

    @Test func aShortRSAKeyIsRefused() throws {
        let short = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        #expect(throws: JOSEError.self) { try JWSSigningKey(pem: short.pemRepresentation) }
        #expect(throws: JOSEError.self) { try JWSSigningKey(pem: short.pemRepresentation, algorithm: .rs256) }
    }

    @Test func anEncryptedOrForeignPEMIsRefused() {
        #expect(throws: JOSEError.self) { try JWSSigningKey(pem: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----") }
        #expect(throws: JOSEError.self) { try JWSSigningKey(pem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----") }
    }

    @Test func aKeyFileMayHoldAJWKOrAPEM() async throws {
        try await withTemporaryDirectory { directory in
            let jwkFile = directory.appendingPathComponent("key.jwk")
            try Data(JSONValue.object(Self.rfc7517EC.merging(["kid": "from-file"]) { $1 }).description.utf8).write(to: jwkFile)
            let fromJWK = try JWSSigningKey(contentsOf: jwkFile)
            #expect(fromJWK.algorithm == .es256)
            #expect(fromJWK.keyID == "from-file")
            let pemFile = directory.appendingPathComponent("key.pem")
            try Data(try Self.pem(for: .edDSA).utf8).write(to: pemFile)
            #expect(try JWSSigningKey(contentsOf: pemFile, keyID: "ed").algorithm == .edDSA)
            do {
                _ = try JWSSigningKey(contentsOf: directory.appendingPathComponent("missing.pem"))
                Issue.record("a missing file loaded")
            } catch let error as JOSEError {
                #expect(error.reason == .invalidKey)
                #expect(!error.message.contains(directory.path), "names the file, not where it is")
            }
        }
    }

    /// A PEM private key of the algorithm's type, made by the platform's crypto library.
    static func pem(for algorithm: JWSAlgorithm) throws -> String {
        let key = try JWSSigningKey.generate(algorithm)
        switch key.key {
        case .rsa(let rsa): return rsa.pemRepresentation
        case .p256(let ec): return ec.pemRepresentation
        case .p384(let ec): return ec.pemRepresentation
        case .p521(let ec): return ec.pemRepresentation
        case .ed25519(let ed): return ed.pemRepresentation
        case .hmac: throw JOSEError(.invalidKey, "no PEM for HMAC")
        }
    }
}
