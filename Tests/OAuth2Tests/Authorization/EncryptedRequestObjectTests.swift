import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// Encrypted request objects (RFC 9101 §6.1): the signed object encrypted to a key of the
/// server's JWK set (or a configured one), with the configured pair checked against the
/// metadata, by value and through PAR. No socket: a recording transport serves the JWK set
/// and the PAR endpoint; the test decrypts as the server would.
@Suite struct EncryptedRequestObjectTests {
    static let jwksURI = URL(string: "https://as.example.com/jwks")!
    static let par = URL(string: "https://as.example.com/par")!
    /// Every pair the regulated profile names.
    static let pairs = EncryptedIntrospectionTests.pairs

    /// The server's keys: a signing key, and one encryption key of each type.
    static let signing = try! JWSSigningKey.generate(.rs256, keyID: "as-sig")
    static let rsa = try! JWEDecryptionKey.generate(.rsaOAEP256, keyID: "as-enc-rsa")
    static let ec: JWEDecryptionKey = {
        var jwk = try! JWEDecryptionKey.generate(.ecdhES, keyID: "as-enc-ec").privateJWK
        jwk["alg"] = nil   // any ECDH-ES variant
        return try! JWEDecryptionKey(jwk: jwk)
    }()

    static func metadata(algorithms: [String]? = nil, encryptions: [String]? = nil) -> ServerMetadata {
        var extra: [String: JSONValue] = ["pushed_authorization_request_endpoint": .string(par.absoluteString)]
        if let algorithms { extra["request_object_encryption_alg_values_supported"] = .array(algorithms.map(JSONValue.string)) }
        if let encryptions { extra["request_object_encryption_enc_values_supported"] = .array(encryptions.map(JSONValue.string)) }
        return Fixtures.metadata.filling(from: ServerMetadata(jwksURI: jwksURI, additionalFields: extra))
    }

    static func keySet(_ keys: [JSONWebKey]) -> String {
        JSONValue.object(["keys": .array(keys.map { .object($0.members) })]).description
    }

    static var serverKeys: [JSONWebKey] { [signing.publicKey!, rsa.publicKey, ec.publicKey] }

    /// Serves `keys` at the JWK set URL and accepts pushed requests.
    static func transport(_ keys: [JSONWebKey] = serverKeys) -> StubTransport {
        StubTransport { request, _ in
            if request.url == jwksURI { return response(200, keySet(keys)) }
            return response(201, PushedAuthorizationTests.pushed)
        }
    }

    static func configuration(_ encryption: RequestObjectEncryption?, push: Bool = false) -> ClientConfiguration {
        var configuration = Fixtures.configuration()
        configuration.requestObject = RequestObjectOptions(encryption: encryption)
        configuration.usePushedAuthorizationRequests = push
        return configuration
    }

    /// Opens `compact` as the server would, and returns the signed object inside.
    static func open(_ compact: String, _ algorithm: JWEKeyAlgorithm, _ encryption: JWEContentEncryption) throws -> JWS {
        let jwe = try JWE(compact: compact)
        #expect(jwe.contentType == "JWT", "a nested JWT")
        let plaintext = try jwe.decrypt(with: [rsa, ec], policy: .registered(algorithm, encryption))
        let jws = try JWS(compact: String(decoding: plaintext, as: UTF8.self))
        #expect(jws.isSigned(bySecret: "s3cr3t"), "signed first, with the client secret here")
        return jws
    }

