import Foundation
import HTTPTypes
import OAuth2
import OAuth2Testing
import Testing

@Suite("UserInfo, introspection and revocation")
struct ResourceEndpointsTests {
    @Test("UserInfo answers the claims the scopes release, for a Bearer header only")
    func userInfo() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider, scopes: ["openid", "profile"])
            let tokens = try await Fixture.signIn(client, provider)
            let info = try await client.userInfo(for: tokens)
            #expect(info.subject == TestProvider.Demo.subject)
            #expect(info.name == "Demo User")
            #expect(info.email == nil)  // no email scope

            let url = provider.url(for: .userInfo)
            let (inQuery, _) = try await Fixture.send(.get, URL(string: url.absoluteString + "?access_token=" + tokens.accessToken)!)
            #expect(inQuery.status.code == 400)
            let (inBody, _) = try await Fixture.send(.post, url, form: [("access_token", tokens.accessToken)])
            #expect(inBody.status.code == 400)
            let (none, _) = try await Fixture.send(.get, url)
            #expect(none.status.code == 401)
            #expect(none.headerFields[.wwwAuthenticate]?.hasPrefix("Bearer realm=") == true)
            let (wrong, _) = try await Fixture.send(.get, url, headers: [.authorization: "Bearer not-a-token"])
            #expect(wrong.status.code == 401)
            #expect(wrong.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
        }
    }

    @Test("UserInfo refuses a token without openid (insufficient_scope)")
    func userInfoNeedsOpenID() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.confidentialClient(provider, scopes: ["api"])
            let tokens = try await client.password(username: TestProvider.Demo.username, password: TestProvider.Demo.password)
            let error = await Fixture.oauthError { _ = try await client.userInfo(accessToken: tokens.accessToken, expectedSubject: nil) }
            #expect(error?.statusCode == 403)
            #expect(error?.code == .insufficientScope)
        }
    }

    @Test("Introspection describes live access and refresh tokens, and nothing else")
    func introspection() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let user = try await Fixture.signIn(try await Fixture.publicClient(provider), provider)
            let resourceServer = try await Fixture.confidentialClient(provider)

            let access = try await resourceServer.introspect(user.accessToken)
            #expect(access.active)
            #expect(access.clientID == TestProvider.Demo.publicClientID)
            #expect(access.subject == TestProvider.Demo.subject)
            #expect(access.username == TestProvider.Demo.username)
            #expect(access.scopes == ["openid", "profile", "email", "offline_access"])
            #expect(access.issuer == provider.issuer.absoluteString)
            #expect(access.expiresAt != nil)

            let refresh = try await resourceServer.introspect(try #require(user.refreshToken), hint: .refreshToken)
            #expect(refresh.active)
            #expect(refresh.tokenType == "refresh_token")

            #expect(try await resourceServer.introspect("made-up").active == false)
            provider.expireAccessTokens()
            #expect(try await resourceServer.introspect(user.accessToken).active == false)
        }
    }

    @Test("A public client may not introspect")
    func introspectionNeedsAConfidentialClient() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let tokens = try await Fixture.signIn(client, provider)
            let error = await Fixture.oauthError { _ = try await client.introspect(tokens.accessToken) }
            #expect(error?.code == .invalidClient)
        }
    }

    @Test("Revoking a refresh token revokes its grant; revoking an access token only that token")
    func revocation() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let first = try await Fixture.signIn(client, provider)
            try await client.revoke(first.accessToken, hint: .accessToken)
            #expect(!provider.isActive(token: first.accessToken))
            #expect(provider.isActive(token: try #require(first.refreshToken)))

            let second = try await Fixture.signIn(client, provider)
            try await client.revoke(try #require(second.refreshToken), hint: .refreshToken)
            #expect(!provider.isActive(token: try #require(second.refreshToken)))
            #expect(!provider.isActive(token: second.accessToken))
            let error = await Fixture.oauthError { _ = try await client.refresh(second) }
            #expect(error?.code == .invalidGrant)

            // Unknown tokens: 200 (RFC 7009 §2.2).
            try await client.revoke("never-issued")
        }
    }

    @Test("A client cannot revoke another client's token")
    func revocationOfAnotherClientsToken() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let tokens = try await Fixture.signIn(try await Fixture.publicClient(provider), provider)
            let other = try await Fixture.confidentialClient(provider)
            let error = await Fixture.oauthError { try await other.revoke(tokens.accessToken) }
            #expect(error?.code == .invalidRequest)
            #expect(provider.isActive(token: tokens.accessToken))
        }
    }
}
