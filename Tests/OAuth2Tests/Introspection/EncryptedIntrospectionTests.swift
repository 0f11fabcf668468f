import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// Encrypted JWT introspection answers (RFC 9701 §5): signed by the server, then encrypted to
/// the client; decrypted with ``EncryptionOptions``' keys and introspection policy, the
/// signature inside still verified, a plain answer refused when encryption is required.
/// No socket: a recording transport answers, as in ``JWTIntrospectionTests``.
@Suite struct EncryptedIntrospectionTests {
    /// Every pair the regulated profile names: RSA-OAEP-256, ECDH-ES, ECDH-ES+A128KW and
    /// ECDH-ES+A256KW, each with A128GCM, A256GCM and A128CBC-HS256.
    static let pairs: [(JWEKeyAlgorithm, JWEContentEncryption)] = [JWEKeyAlgorithm.rsaOAEP256, .ecdhES, .ecdhESA128KW, .ecdhESA256KW]
        .flatMap { algorithm in [JWEContentEncryption.a128GCM, .a256GCM, .a128CBCHS256].map { (algorithm, $0) } }

    static let rsaKey = try! JWEDecryptionKey.generate(.rsaOAEP256, keyID: "client-rsa")
    /// An EC key without a stated `alg`: it opens every ECDH-ES variant.
    static let ecKey: JWEDecryptionKey = {
        var jwk = try! JWEDecryptionKey.generate(.ecdhES, keyID: "client-ec").privateJWK
        jwk["alg"] = nil
        return try! JWEDecryptionKey(jwk: jwk)
    }()

    static func key(for algorithm: JWEKeyAlgorithm) -> JWEDecryptionKey { algorithm.isRSA ? rsaKey : ecKey }

    static func configuration(_ encryption: EncryptionOptions?) -> ClientConfiguration {
        var configuration = Fixtures.configuration()
        configuration.encryption = encryption
        return configuration
    }

    /// The signed answer encrypted to `key`, as the server sends it.
    static func encrypted(
        _ signed: String, to key: JSONWebKey = rsaKey.publicKey, _ algorithm: JWEKeyAlgorithm = .rsaOAEP256,
        _ encryption: JWEContentEncryption = .a256GCM
    ) throws -> String {
        try JWE.encrypt(Data(signed.utf8), to: key, algorithm: algorithm, encryption: encryption, contentType: "JWT", header: ["typ": "token-introspection+jwt"])
    }

    func introspect(_ body: String, _ encryption: EncryptionOptions?) async throws -> IntrospectionResponse {
        let client = try Fixtures.client(JWTIntrospectionTests.transport(body), metadata: JWTIntrospectionTests.metadata, configuration: Self.configuration(encryption))
        return try await client.introspect("at-1", hint: .accessToken, format: .jwt())
    }

    func refusal(_ body: String, _ encryption: EncryptionOptions?) async -> OAuth2Error? {
        do {
            _ = try await introspect(body, encryption)
            Issue.record("accepted")
            return nil
        } catch let error as OAuth2Error {
            #expect(!error.description.contains("at-1"), "no token in the message")
            return error
        } catch {
            Issue.record("untyped: \(error)")
            return nil
        }
    }

    @Test("Each named pair: decrypted with the registered pair only, the signature inside verified, the answer read", arguments: pairs)
    func eachPairDecrypts(algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption) async throws {
        let key = Self.key(for: algorithm)
        let body = try Self.encrypted(try JWTIntrospectionTests.signed(), to: key.publicKey, algorithm, encryption)
        let options = EncryptionOptions(
            decryptionKeys: [Self.rsaKey, Self.ecKey], introspection: .registered(algorithm, encryption), requiresEncryptedIntrospection: true)
        let answer = try await introspect(body, options)
        #expect(answer.active && answer.clientID == "client-9" && answer.scopes == ["read"])
    }

