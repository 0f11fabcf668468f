import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// Encrypted ID tokens (signed, then encrypted) from the embedded provider, through the
/// client's whole path: the token response, the refresh, and what the token set keeps.
@Suite("Encrypted ID tokens")
struct EncryptedIDTokenTests {
    /// The demo public client, its ID tokens encrypted to `key` with `algorithm`/`encryption`.
    static func configuration(_ key: JWEDecryptionKey, _ algorithm: JWEKeyAlgorithm, _ encryption: JWEContentEncryption) -> TestProvider.Configuration {
        var configuration = TestProvider.Configuration.demo
        configuration.clients[0].idTokenEncryption = .init(key: key.publicKey, algorithm: algorithm, encryption: encryption)
        return configuration
    }

    static func client(_ provider: TestProvider, encryption: EncryptionOptions?) async throws -> OAuth2Client {
        var configuration = ClientConfiguration(
            clientID: TestProvider.Demo.publicClientID, redirectURI: Fixture.redirectURI, scopes: ["openid", "profile", "offline_access"])
        configuration.encryption = encryption
        return try await OAuth2Client(server: .issuer(provider.issuer), configuration: configuration, environment: HTTPEnvironment(metadataCache: MetadataCache()))
    }

    @Test("Decrypted, verified, and kept signed: claims readable, refresh checked the same way")
    func signInAndRefresh() async throws {
        let key = try JWEDecryptionKey.generate(.ecdhESA256KW, keyID: "enc-1")
        try await TestProvider.withProvider(configuration: Self.configuration(key, .ecdhESA256KW, .a256GCM)) { provider in
            let client = try await Self.client(
                provider, encryption: EncryptionOptions(decryptionKeys: [key], idToken: .registered(.ecdhESA256KW, .a256GCM), requiresEncryptedIDTokens: true))
            let tokens = try await Fixture.signIn(client, provider)
            let idToken = try #require(tokens.idToken)
            #expect(idToken.split(separator: ".").count == 3, "the token set keeps the signed ID token")
            #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)
            let refreshed = try await client.refresh(tokens)
            #expect(refreshed.idTokenClaims?.subject == TestProvider.Demo.subject)
            // The signed ID token kept is what validateIDToken accepts again (an id_token_hint's check).
            let nonce = try #require(tokens.idTokenClaims?.nonce)
            _ = try await client.validateIDToken(idToken, expecting: .init(nonce: nonce))
        }
    }

    @Test("Without keys, with a key of another kid, or outside the registered algorithms: refused before any token is used")
    func refusals() async throws {
        let key = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "enc-1")
        try await TestProvider.withProvider(configuration: Self.configuration(key, .rsaOAEP256, .a128CBCHS256)) { provider in
            let none = try await Self.client(provider, encryption: nil)
            var error = await Fixture.oauthError { _ = try await Fixture.signIn(none, provider) }
            #expect(error?.code == .invalidIDToken && error?.joseReason == .keyNotFound)
            #expect(error?.message?.contains("ClientConfiguration.encryption") == true)

            let other = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "enc-2")
            let wrongKey = try await Self.client(provider, encryption: EncryptionOptions(decryptionKeys: [other]))
            error = await Fixture.oauthError { _ = try await Fixture.signIn(wrongKey, provider) }
            #expect(error?.code == .invalidIDToken && error?.joseReason == .keyNotFound)

            let narrow = try await Self.client(
                provider, encryption: EncryptionOptions(decryptionKeys: [key], idToken: .registered(.rsaOAEP256, .a256GCM)))
            error = await Fixture.oauthError { _ = try await Fixture.signIn(narrow, provider) }
            #expect(error?.code == .invalidIDToken && error?.joseReason == .algorithmNotAllowed)
        }
    }

    @Test("A plain ID token is refused when the client requires encryption (no silent downgrade)")
    func downgrade() async throws {
        let key = try JWEDecryptionKey.generate(.ecdhES, keyID: "enc-1")
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let strict = try await Self.client(provider, encryption: EncryptionOptions(decryptionKeys: [key], requiresEncryptedIDTokens: true))
            let error = await Fixture.oauthError { _ = try await Fixture.signIn(strict, provider) }
            #expect(error?.code == .invalidIDToken && error?.joseReason == .algorithmNotAllowed)
            // Keys alone do not require it: a plain ID token from a server that encrypts nothing is fine.
            let lenient = try await Self.client(provider, encryption: EncryptionOptions(decryptionKeys: [key]))
            #expect(try await Fixture.signIn(lenient, provider).idTokenClaims?.subject == TestProvider.Demo.subject)
        }
    }

    @Test("The configuration's description names the keys' count, never key material")
    func description() throws {
        let key = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "enc-1")
        var configuration = ClientConfiguration(clientID: "c")
        configuration.encryption = EncryptionOptions(decryptionKeys: [key])
        let text = "\(configuration)"
        #expect(text.contains("encryption: 1 key(s)"))
        #expect(!text.contains(key.privateJWK["d"]?.stringValue ?? "-"))
        #expect(EncryptionOptions(decryptionKeys: [key]).publicKeys.keys.map(\.use) == ["enc"])
    }
}
