import Foundation
import HTTPTypes
import OAuth2
import Testing

extension Integration {
    /// Encrypted ID tokens, UserInfo and JWT introspection answers (JWE) made by Glewlwyd 2.7.5:
    /// a confidential client registered for this run through Glewlwyd's admin API, with this
    /// run's public encryption key (`jwks`) and the properties the OIDC plugin reads (`alg`,
    /// `enc`, `encrypt_id_token`, `encrypt_userinfo`, `encrypt_introspection`; the plugin's
    /// `encrypt-out-token-allow` is on, see scripts/test-servers/glewlwyd.sh). Glewlwyd signs,
    /// then encrypts: the client decrypts, verifies the signed JWT inside, and keeps the signed
    /// ID token.
    @Suite("Encrypted ID tokens, UserInfo and introspection answers from Glewlwyd", .serialized, .timeLimit(.minutes(3)))
    struct EncryptedAnswersAgainstGlewlwydTests {
        static let cases: [(JWEKeyAlgorithm, JWEContentEncryption, String)] = [
            (.rsaOAEP256, .a256GCM, "RSA"), (.ecdhESA128KW, .a128CBCHS256, "P-256"), (.ecdhES, .a256GCM, "P-384"),
        ]

        /// A confidential client of Glewlwyd's OIDC plugin (code, refresh and password grants,
        /// scopes openid and read, `client_secret_basic`) that gets the answers `encrypting`
        /// names encrypted to `key`, or none without a key; removed by `remove()`.
        struct RegisteredClient {
            let client = GlewlwydRegisteredClient(prefix: "enc")
            var id: String { client.id }
            var secret: String { client.secret }

            /// Registers the client with `key`'s public half and the pair, for the answers named
            /// by their Glewlwyd property (`encrypt_id_token`, `encrypt_userinfo`,
            /// `encrypt_introspection`).
            func register(
                key: JWEDecryptionKey, algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption,
                encrypting answers: [String] = ["encrypt_id_token", "encrypt_userinfo"]
            ) async throws {
                var members: [String: JSONValue] = [
                    "jwks": ["keys": [.object(key.publicKey.members)]],
                    "alg": .string(algorithm.rawValue), "enc": .string(encryption.rawValue),
                ]
                for answer in answers { members[answer] = "true" }
                try await register(members)
            }

            /// Registers the client without encrypted answers (it sends encrypted request objects).
            func register(_ extra: [String: JSONValue] = [:]) async throws {
                let properties: [String: JSONValue] = [
                    "redirect_uri": [.string(Server.redirectURI.absoluteString)],
                    "authorization_type": ["code", "refresh_token", "password"], "scope": ["openid", "read"],
                    "token_endpoint_auth_method": ["client_secret_basic"],
                ]
                try await client.register(properties.merging(extra) { _, new in new })
            }

            /// The client's configuration (its id, secret, the test redirect URI, openid and read).
            var configuration: ClientConfiguration {
                ClientConfiguration(clientID: id, clientSecret: secret, redirectURI: Server.redirectURI, scopes: ["openid", "read"])
            }

            func remove() async { await client.remove() }
        }

        @Test("Sign in, refresh and UserInfo: every answer encrypted to this run's key, decrypted, its signature verified", arguments: cases)
        func encryptedAnswers(algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption, keyType: String) async throws {
            let key = keyType == "RSA"
                ? try JWEDecryptionKey.generate(algorithm, keyID: "enc-rsa")
                : try JWEDecryptionKey.generate(algorithm, curve: keyType, keyID: "enc-\(keyType)")
            let registered = RegisteredClient()
            try await registered.register(key: key, algorithm: algorithm, encryption: encryption)
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

        /// What Glewlwyd puts in `aud` for a token asked for without a resource: its scopes.
        static let scopeAudiences = ["read", "openid read", "read openid"]

        @Test(
            "JWT introspection (RFC 9701): the answer signed, then encrypted to this run's key, decrypted and its signature verified",
            arguments: [(JWEKeyAlgorithm.rsaOAEP256, JWEContentEncryption.a256GCM, "RSA"), (.ecdhESA128KW, .a128CBCHS256, "P-256")])
        func encryptedIntrospection(algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption, keyType: String) async throws {
            try await Self.encryptedIntrospection(algorithm: algorithm, encryption: encryption, keyType: keyType)
        }

        /// A user's access token (the password grant: no browser), then a JWT introspection answer
        /// about it encrypted with the pair to a key of `keyType`, for a client registered for it
        /// (and removed after); also the compatibility suite's journey. Glewlwyd 2.7.5 encrypts
        /// the answer about a user's token only: about a client-credentials token it answers a
        /// plain JWT, whatever the client registered.
        static func encryptedIntrospection(algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption, keyType: String) async throws {
            let key = keyType == "RSA"
                ? try JWEDecryptionKey.generate(algorithm, keyID: "introspection-rsa")
                : try JWEDecryptionKey.generate(algorithm, curve: keyType, keyID: "introspection-\(keyType)")
            let registered = RegisteredClient()
            try await registered.register(key: key, algorithm: algorithm, encryption: encryption, encrypting: ["encrypt_introspection"])
            do {
                var configuration = registered.configuration
                configuration.encryption = EncryptionOptions(
                    decryptionKeys: [key], introspection: .registered(algorithm, encryption), requiresEncryptedIntrospection: true)
                let client = try await Server.glewlwyd.client(configuration)
                let tokens = try await client.password(username: Server.username, password: Server.password)
                let format = IntrospectionFormat.jwt(.init(audiences: scopeAudiences))
                // Only a JWE passes: a plain answer is refused by requiresEncryptedIntrospection.
                let answer = try await client.introspect(tokens.accessToken, hint: .accessToken, format: format)
                #expect(answer.active && answer.clientID == registered.id)
                #expect(answer.issuer == Server.glewlwyd.issuer.absoluteString)

                // Without the key the same answer is refused, and says why; no token in the message.
                var withoutKey = configuration
                withoutKey.encryption = nil
                let plain = try await Server.glewlwyd.client(withoutKey)
                do {
                    _ = try await plain.introspect(tokens.accessToken, hint: .accessToken, format: format)
                    Issue.record("an encrypted introspection answer was accepted without a decryption key")
                } catch let error as OAuth2Error {
                    #expect(error.code == .invalidIntrospectionResponse && error.joseReason == .keyNotFound, "\(error)")
                    #expect(!error.description.contains(tokens.accessToken))
                }
            } catch {
                await registered.remove()
                throw error
            }
            await registered.remove()
        }
    }
}
