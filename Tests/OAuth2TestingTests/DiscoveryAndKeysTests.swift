import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite("Discovery and signing keys")
struct DiscoveryAndKeysTests {
    @Test("The OpenID and RFC 8414 documents name the issuer and every endpoint")
    func metadataDocuments() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let (response, body) = try await Fixture.send(.get, provider.url(for: .discovery))
            #expect(response.status.code == 200)
            let openID = Fixture.json(body)
            let issuer = provider.issuer.absoluteString
            #expect(openID["issuer"] == .string(issuer))
            for (member, endpoint) in [
                ("authorization_endpoint", TestProvider.Endpoint.authorization), ("token_endpoint", .token), ("jwks_uri", .jwks),
                ("userinfo_endpoint", .userInfo), ("revocation_endpoint", .revocation), ("introspection_endpoint", .introspection),
                ("device_authorization_endpoint", .deviceAuthorization), ("end_session_endpoint", .endSession),
            ] {
                #expect(openID[member] == .string(provider.url(for: endpoint).absoluteString), "\(member)")
            }
            #expect(openID["code_challenge_methods_supported"] == ["S256"])
            #expect(openID["id_token_signing_alg_values_supported"] == ["RS256"])
            #expect(openID["authorization_response_iss_parameter_supported"] == true)

            let (oauthResponse, oauthBody) = try await Fixture.send(.get, URL(string: issuer + "/.well-known/oauth-authorization-server")!)
            #expect(oauthResponse.status.code == 200)
            #expect(Fixture.json(oauthBody) == openID)

            let client = try await Fixture.publicClient(provider)
            #expect(client.metadata.issuer == issuer)
            #expect(client.metadata.tokenEndpoint == provider.url(for: .token))
        }
    }

    @Test("An issuer with a path: endpoints below it, RFC 8414 document at the origin")
    func issuerPath() async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.issuerPath = "/realms/test"
        try await TestProvider.withProvider(configuration: configuration) { provider in
            #expect(provider.issuer.path == "/realms/test")
            #expect(provider.url(for: .token).path == "/realms/test/token")
            let origin = "http://127.0.0.1:\(provider.port)"
            let (response, body) = try await Fixture.send(.get, URL(string: origin + "/.well-known/oauth-authorization-server/realms/test")!)
            #expect(response.status.code == 200)
            #expect(Fixture.json(body)["issuer"] == .string(provider.issuer.absoluteString))
            let (missing, _) = try await Fixture.send(.get, URL(string: origin + "/token")!)
            #expect(missing.status.code == 404)
            let tokens = try await Fixture.signIn(try await Fixture.publicClient(provider), provider)
            #expect(tokens.idTokenClaims?.issuer == provider.issuer.absoluteString)
        }
    }

    @Test("The JWK set publishes the signing key, and ID tokens name it",
          arguments: [JWSAlgorithm.rs256, .es256, .ps256, .edDSA])
    func signingAlgorithms(algorithm: JWSAlgorithm) async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.signingAlgorithm = algorithm
        try await TestProvider.withProvider(configuration: configuration) { provider in
            let (_, body) = try await Fixture.send(.get, provider.url(for: .jwks))
            let set = try JSONWebKeySet(data: body)
            #expect(set.keys.map(\.keyID) == [provider.signingKeyID])
            #expect(set.keys.first?.algorithm == algorithm)
            #expect(set.keys.first?.use == "sig")
            #expect(provider.signingKeyID == set.keys.first?.thumbprint)

            let tokens = try await Fixture.signIn(try await Fixture.publicClient(provider), provider)
            let jws = try JWS(compact: try #require(tokens.idToken))
            #expect(jws.algorithm == algorithm)
            #expect(jws.keyID == provider.signingKeyID)
            #expect(jws.type == "JWT")
        }
    }

    @Test("After rotateKeys the new key signs, the old one stays published until retired, and the client refetches once")
    func keyRotation() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let first = try await Fixture.signIn(client, provider)
            let oldKey = provider.signingKeyID
            #expect(provider.requestCount(.jwks) == 1)

            let newKey = try provider.rotateKeys()
            #expect(newKey != oldKey)
            #expect(provider.signingKeyID == newKey)
            #expect(provider.publishedKeyIDs == [oldKey, newKey])

            let second = try await Fixture.signIn(client, provider)
            #expect(try JWS(compact: try #require(second.idToken)).keyID == newKey)
            #expect(provider.requestCount(.jwks) == 2)
            // Tokens signed with the old key still verify while it is published.
            _ = try await client.validateIDToken(try #require(first.idToken), expecting: .init())

            provider.retireOldKeys()
            #expect(provider.publishedKeyIDs == [newKey])
            let (_, body) = try await Fixture.send(.get, provider.url(for: .jwks))
            #expect(try JSONWebKeySet(data: body).keys.map(\.keyID) == [newKey])
            let fresh = try await Fixture.publicClient(provider)
            let error = await Fixture.oauthError { _ = try await fresh.validateIDToken(try #require(first.idToken), expecting: .init()) }
            #expect(error?.code == .invalidIDToken)
        }
    }

    @Test("A fixed signing key is used with its own kid")
    func fixedSigningKey() async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.signingKey = try JWSSigningKey.generate(.es384, keyID: "fixed-key-1")
        try await TestProvider.withProvider(configuration: configuration) { provider in
            #expect(provider.publishedKeyIDs == ["fixed-key-1"])
            let client = try await Fixture.publicClient(provider)
            #expect(client.metadata.idTokenSigningAlgValuesSupported == ["ES384"])
            let tokens = try await Fixture.signIn(client, provider)
            #expect(try JWS(compact: try #require(tokens.idToken)).algorithm == .es384)
        }
    }

    @Test("A configuration that cannot work is refused before the server starts")
    func invalidConfigurations() async throws {
        var duplicateClient = TestProvider.Configuration.demo
        duplicateClient.clients.append(TestProvider.Client(id: TestProvider.Demo.publicClientID))
        var unknownUser = TestProvider.Configuration.demo
        unknownUser.autoApprovedUser = "nobody"
        var hmac = TestProvider.Configuration.demo
        hmac.signingAlgorithm = .hs256
        var badPath = TestProvider.Configuration.demo
        badPath.issuerPath = "realms/"
        for configuration in [duplicateClient, unknownUser, hmac, badPath] {
            let error = await Fixture.providerError { _ = try await TestProvider.start(configuration: configuration) }
            #expect(error?.code == .invalidConfiguration)
        }
    }
}
