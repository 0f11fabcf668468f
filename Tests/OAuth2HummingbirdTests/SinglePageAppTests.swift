#if Hummingbird
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Testing
import Testing

/// The example's single-page app backend (HummingbirdSinglePageAppMiddleware) on a real
/// server with the embedded provider: the page, the user route, the proxy to the example's
/// bearer API with the user's token, and the refusals.
@Suite("Hummingbird single-page app backend", .timeLimit(.minutes(2)))
struct SinglePageAppTests {
    static let fetchHeaders: HTTPFields = [HTTPField.Name("X-CSRF")!: "1", HTTPField.Name("Sec-Fetch-Site")!: "same-origin"]

    @Test("The page and its script come with a content security policy; no token in them")
    func page() async throws {
        try await WebAppFixture.withApp { _, app in
            var browser = Browser()
            for path in ["/spa/", "/spa/app.js"] {
                let (answer, body) = try await browser.get(app.at(path))
                #expect(answer.status == .ok, "\(path)")
                #expect(answer.headerFields[HTTPField.Name("Content-Security-Policy")!]?.contains("default-src 'self'") == true)
                #expect(answer.headerFields[.cacheControl] == "no-store")
                #expect(!body.isEmpty)
            }
        }
    }

    @Test("The user route and the proxy: 401 JSON signed out, the user and the API's answer signed in, no token to the page, 403 cross-site")
    func journey() async throws {
        try await WebAppFixture.withApp { provider, app in
            var browser = Browser()
            let (anonymous, anonymousBody) = try await browser.get(app.at("/bff/user"), headers: Self.fetchHeaders)
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.headerFields[.location] == nil)
            #expect(anonymousBody.text.contains(#""error":"not_signed_in""#))
            let (anonymousAPI, _) = try await browser.get(app.at("/bff/api/whoami"), headers: Self.fetchHeaders)
            #expect(anonymousAPI.status == .unauthorized)

            // The page is public: its "Sign in" link starts the sign-in, to come back to it.
            let back = try await browser.signIn(app: app, provider: provider, path: "/auth/login?returnTo=%2Fspa%2F")
            #expect(back.status == .seeOther)
            #expect(back.headerFields[.location] == app.at("/spa/").absoluteString)

            let (user, userBody) = try await browser.get(app.at("/bff/user"), headers: Self.fetchHeaders)
            #expect(user.status == .ok)
            let claims = try JSONSerialization.jsonObject(with: userBody) as? [String: Any]
            #expect(claims?["sub"] as? String == TestProvider.Demo.subject)
            #expect((claims?["csrf"] as? String)?.isEmpty == false)

            // The example's bearer API, through the proxy, with the user's token.
            let (api, apiBody) = try await browser.get(app.at("/bff/api/whoami"), headers: Self.fetchHeaders)
            #expect(api.status == .ok)
            let whoami = try JSONSerialization.jsonObject(with: apiBody) as? [String: Any]
            #expect(whoami?["sub"] as? String == TestProvider.Demo.subject)
            #expect(api.headerFields[.setCookie] == nil)
            for body in [userBody, apiBody] {
                #expect(!body.text.contains("eyJ"), "no JWT in what the page receives")
            }

            // Another site's fetch: refused before anything is looked up.
            var crossSite = Self.fetchHeaders
            crossSite[HTTPField.Name("Sec-Fetch-Site")!] = "cross-site"
            crossSite[.origin] = "https://evil.example"
            #expect(try await browser.get(app.at("/bff/api/whoami"), headers: crossSite).0.status == .forbidden)
            #expect(try await browser.get(app.at("/bff/api/whoami")).0.status == .forbidden)
            #expect(try await browser.get(app.at("/bff/user")).0.status == .forbidden)
            // A path that climbs out of the API: 400.
            #expect(try await browser.get(app.at("/bff/api/%2e%2e/whoami"), headers: Self.fetchHeaders).0.status == .badRequest)

            // Sign out with the session's CSRF token, as the page's form does.
            let csrf = try #require(claims?["csrf"] as? String)
            let (out, _) = try await browser.send(.post, app.at("/auth/logout"), form: [("csrf", csrf)], headers: [.origin: app.absoluteString])
            #expect(out.status == .seeOther)
            let (after, afterBody) = try await browser.get(app.at("/bff/user"), headers: Self.fetchHeaders)
            #expect(after.status == .unauthorized)
            #expect(afterBody.text.contains(#""error":"not_signed_in""#))
        }
    }
}
#endif
