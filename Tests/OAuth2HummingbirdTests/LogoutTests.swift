#if Hummingbird
import Foundation
import HTTPTypes
@testable import HummingbirdWebApp
import OAuth2
import OAuth2Testing
import Testing

/// Ending sessions through HummingbirdWebSignInMiddleware: forged sign-outs refused, the provider's
/// back-channel logout, bodies over the limit.
@Suite("Hummingbird: sign-out and logout", .timeLimit(.minutes(2)))
struct LogoutTests {
    @Test("A sign-out without the CSRF token, with another session's, or from another origin is refused")
    func forgedSignOut() async throws {
        try await WebAppFixture.withApp { provider, app in
            var browser = Browser()
            _ = try await browser.signIn(app: app, provider: provider)
            let (_, profile) = try await browser.get(app.at("/profile"))
            let csrf = try #require(csrfToken(in: profile.text))

            let (missing, _) = try await browser.send(.post, app.at("/auth/logout"), form: [("other", "x")])
            #expect(missing.status == .forbidden)
            let (wrong, _) = try await browser.send(.post, app.at("/auth/logout"), form: [("csrf", String(csrf.reversed()))])
            #expect(wrong.status == .forbidden)
            let (foreign, _) = try await browser.send(
                .post, app.at("/auth/logout"), form: [("csrf", csrf)], headers: [.origin: "http://evil.example"])
            #expect(foreign.status == .forbidden)
            let (get, _) = try await browser.get(app.at("/auth/logout"))
            #expect(get.status == .methodNotAllowed)

            // Still signed in.
            let (still, stillBody) = try await browser.get(app.at("/profile"))
            #expect(still.status == .ok)
            #expect(stillBody.text.contains(TestProvider.Demo.subject))
        }
    }

    @Test("A logout token from the provider ends the user's session")
    func backChannelLogout() async throws {
        try await WebAppFixture.withApp { provider, app in
            var browser = Browser()
            _ = try await browser.signIn(app: app, provider: provider)
            let (before, _) = try await browser.get(app.at("/profile"))
            #expect(before.status == .ok)

            // The timeout is a watchdog (a busy machine), not a rule under test.
            let delivery = try await provider.sendBackChannelLogout(
                clientID: ExampleServer.embeddedClientID, subject: TestProvider.Demo.subject, timeout: .seconds(120))
            #expect(delivery.statusCode == 200)
            #expect(delivery.uri == app.at("/auth/backchannel-logout"))

            let (after, _) = try await browser.get(app.at("/profile"))
            #expect(after.status == .seeOther)
            let (home, homeBody) = try await browser.get(app.at("/"))
            #expect(home.status == .ok)
            #expect(homeBody.text.contains(#"<p id="status">Not signed in</p>"#))

            // The same token again is a replay: refused.
            let (replay, _) = try await browser.send(.post, app.at("/auth/backchannel-logout"), form: [("logout_token", delivery.logoutToken)])
            #expect(replay.status == .badRequest)
        }
    }

    @Test("A front-channel logout without iss and sid is refused, whatever cookie it carries: any site could send it")
    func frontChannelLogout() async throws {
        try await WebAppFixture.withApp { provider, app in
            var browser = Browser()
            _ = try await browser.signIn(app: app, provider: provider)
            let cookie = browser.cookies["oauth2-session"]
            let (logout, body) = try await browser.get(app.at("/auth/frontchannel-logout"))
            #expect(logout.status == .forbidden)
            #expect(logout.headerFields[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            #expect(body.text.contains("must carry iss and sid"))
            #expect(browser.cookies["oauth2-session"] == cookie)
            let (home, homeBody) = try await browser.get(app.at("/"))
            #expect(home.status == .ok)
            #expect(!homeBody.text.contains(#"<p id="status">Not signed in</p>"#), "still signed in")
            // Another provider's iss, or an iss without sid: refused.
            let (foreign, _) = try await browser.get(URL(string: app.at("/auth/frontchannel-logout").absoluteString + "?iss=http%3A%2F%2Fevil.example&sid=1")!)
            #expect(foreign.status == .forbidden)
            let (half, _) = try await browser.get(URL(string: app.at("/auth/frontchannel-logout").absoluteString + "?sid=1")!)
            #expect(half.status == .forbidden)
        }
    }

    @Test("A sign-out body over 32 KB is refused with 413; other routes' bodies are not read")
    func bodyLimit() async throws {
        try await WebAppFixture.withApp { provider, app in
            var browser = Browser()
            _ = try await browser.signIn(app: app, provider: provider)
            let big = Data(repeating: UInt8(ascii: "a"), count: 40 * 1024)
            let (tooLarge, _) = try await browser.send(.post, app.at("/auth/logout"), body: big, headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(tooLarge.status == .contentTooLarge)
            let (logoutToken, _) = try await browser.send(
                .post, app.at("/auth/backchannel-logout"), body: big, headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(logoutToken.status == .contentTooLarge)
            let (still, _) = try await browser.get(app.at("/profile"))
            #expect(still.status == .ok)
        }
    }
}
#endif
