import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import OAuth2Testing
import OAuth2Web
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

    /// A GET as a browser sends it: `cookie` (`name=value`) in a `Cookie` field; redirects not followed.
    static func browserGet(_ url: URL, cookie: String? = nil) async throws -> HTTPResponse {
        var request = HTTPRequest(method: .get, url: url)
        if let cookie { request.headerFields[.cookie] = cookie }
        return try await Fixture.asyncHTTPClient.send(request, body: nil).0
    }

    /// A sign-in by a browser that sends `cookie`; the tokens, and the cookie the provider set.
    static func browserSignIn(_ client: OAuth2Client, cookie: String? = nil) async throws -> (TokenSet, String?) {
        let request = try client.authorizationRequest(AuthorizationOptions())
        let answer = try await browserGet(request.url, cookie: cookie)
        #expect(answer.status == .found)
        let callback = try #require(answer.headerFields[.location].flatMap(URL.init(string:)))
        let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
        return (tokens, answer.headerFields[.setCookie])
    }

    @Test("A browser's sign-ins share the session its cookie names; its end-session page without a hint ends that session and sends the logout token")
    func signOutAtTheProvider() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            try await BackChannelLogoutTests.withRelyingParty(provider) { _, received in
                let client = try await Fixture.publicClient(provider)
                let (first, setCookie) = try await Self.browserSignIn(client)
                let sessionID = try #require(first.idTokenClaims?.sessionID)
                let field = try #require(setCookie, "the authorization endpoint's redirect sets the session cookie")
                let cookie = String(field.prefix { $0 != ";" })
                #expect(cookie == "oauth2-test-provider-sid=\(sessionID)")
                #expect(field.contains("; Path=/;") && field.contains("HttpOnly") && field.contains("SameSite=Lax"))

                // The same browser signs in again: the same session. Without the cookie: another.
                let (second, _) = try await Self.browserSignIn(client, cookie: cookie)
                #expect(second.idTokenClaims?.sessionID == sessionID)
                let elsewhere = try await Fixture.signIn(client, provider)
                let otherSessionID = try #require(elsewhere.idTokenClaims?.sessionID)
                #expect(otherSessionID != sessionID)
                // A cookie naming no session is ignored: a new one.
                let (stale, _) = try await Self.browserSignIn(client, cookie: "oauth2-test-provider-sid=unknown")
                #expect(stale.idTokenClaims?.sessionID.map { $0 != "unknown" && $0 != sessionID } == true)

                // The person signs out at the provider: its end-session page, the cookie, no hint.
                let page = try await Self.browserGet(provider.url(for: .endSession), cookie: cookie)
                #expect(page.status == .ok)
                #expect(page.headerFields[.setCookie]?.hasPrefix("oauth2-test-provider-sid=;") == true)
                #expect(page.headerFields[.setCookie]?.contains("Max-Age=0") == true)
                #expect(!provider.isSessionActive(sessionID))
                #expect(!provider.isActive(token: first.accessToken))
                #expect(!provider.isActive(token: second.accessToken))
                // The relying party heard of it (once: one client, one session) before the page came.
                #expect(received.all.map(\.sessionID) == [sessionID])
                // Other browsers' sessions go on.
                #expect(provider.isSessionActive(otherSessionID))
                #expect(provider.isActive(token: elsewhere.accessToken))

                // The page without a cookie (or after it is gone) ends nothing.
                let again = try await Self.browserGet(provider.url(for: .endSession))
                #expect(again.status == .ok)
                #expect(again.headerFields[.setCookie] == nil)
                #expect(provider.isSessionActive(otherSessionID))
                #expect(received.all.count == 1)
            }
        }
    }
}
