import Foundation
import HTTPTypes
import OAuth2
import Testing

/// Encrypted ID tokens and UserInfo answers (JWE) made by Glewlwyd 2.7.5: a confidential
/// client registered for this run through Glewlwyd's admin API, with this run's public
/// encryption key (`jwks`) and the properties the OIDC plugin reads (`alg`, `enc`,
/// `encrypt_id_token`, `encrypt_userinfo`; the plugin's `encrypt-out-token-allow` is on, see
/// scripts/test-servers/glewlwyd.sh). Glewlwyd signs, then encrypts: the client decrypts,
/// verifies the signed ID token inside, and keeps that one.
@Suite("Encrypted ID tokens and UserInfo from Glewlwyd", .serialized, .timeLimit(.minutes(3)))
struct EncryptedAnswersAgainstGlewlwydTests {
    static let cases: [(JWEKeyAlgorithm, JWEContentEncryption, String)] = [
        (.rsaOAEP256, .a256GCM, "RSA"), (.ecdhESA128KW, .a128CBCHS256, "P-256"), (.ecdhES, .a256GCM, "P-384"),
    ]

    /// A confidential client of Glewlwyd's OIDC plugin that gets its ID tokens and UserInfo
    /// answers encrypted to `key`.
    static func register(key: JWEDecryptionKey, algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption) async throws -> GlewlwydRegisteredClient {
        let registered = GlewlwydRegisteredClient(prefix: "enc")
        try await registered.register([
            "redirect_uri": [.string(Server.redirectURI.absoluteString)],
            "authorization_type": ["code", "refresh_token"], "scope": ["openid", "read"],
            "token_endpoint_auth_method": ["client_secret_basic"],
            "jwks": ["keys": [.object(key.publicKey.members)]],
            "alg": .string(algorithm.rawValue), "enc": .string(encryption.rawValue),
            "encrypt_id_token": "true", "encrypt_userinfo": "true",
        ])
        return registered
    }

    @Test("Sign in, refresh and UserInfo: every answer encrypted to this run's key, decrypted, its signature verified", arguments: cases)
    func encryptedAnswers(algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption, keyType: String) async throws {
        let key = keyType == "RSA"
            ? try JWEDecryptionKey.generate(algorithm, keyID: "enc-rsa")
            : try JWEDecryptionKey.generate(algorithm, curve: keyType, keyID: "enc-\(keyType)")
        let registered = try await Self.register(key: key, algorithm: algorithm, encryption: encryption)
        do {
            var configuration = ClientConfiguration(
                clientID: registered.id, clientSecret: registered.secret, redirectURI: Server.redirectURI, scopes: ["openid", "read"])
            // Only the pair registered; a plain ID token would be refused (a downgrade).
            configuration.encryption = EncryptionOptions(
                decryptionKeys: [key], idToken: .registered(algorithm, encryption), userInfo: .registered(algorithm, encryption),
                requiresEncryptedIDTokens: true)
            let client = try await Server.glewlwyd.client(configuration)
            let request = try await client.startAuthorization()
            let callback = try await Server.glewlwyd.authorize(request, clientID: registered.id)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            // What the token set keeps is the signed ID token from inside the JWE.
            let idToken = try #require(tokens.idToken)
            #expect(idToken.split(separator: ".").count == 3)
            let subject = try #require(tokens.idTokenClaims?.subject)   // Glewlwyd's pseudonymous sub
            #expect(!subject.isEmpty)

            let userInfo = try await client.userInfo(for: tokens)
            #expect(userInfo.isEncrypted && userInfo.isSigned && userInfo.subject == subject)

            let refreshed = try await client.refresh(tokens)
            #expect(refreshed.idTokenClaims?.subject == subject, "the refresh's ID token, encrypted too, was decrypted and checked")

            // The same client without the key: the encrypted ID token is refused, and says why.
            var withoutKey = configuration
            withoutKey.encryption = nil
            let plain = try await Server.glewlwyd.client(withoutKey)
            let second = try await plain.startAuthorization()
            let secondCallback = try await Server.glewlwyd.authorize(second, clientID: registered.id)
            do {
                _ = try await plain.completeAuthorization(callbackURL: secondCallback, request: second)
                Issue.record("an encrypted ID token was accepted without a decryption key")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidIDToken && error.joseReason == .keyNotFound, "\(error)")
            }
        } catch {
            await registered.remove()
            throw error
        }
        await registered.remove()
    }
}
