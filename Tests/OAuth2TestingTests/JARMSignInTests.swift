import Foundation
import OAuth2
import OAuth2InteractiveSignIn
import OAuth2Testing
import Testing

/// JWT-secured authorization responses (JARM) from the embedded provider, through the
/// client's whole sign-in (authorization code + PKCE): advertised in the metadata, signed
/// with the provider's key, encrypted to the client's when it registered a key, in the
/// query or the fragment; errors inside the JWT too.
@Suite("JARM sign-ins")
struct JARMSignInTests {
    static func client(_ provider: TestProvider, jarm: JARMOptions, encryption: EncryptionOptions? = nil) async throws -> OAuth2Client {
        var configuration = ClientConfiguration(
            clientID: TestProvider.Demo.publicClientID, redirectURI: Fixture.redirectURI, scopes: ["openid", "profile", "offline_access"])
        configuration.jarm = jarm
        configuration.encryption = encryption
        return try await OAuth2Client(server: .issuer(provider.issuer), configuration: configuration, environment: HTTPEnvironment(metadataCache: MetadataCache()))
    }

    @Test("The provider offers JARM; a sign-in's one response parameter is a signed JWT the client verifies")
    func signedResponse() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Self.client(provider, jarm: JARMOptions())
            #expect(client.metadata.strings("response_modes_supported")?.contains("jwt") == true)
            #expect(client.metadata.strings("response_modes_supported")?.contains("fragment.jwt") == true)
            #expect(client.metadata.strings("authorization_signing_alg_values_supported") == ["RS256"])

            let request = try client.authorizationRequest()
            let callback = try await provider.followRedirect(from: request.url)
            let names = (URLComponents(url: callback, resolvingAgainstBaseURL: false)?.queryItems ?? []).map(\.name)
            #expect(names == ["response"], "no code, state or iss outside the JWT")
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)
            #expect(tokens.refreshToken != nil)
        }
    }

    @Test("fragment.jwt, signed then encrypted to the client's key")
    func encryptedResponseInTheFragment() async throws {
        let key = try JWEDecryptionKey.generate(.ecdhESA256KW, keyID: "enc-1")
        var configuration = TestProvider.Configuration.demo
        configuration.clients[0].authorizationResponseEncryption = .init(key: key.publicKey, algorithm: .ecdhESA256KW, encryption: .a256GCM)
        try await TestProvider.withProvider(configuration: configuration) { provider in
            let client = try await Self.client(
                provider, jarm: JARMOptions(responseMode: "fragment.jwt", requiresEncryption: true),
                encryption: EncryptionOptions(decryptionKeys: [key]))
            let request = try client.authorizationRequest()
            let callback = try await provider.followRedirect(from: request.url)
            let fragment = try #require(URLComponents(url: callback, resolvingAgainstBaseURL: false)?.fragment)
            #expect(fragment.hasPrefix("response=") && callback.query == nil)
            #expect(fragment.split(separator: ".").count == 5, "a JWE")
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)

            // Without the key, the same kind of answer is refused before the token endpoint.
            let keyless = try await Self.client(provider, jarm: JARMOptions(responseMode: "fragment.jwt"))
            let error = await Fixture.oauthError { _ = try await Fixture.signIn(keyless, provider) }
            #expect(error?.code == .invalidAuthorizationResponse && error?.joseReason == .keyNotFound)
        }
    }

    @Test("An error goes back inside the JWT, and comes out as the provider's typed error")
    func errorInsideTheJWT() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Self.client(provider, jarm: JARMOptions())
            provider.failNext(.authorization, with: .error("access_denied", description: "The user said no."))
            let request = try client.authorizationRequest()
            let callback = try await provider.followRedirect(from: request.url)
            #expect(Fixture.query(callback).keys.sorted() == ["response"])
            let error = await Fixture.oauthError { _ = try await client.completeAuthorization(callbackURL: callback, request: request) }
            #expect(error?.code == .accessDenied && error?.source == .server)
        }
    }

    @Test("A client that asked for JARM refuses the plain answer of a server that ignored it")
    func plainAnswerIsADowngrade() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Self.client(provider, jarm: JARMOptions())
            let request = try client.authorizationRequest()
            // The same provider, asked without response_mode, answers plainly: that answer
            // handed to the JARM request is what a downgrading attacker would deliver.
            let plainURL = URL(string: request.url.absoluteString.replacingOccurrences(of: "&response_mode=jwt", with: ""))!
            let callback = try await provider.followRedirect(from: plainURL)
            #expect(Fixture.query(callback)["code"] != nil)
            let error = await Fixture.oauthError { _ = try await client.completeAuthorization(callbackURL: callback, request: request) }
            #expect(error?.code == .invalidAuthorizationResponse)
        }
    }

    @Test("The loopback sign-in waits for the JARM response and completes through it")
    func loopbackSignIn() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Self.client(provider, jarm: JARMOptions())
            let signIn = LoopbackSignIn(browser: .custom { url in (try? await provider.openInBrowser(url)) != nil })
            let tokens = try await signIn.signIn(client: client)
            #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)
        }
    }
}
