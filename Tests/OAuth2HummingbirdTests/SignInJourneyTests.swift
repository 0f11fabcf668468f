#if Hummingbird
import Foundation
import HTTPTypes
@testable import HummingbirdWebApp
import OAuth2
import OAuth2JOSE
import OAuth2Testing
import Testing

/// The example app's journeys, through HummingbirdWebSignInMiddleware on a real Hummingbird server, with
/// the embedded test provider: sign in, pages, UserInfo, sign out.
@Suite("Hummingbird: web sign-in journeys", .timeLimit(.minutes(2)))
struct SignInJourneyTests {
    @Test("Sign in through the provider, see the user, call UserInfo, sign out with the CSRF token")
    func signInAndOut() async throws {
        try await WebAppFixture.withApp { provider, app in
            var browser = Browser()

            // Public page, nobody signed in; a protected one sends the browser to sign in.
            let (home, homeBody) = try await browser.get(app.at("/"))
            #expect(home.status == .ok)
            #expect(homeBody.text.contains(#"<p id="status">Not signed in</p>"#))
            let (healthz, healthzBody) = try await browser.get(app.at("/healthz"))
            #expect(healthz.status == .ok)
            #expect(healthzBody.text == "ok")

            let callback = try await browser.signIn(app: app, provider: provider, path: "/profile")
            #expect(callback.status == .seeOther)
            #expect(callback.headerFields[.location] == app.at("/profile").absoluteString)
            #expect(browser.cookies["oauth2-session"] != nil)

            let (profile, profileBody) = try await browser.get(app.at("/profile"))
            #expect(profile.status == .ok)
            #expect(profile.headerFields[.contentType] == "text/html; charset=utf-8")
            let page = profileBody.text
            #expect(page.contains(#"<p id="subject">\#(TestProvider.Demo.subject)</p>"#))
            #expect(page.contains(#"<p id="name">Demo User</p>"#))
            #expect(page.contains(#"<form id="signout" method="post" action="/auth/logout"><input type="hidden" name="csrf" value=""#))
            #expect(page.contains(#"<button type="submit" id="signout-button">Sign out</button></form>"#))
            let csrf = try #require(csrfToken(in: page))

            let (signedInHome, signedInHomeBody) = try await browser.get(app.at("/"))
            #expect(signedInHome.status == .ok)
            #expect(signedInHomeBody.text.contains(#"<p id="status">Signed in as \#(TestProvider.Demo.subject)</p>"#))

            // UserInfo through the user's token session.
            let (userInfo, userInfoBody) = try await browser.get(app.at("/api/userinfo"))
            #expect(userInfo.status == .ok)
            #expect(userInfo.headerFields[.contentType] == "application/json")
            let claims = try JSONDecoder().decode([String: JSONValue].self, from: userInfoBody)
            #expect(claims["sub"] == .string(TestProvider.Demo.subject))
            #expect(claims["email"] == "demo@example.com")

            // Sign out: the session ends here, the browser goes to the provider's end-session endpoint.
            let (signOut, _) = try await browser.send(.post, app.at("/auth/logout"), form: [("csrf", csrf)], headers: [.origin: app.absoluteString])
            #expect(signOut.status == .seeOther)
            let endSession = try #require(signOut.headerFields[.location].flatMap(URL.init(string:)))
            #expect(endSession.absoluteString.hasPrefix(provider.url(for: .endSession).absoluteString))
            #expect(endSession.query?.contains("id_token_hint=") == true)
            #expect(browser.cookies["oauth2-session"] == nil)
            // The provider sends the browser back to the app's post-logout path.
            let back = try await provider.followRedirect(from: endSession)
            #expect(back.absoluteString.hasPrefix(app.at("/").absoluteString))
            // …after telling the app by back-channel logout (its session has already ended there).
            #expect(provider.backChannelLogoutDeliveries.last?.statusCode == 200)

            let (after, afterBody) = try await browser.get(app.at("/"))
            #expect(after.status == .ok)
            #expect(afterBody.text.contains(#"<p id="status">Not signed in</p>"#))
            let (profileAfter, _) = try await browser.get(app.at("/profile"))
            #expect(profileAfter.status == .seeOther)
            #expect(profileAfter.headerFields[.location]?.hasPrefix(provider.issuer.absoluteString) == true)
        }
    }

    @Test("The session cookie: HttpOnly, SameSite=Lax, Path=/, not Secure on http loopback, under 200 bytes")
    func cookieAttributes() async throws {
        try await WebAppFixture.withApp { provider, app in
            var browser = Browser()
            _ = try await browser.signIn(app: app, provider: provider)
            let cookie = try #require(browser.setCookies["oauth2-session"])
            let attributes = cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(attributes.contains("HttpOnly"))
            #expect(attributes.contains("SameSite=Lax"))
            #expect(attributes.contains("Path=/"))
            #expect(!attributes.contains { $0.lowercased() == "secure" })
            #expect(!attributes.contains { $0.lowercased().hasPrefix("domain=") })
            #expect(cookie.utf8.count < 200)
            // The value is opaque: 256 random bits, no token inside.
            #expect(try #require(browser.cookies["oauth2-session"]).utf8.count == 43)
        }
    }

    @Test("A protected API route without a session redirects a GET to sign in and refuses a POST")
    func unauthenticated() async throws {
        try await WebAppFixture.withApp { provider, app in
            var browser = Browser()
            let (get, _) = try await browser.get(app.at("/api/userinfo"))
            #expect(get.status == .seeOther)
            let authorization = try #require(get.headerFields[.location].flatMap(URLComponents.init(string:)))
            #expect(authorization.queryItems?.first { $0.name == "redirect_uri" }?.value == app.at("/auth/callback").absoluteString)
            #expect(authorization.queryItems?.first { $0.name == "code_challenge_method" }?.value == "S256")
            let (post, _) = try await browser.send(.post, app.at("/profile"), form: [("a", "b")])
            // No POST route: Hummingbird's 404 or the requirement's 401, never the page.
            #expect(post.status != .ok)
        }
    }

    @Test("Values printed into the pages are HTML-escaped")
    func escaping() async throws {
        try await WebAppFixture.withApp { provider, app in
            provider.register(
                TestProvider.User(
                    username: TestProvider.Demo.username, password: TestProvider.Demo.password, subject: "sub-<&>\"'",
                    claims: ["name": "<script>alert(\"x\")</script> & 'co'"]))
            var browser = Browser()
            _ = try await browser.signIn(app: app, provider: provider)
            let (_, body) = try await browser.get(app.at("/profile"))
            let page = body.text
            #expect(!page.contains("<script>"))
            #expect(page.contains(#"<p id="name">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;</p>"#))
            #expect(page.contains(#"<p id="subject">sub-&lt;&amp;&gt;&quot;&#39;</p>"#))
            let (_, home) = try await browser.get(app.at("/"))
            #expect(home.text.contains(#"<p id="status">Signed in as sub-&lt;&amp;&gt;&quot;&#39;</p>"#))
        }
    }
}
#endif
