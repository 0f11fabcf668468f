import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite("RP-initiated logout")
struct EndSessionTests {
    static let postLogout = URL(string: "http://127.0.0.1:53682/logged-out")!

    @Test("Logout with id_token_hint goes back to the registered URI with the state, and ends the session")
    func logout() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let tokens = try await Fixture.signIn(client, provider)
            let sessionID = try #require(tokens.idTokenClaims?.sessionID)
            #expect(provider.isSessionActive(sessionID))

            let logout = try client.endSessionRequest(EndSessionOptions(idTokenHint: tokens.idToken, postLogoutRedirectURI: Self.postLogout))
            let back = try await provider.followRedirect(from: logout.url)
            try logout.validateCallback(back)
            #expect(Fixture.query(back)["state"] == logout.state)
            #expect(!provider.isSessionActive(sessionID))
            #expect(!provider.isActive(token: tokens.accessToken))
            #expect(!provider.isActive(token: try #require(tokens.refreshToken)))
            #expect(provider.requestCount(.endSession) == 1)
        }
    }

    @Test("An unregistered post-logout redirect URI gets an error page")
    func unregisteredPostLogoutURI() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let tokens = try await Fixture.signIn(client, provider)
            let logout = try client.endSessionRequest(
                EndSessionOptions(idTokenHint: tokens.idToken, postLogoutRedirectURI: URL(string: "http://127.0.0.1:53682/elsewhere")!))
            let error = await Fixture.providerError { _ = try await provider.followRedirect(from: logout.url) }
            #expect(error?.code == .errorPage)
            #expect(error?.statusCode == 400)
            #expect(provider.isSessionActive(try #require(tokens.idTokenClaims?.sessionID)))
        }
    }

    @Test("An id_token_hint signed by someone else is refused")
    func forgedHint() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let forger = try JWSSigningKey.generate(.rs256, keyID: "forger")
            let forged = try forger.sign(claims: [
                "iss": .string(provider.issuer.absoluteString), "sub": .string(TestProvider.Demo.subject),
                "aud": .string(TestProvider.Demo.publicClientID),
            ])
            let logout = try client.endSessionRequest(EndSessionOptions(idTokenHint: forged, postLogoutRedirectURI: Self.postLogout))
            let error = await Fixture.providerError { _ = try await provider.followRedirect(from: logout.url) }
            #expect(error?.statusCode == 400)
        }
    }

    @Test("Without a post-logout redirect the provider shows a signed-out page")
    func signedOutPage() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let tokens = try await Fixture.signIn(client, provider)
            let logout = try client.endSessionRequest(EndSessionOptions(idTokenHint: tokens.idToken))
            #expect(try await provider.openInBrowser(logout.url) == logout.url)
            #expect(!provider.isSessionActive(try #require(tokens.idTokenClaims?.sessionID)))
        }
    }
}
