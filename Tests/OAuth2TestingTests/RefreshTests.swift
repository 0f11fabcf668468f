import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite("Refresh tokens")
struct RefreshTests {
    @Test("A refresh rotates the refresh token; presenting the old one again revokes the whole grant")
    func rotationAndReuseDetection() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let first = try await Fixture.signIn(client, provider)
            provider.resetRequestCounts()

            let second = try await client.refresh(first)
            #expect(provider.requestCount(.token) == 1)
            #expect(second.refreshToken != first.refreshToken)
            #expect(second.accessToken != first.accessToken)
            #expect(provider.isActive(token: try #require(second.refreshToken)))
            #expect(!provider.isActive(token: try #require(first.refreshToken)))

            let error = await Fixture.oauthError { _ = try await client.refresh(first) }
            #expect(error?.code == .invalidGrant)
            #expect(error?.requiresReauthorization == true)
            #expect(!provider.isActive(token: second.accessToken))
            #expect(!provider.isActive(token: try #require(second.refreshToken)))
        }
    }

    @Test("Without rotation the refresh token is kept and works again")
    func withoutRotation() async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.rotatesRefreshTokens = false
        try await TestProvider.withProvider(configuration: configuration) { provider in
            let client = try await Fixture.publicClient(provider)
            let first = try await Fixture.signIn(client, provider)
            let second = try await client.refresh(first)
            #expect(second.refreshToken == first.refreshToken)
            let third = try await client.refresh(second)
            #expect(third.refreshToken == first.refreshToken)
            #expect(provider.isActive(token: third.accessToken))
        }
    }

    @Test("A refreshed ID token keeps sub and auth_time, and has no nonce")
    func refreshedIDToken() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let first = try await Fixture.signIn(client, provider)
            try await Task.sleep(for: .milliseconds(1100))
            let second = try await client.refresh(first)
            let before = try #require(first.idTokenClaims)
            let after = try #require(second.idTokenClaims)
            #expect(second.idToken != first.idToken)
            #expect(after.subject == before.subject)
            #expect(after.authTime == before.authTime)
            #expect(after.nonce == nil)
            #expect(after.issuedAt > before.issuedAt)
        }
    }

    @Test("A refresh may narrow the scopes but not widen them")
    func scopes() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider, scopes: ["openid", "profile", "offline_access"])
            let first = try await Fixture.signIn(client, provider)
            let narrowed = try await client.refresh(first, scopes: ["openid"])
            #expect(narrowed.scopes == ["openid"])
            let (_, body) = try await Fixture.send(
                .post, provider.url(for: .introspection),
                form: [("token", try #require(narrowed.refreshToken)), ("client_id", TestProvider.Demo.confidentialClientID),
                       ("client_secret", TestProvider.Demo.confidentialClientSecret)])
            #expect(Fixture.json(body)["scope"] == "openid profile offline_access")

            let error = await Fixture.oauthError { _ = try await client.refresh(narrowed, scopes: ["openid", "email"]) }
            #expect(error?.code == .invalidScope)
        }
    }

    @Test("An expired refresh token is refused")
    func expiry() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            provider.lifetimes.refreshToken = .milliseconds(100)
            let client = try await Fixture.publicClient(provider)
            let tokens = try await Fixture.signIn(client, provider)
            try await Task.sleep(for: .milliseconds(200))
            let error = await Fixture.oauthError { _ = try await client.refresh(tokens) }
            #expect(error?.code == .invalidGrant)
        }
    }

    @Test("A refresh token of another client is refused")
    func otherClientsToken() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let tokens = try await Fixture.signIn(try await Fixture.publicClient(provider), provider)
            let other = try await Fixture.confidentialClient(provider)
            let error = await Fixture.oauthError { _ = try await other.refresh(tokens) }
            #expect(error?.code == .invalidGrant)
            #expect(provider.isActive(token: try #require(tokens.refreshToken)))
        }
    }
}