    func query(_ url: URL) -> [String: String] {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    @Test("Each named pair, by value: signed, then encrypted to the server's encryption key of the right type", arguments: pairs)
    func byValue(algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption) async throws {
        let transport = Self.transport()
        let client = try Fixtures.client(
            transport, metadata: Self.metadata(), configuration: Self.configuration(RequestObjectEncryption(algorithm, encryption)))
        let request = try await client.startAuthorization()
        let outside = query(request.url)
        #expect(Set(outside.keys) == ["client_id", "request", "response_type", "scope"])
        let compact = try #require(outside["request"])
        let jwe = try JWE(compact: compact)
        #expect(jwe.keyAlgorithm == algorithm && jwe.contentEncryption == encryption)
        #expect(jwe.keyID == (algorithm.isRSA ? "as-enc-rsa" : "as-enc-ec"), "the server's encryption key, never its signing key")
        let claims = try Self.open(compact, algorithm, encryption).claims()
        #expect(claims["state"]?.stringValue == request.state)
        #expect(claims["nonce"]?.stringValue == request.nonce)
        #expect(claims["aud"] == "https://as.example.com" && claims["iss"] == "client-1")
        #expect(!compact.contains(request.state), "the parameters travel encrypted")
    }

    @Test("Through PAR: only the encrypted object is pushed; the key set is fetched once and cached")
    func pushed() async throws {
        let transport = Self.transport()
        let client = try Fixtures.client(
            transport, metadata: Self.metadata(), configuration: Self.configuration(RequestObjectEncryption(.ecdhESA128KW, .a128CBCHS256), push: true))
        let first = try await client.startAuthorization()
        let push = try #require(transport.sent.first { $0.request.url == Self.par })
        #expect(Set(push.form.keys) == ["client_id", "request"])
        let claims = try Self.open(try #require(push.form["request"]), .ecdhESA128KW, .a128CBCHS256).claims()
        #expect(claims["state"]?.stringValue == first.state)
        #expect(Set(query(first.url).keys) == ["client_id", "request_uri"])
        _ = try await client.startAuthorization()
        #expect(transport.sent.filter { $0.request.url == Self.jwksURI }.count == 1)
        #expect(transport.sent.filter { $0.request.url == Self.par }.count == 2)
    }

    @Test("The pair is checked against the metadata before anything is sent")
    func metadataDecides() async throws {
        for (algorithms, encryptions) in [(["RSA-OAEP-256"], ["A256GCM"]), (["ECDH-ES+A128KW"], ["A128GCM"])] {
            let transport = Self.transport()
            let client = try Fixtures.client(
                transport, metadata: Self.metadata(algorithms: algorithms, encryptions: encryptions),
                configuration: Self.configuration(RequestObjectEncryption(.ecdhESA128KW, .a256GCM), push: true))
            await #expect(throws: OAuth2Error.self) { _ = try await client.startAuthorization() }
            #expect(!transport.sent.contains { $0.request.url == Self.par }, "nothing pushed")
        }
        let offered = try Fixtures.client(
            Self.transport(), metadata: Self.metadata(algorithms: ["RSA-OAEP-256"], encryptions: ["A256GCM"]),
            configuration: Self.configuration(RequestObjectEncryption(.rsaOAEP256, .a256GCM)))
        _ = try await offered.startAuthorization()
        do {
            _ = try await Fixtures.client(
                Self.transport(), metadata: Self.metadata(algorithms: ["RSA-OAEP-256", "RSA1_5"]),
                configuration: Self.configuration(RequestObjectEncryption(.rsa1_5))
            ).startAuthorization()
            Issue.record("RSA1_5 was used")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message == "Request objects cannot be encrypted with RSA1_5.")
        }
    }

    @Test("The server's key: use enc first, else a key without use; never a signing key or one stated for another alg")
    func keyChoice() async throws {
        var signingMembers = Self.signing.publicKey!.members   // RSA, alg RS256, use sig
        let markedSigning = try JSONWebKey(signingMembers)
        signingMembers["use"] = nil
        let unmarkedSigning = try JSONWebKey(signingMembers)   // alg RS256 says what it is for
        var plainMembers = Self.rsa.publicKey.members
        plainMembers["use"] = nil
        plainMembers["alg"] = nil
        plainMembers["kid"] = "as-plain"
        let unmarked = try JSONWebKey(plainMembers)
        let encryption = RequestObjectEncryption(.rsaOAEP256, .a256GCM)

        func recipient(_ keys: [JSONWebKey]) async throws -> String? {
            let client = try Fixtures.client(Self.transport(keys), metadata: Self.metadata(), configuration: Self.configuration(encryption))
            let request = try await client.startAuthorization()
            return try JWE(compact: try #require(query(request.url)["request"])).keyID
        }
        #expect(try await recipient([markedSigning, unmarked, Self.rsa.publicKey]) == "as-enc-rsa")
        #expect(try await recipient([unmarkedSigning, unmarked]) == "as-plain")
        for keys in [[markedSigning, unmarkedSigning], [Self.ec.publicKey]] {
            do {
                _ = try await recipient(keys)
                Issue.record("encrypted to an unfit key")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidConfiguration)
            }
        }
    }

    @Test("A configured recipient key is used as is, without fetching the key set; the synchronous builder needs one")
    func configuredKey() async throws {
        let transport = Self.transport()
        let configured = Self.configuration(RequestObjectEncryption(.ecdhESA256KW, .a128GCM, recipientKey: Self.ec.publicKey))
        let client = try Fixtures.client(transport, metadata: Self.metadata(), configuration: configured)
        let request = try client.authorizationRequest()
        _ = try Self.open(try #require(query(request.url)["request"]), .ecdhESA256KW, .a128GCM)
        #expect(transport.sent.isEmpty)

        // Without a configured key, the synchronous builder has no key set to read until
        // startAuthorization has fetched it.
        let fetching = try Fixtures.client(
            Self.transport(), metadata: Self.metadata(), configuration: Self.configuration(RequestObjectEncryption(.rsaOAEP256)))
        do {
            _ = try fetching.authorizationRequest()
            Issue.record("built without the server's key")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidConfiguration)
        }
        _ = try await fetching.startAuthorization()
        let cached = try fetching.authorizationRequest()
        #expect(try JWE(compact: try #require(query(cached.url)["request"])).contentEncryption == .a128CBCHS256, "OpenID Connect's default enc")
    }

    @Test func theDescriptionSaysEncryptedAndShowsNoKey() {
        let configuration = Self.configuration(RequestObjectEncryption(.rsaOAEP256, recipientKey: Self.rsa.publicKey))
        #expect(configuration.description.contains("requestObject: signed, encrypted"))
        #expect(!configuration.description.contains(Self.rsa.publicKey.members["n"]?.stringValue ?? "-"))
    }
}
