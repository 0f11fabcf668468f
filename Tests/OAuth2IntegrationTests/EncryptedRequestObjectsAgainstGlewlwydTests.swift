import Foundation
import OAuth2
import Testing

extension Integration.EncryptedAnswersAgainstGlewlwydTests {
    /// Encrypted request objects (RFC 9101 §6.1) at Glewlwyd 2.7.5's oidc-enc instance
    /// (`glewlwyd.sh`'s `enc_extras`: encryption keys enc-rsa and enc-ec published with
    /// `use: enc`, beside its signing key): the client signs the request object with its secret
    /// (HS256), encrypts it to the key of the instance's JWK set that fits the configured
    /// algorithm, and sends it by value or pushes it (PAR); Glewlwyd decrypts it with the key its
    /// `kid` names and signs the user in. A client registered for this run through the admin API
    /// (`RegisteredClient`) with its
    /// `request_object_signing_alg` and `request_object_encryption_alg`/`_enc`, which Glewlwyd
    /// enforces, and `client_secret_jwt` among its methods: Glewlwyd takes a pushed request object
    /// signed with the secret for that method of authentication. Fails, never skips, when
    /// Glewlwyd does not answer. Nested in the encrypted answers' suite, which is serialized: the
    /// two never register clients and sign in at the same time (Glewlwyd's SQLite database
    /// answers 500 to bursts of writes).
    @Suite("Encrypted request objects at Glewlwyd", .serialized, .timeLimit(.minutes(3)))
    struct RequestObjects {
        static var issuer: URL { URL(string: Server.env("OAUTH2_TEST_GLEWLWYD_ENC_ISSUER", "http://127.0.0.1:4593/api/oidc-enc"))! }

        /// Registers `client` for request objects signed with HS256 and encrypted with the pair.
        static func register(_ client: RegisteredClient, _ algorithm: JWEKeyAlgorithm, _ encryption: JWEContentEncryption) async throws {
            try await client.register([
                "token_endpoint_auth_method": ["client_secret_basic", "client_secret_jwt"], "request_object_signing_alg": "HS256",
                "request_object_encryption_alg": .string(algorithm.rawValue), "request_object_encryption_enc": .string(encryption.rawValue),
            ])
        }

        static func query(_ url: URL) -> [String: String] {
            let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
        }

        @Test(
            "Signed, encrypted to the instance's key, by value and pushed: Glewlwyd decrypts it and the sign-in completes",
            arguments: [(JWEKeyAlgorithm.rsaOAEP256, JWEContentEncryption.a256GCM), (.ecdhESA128KW, .a128CBCHS256)], [false, true])
        func signIn(pair: (JWEKeyAlgorithm, JWEContentEncryption), pushed: Bool) async throws {
            try await Self.signIn(algorithm: pair.0, encryption: pair.1, pushed: pushed)
        }

        /// A sign-in with a request object encrypted with the pair, by value or pushed, by a
        /// client registered for it (and removed after); also the compatibility suite's journey.
        static func signIn(algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption, pushed: Bool) async throws {
            let registered = RegisteredClient()
            try await register(registered, algorithm, encryption)
            do {
                var configuration = registered.configuration
                configuration.requestObject = RequestObjectOptions(encryption: RequestObjectEncryption(algorithm, encryption))
                configuration.usePushedAuthorizationRequests = pushed
                let client = try await Server.glewlwyd.client(configuration, issuer: issuer)
                #expect(client.metadata.requestObjectEncryptionAlgValuesSupported?.contains(algorithm.rawValue) == true)
                let request = try await client.startAuthorization()
                if pushed {
                    #expect(Set(query(request.url).keys) == ["client_id", "request_uri"])
                } else {
                    let jwe = try JWE(compact: try #require(query(request.url)["request"]))
                    #expect(jwe.keyID == (algorithm.isRSA ? "enc-rsa" : "enc-ec") && jwe.contentType == "JWT")
                    #expect(request.url.query?.contains("state=") == false, "the parameters travel only encrypted")
                }
                let callback = try await Server.glewlwyd.authorize(request, clientID: registered.id)
                let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
                #expect(tokens.idTokenClaims?.nonce == request.nonce, "the nonce inside the encrypted object reached the ID token")
            } catch {
                await registered.remove()
                throw error
            }
            await registered.remove()
        }

        @Test("A request object encrypted to a key the instance does not hold, or with a pair the client did not register, is refused at the PAR endpoint")
        func aForeignKeyOrPairIsRefused() async throws {
            let registered = RegisteredClient()
            try await Self.register(registered, .rsaOAEP256, .a256GCM)
            do {
                // The right kid and type, another key: only Glewlwyd's decryption can tell.
                let impostor = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "enc-rsa")
                for encryption in [
                    RequestObjectEncryption(.rsaOAEP256, .a256GCM, recipientKey: impostor.publicKey),
                    RequestObjectEncryption(.ecdhESA128KW, .a128CBCHS256),   // the instance's key, a pair not registered
                ] {
                    var configuration = registered.configuration
                    configuration.requestObject = RequestObjectOptions(encryption: encryption)
                    configuration.usePushedAuthorizationRequests = true
                    let client = try await Server.glewlwyd.client(configuration, issuer: Self.issuer)
                    do {
                        _ = try await client.startAuthorization()
                        Issue.record("Glewlwyd accepted a request object encrypted with \(encryption.algorithm) it should refuse")
                    } catch let error as OAuth2Error {
                        #expect(error.source == .server, "\(error)")
                        #expect(!error.description.contains(registered.secret))
                    }
                }
            } catch {
                await registered.remove()
                throw error
            }
            await registered.remove()
        }
    }
}
