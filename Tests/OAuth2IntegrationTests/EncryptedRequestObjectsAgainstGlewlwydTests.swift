import Foundation
import OAuth2
import Testing

/// Encrypted request objects (RFC 9101 §6.1) at Glewlwyd 2.7.5's oidc-enc instance
/// (`glewlwyd.sh`'s `enc_extras`: encryption keys enc-rsa and enc-ec published with
/// `use: enc`, beside its signing key): the client signs the request object with its secret
/// (HS256), encrypts it to the key of the instance's JWK set that fits the configured
/// algorithm, and sends it by value or pushes it (PAR); Glewlwyd decrypts it with the key its
/// `kid` names and signs the user in. A client registered for this run through the admin API
/// (`EncryptedAnswersAgainstGlewlwydTests.RegisteredClient`). Fails, never skips, when
/// Glewlwyd does not answer.
@Suite("Encrypted request objects at Glewlwyd", .serialized, .timeLimit(.minutes(3)))
struct EncryptedRequestObjectsAgainstGlewlwydTests {
    static var issuer: URL { URL(string: Server.env("OAUTH2_TEST_GLEWLWYD_ENC_ISSUER", "http://127.0.0.1:4593/api/oidc-enc"))! }

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
        let registered = EncryptedAnswersAgainstGlewlwydTests.RegisteredClient()
        try await registered.register()
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

    @Test("A request object encrypted to a key the instance does not hold is refused at the PAR endpoint")
    func aForeignKeyIsRefused() async throws {
        let registered = EncryptedAnswersAgainstGlewlwydTests.RegisteredClient()
        try await registered.register()
        do {
            // The right kid and type, another key: only Glewlwyd's decryption can tell.
            let impostor = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "enc-rsa")
            var configuration = registered.configuration
            configuration.requestObject = RequestObjectOptions(
                encryption: RequestObjectEncryption(.rsaOAEP256, .a256GCM, recipientKey: impostor.publicKey))
            configuration.usePushedAuthorizationRequests = true
            let client = try await Server.glewlwyd.client(configuration, issuer: Self.issuer)
            do {
                _ = try await client.startAuthorization()
                Issue.record("Glewlwyd accepted a request object it cannot decrypt")
            } catch let error as OAuth2Error {
                #expect(error.source == .server, "\(error)")
                #expect(!error.description.contains(registered.secret))
            }
        } catch {
            await registered.remove()
            throw error
        }
        await registered.remove()
    }
}