    @Test func aPairOtherThanTheRegisteredOneIsRefused() async throws {
        let body = try Self.encrypted(try JWTIntrospectionTests.signed(), to: Self.ecKey.publicKey, .ecdhESA128KW, .a128CBCHS256)
        let error = await refusal(body, EncryptionOptions(decryptionKeys: [Self.ecKey], introspection: .registered(.ecdhESA256KW, .a128CBCHS256)))
        #expect(error?.code == .invalidIntrospectionResponse)
        #expect(error?.joseReason == .algorithmNotAllowed)
        // The ID token policy does not leak into introspection: A256CBC-HS512 is outside the default.
        let other = try Self.encrypted(try JWTIntrospectionTests.signed(), to: Self.rsaKey.publicKey, .rsaOAEP256, .a256CBCHS512)
        let wide = JWEPolicy(keyAlgorithms: [.rsaOAEP256], contentEncryptions: [.a256CBCHS512])
        let narrow = await refusal(other, EncryptionOptions(decryptionKeys: [Self.rsaKey], idToken: wide, userInfo: wide))
        #expect(narrow?.joseReason == .algorithmNotAllowed)
    }

    @Test func theSignatureInsideIsStillVerified() async throws {
        let stranger = try JWSSigningKey.generate(.es256, keyID: "as-1")
        let body = try Self.encrypted(try JWTIntrospectionTests.signed(key: stranger))
        let error = await refusal(body, EncryptionOptions(decryptionKeys: [Self.rsaKey]))
        #expect(error?.code == .invalidIntrospectionResponse)
        #expect(error?.joseReason == .signatureInvalid)
        // Claims inside are checked as for a plain answer.
        let foreign = try Self.encrypted(try JWTIntrospectionTests.signed(JWTIntrospectionTests.claims(aud: "another-client")))
        #expect(await refusal(foreign, EncryptionOptions(decryptionKeys: [Self.rsaKey]))?.joseReason == .audienceMismatch)
        // A JWE holding claims rather than a signed JWT is not an answer.
        let unsigned = try JWE.encrypt(
            Data(JSONValue.object(JWTIntrospectionTests.claims()).description.utf8), to: Self.rsaKey.publicKey, algorithm: .rsaOAEP256, encryption: .a256GCM)
        #expect(await refusal(unsigned, EncryptionOptions(decryptionKeys: [Self.rsaKey]))?.code == .invalidIntrospectionResponse)
    }

    @Test func withoutKeysOrWithTheWrongKeyItIsRefused() async throws {
        let body = try Self.encrypted(try JWTIntrospectionTests.signed())
        let keyless = await refusal(body, nil)
        #expect(keyless?.code == .invalidIntrospectionResponse)
        #expect(keyless?.joseReason == .keyNotFound)
        #expect(keyless?.message?.contains("ClientConfiguration.encryption") == true)
        let impostor = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "client-rsa")   // the same kid, another key
        #expect(await refusal(body, EncryptionOptions(decryptionKeys: [impostor]))?.joseReason == .decryptionFailed)
    }

    @Test func aPlainAnswerIsRefusedOnlyWhenEncryptionIsRequired() async throws {
        let plain = try JWTIntrospectionTests.signed()
        let required = await refusal(plain, EncryptionOptions(decryptionKeys: [Self.rsaKey], requiresEncryptedIntrospection: true))
        #expect(required?.code == .invalidIntrospectionResponse)
        #expect(required?.joseReason == .algorithmNotAllowed)
        #expect(required?.message?.contains("not encrypted") == true)
        #expect(try await introspect(plain, EncryptionOptions(decryptionKeys: [Self.rsaKey])).active)
        #expect(try await introspect(plain, nil).active)
    }

    @Test func aRotatedKeySetOpensAnswersForTheOldAndTheNewKey() async throws {
        let old = try JWEDecryptionKey.generate(.ecdhESA128KW, keyID: "enc-old")
        let new = try JWEDecryptionKey.generate(.ecdhESA128KW, keyID: "enc-new")
        let set = Data(JSONValue.object(["keys": [.object(new.privateJWK), .object(old.privateJWK)]]).description.utf8)
        let options = EncryptionOptions(decryptionKeys: try JWEDecryptionKey.keys(jwkSet: set), introspection: .registered(.ecdhESA128KW, .a128CBCHS256))
        for key in [old, new] {
            let body = try Self.encrypted(try JWTIntrospectionTests.signed(), to: key.publicKey, .ecdhESA128KW, .a128CBCHS256)
            #expect(try await introspect(body, options).active)
        }
    }
}
