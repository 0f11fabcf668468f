import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

extension Integration {
    /// The example's single-page app (`/spa/`: static HTML and `fetch`, served by
    /// `oauth2-web-example-hummingbird`) as a person uses it, in headless Chromium, against
    /// Glewlwyd: sign-in on Glewlwyd's login page, the user shown, the example's bearer API
    /// called through the backend's proxy, sign-out; the page's JavaScript never sees a token
    /// (its `document.cookie` and every response body it received, read through the driver);
    /// another site's `fetch` is refused; 50 concurrent proxied calls on a due token make one
    /// renewal at Glewlwyd.
    @Suite struct SinglePageAppJourneys {
        /// Waits (a hang bound only) until `condition` (a JavaScript expression) holds, then
        /// evaluates to `value`.
        static func when(_ condition: String, _ value: String) -> String {
            """
            for (let i = 0; i < 600; i++) {
              if (\(condition)) return \(value);
              await new Promise((resolve) => setTimeout(resolve, 100));
            }
            throw new Error("never: \(condition.replacingOccurrences(of: "\"", with: "'"))");
            """
        }

        static let status = #"document.getElementById("status").textContent"#

        @Test("Glewlwyd: the single-page app signs in, shows the user, calls the API through the backend and signs out; no token reaches the page; a cross-site fetch is refused; 50 calls on a due token, one renewal")
        func glewlwydSinglePageApp() async throws {
            let app = WebApp.glewlwydSinglePageApp()
            try await app.run(name: "journey") { chromium, app, process in
                let crossSite = app.url("/spa/").absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost")
                let walk = try #require(await chromium.walk([
                    .open(app.url("/spa/")),
                    .eval(Self.when(#"\#(Self.status) === "Not signed in""#, Self.status)),
                    // Chromium drops a page's bodies when it navigates: kept before each navigation.
                    .bodies("before-sign-in"),
                    .click("#signin"),
                    .eval(Self.when(#"\#(Self.status).startsWith("Signed in as ")"#, Self.status)),
                    .eval(#"document.getElementById("call").click();"# + Self.when(#"document.getElementById("result").textContent !== """#, #"document.getElementById("result").textContent"#)),
                    .eval("return document.cookie;"),
                    .bodies("signed-in"),
                    // Another site's page (localhost is not 127.0.0.1's site) calls the API.
                    .visit(URL(string: crossSite)!),
                    .eval("""
                        const api = "\(app.url("/bff/api/whoami").absoluteString)";
                        const out = {};
                        try { out.withHeader = (await fetch(api, { headers: { "X-CSRF": "1" }, credentials: "include" })).status; }
                        catch (e) { out.withHeader = "refused"; }
                        try { out.simple = (await fetch(api, { credentials: "include" })).status; }
                        catch (e) { out.simple = "refused"; }
                        return out;
                        """),
                ], name: "sign-in", user: app.user))
                #expect(walk.at.first == app.url("/spa/"))
                #expect(walk.evals.count == 5, "\(walk.evals)")
                #expect(walk.evalResult(0) as? String == "Not signed in")
                let signedIn = try #require(walk.evalResult(1) as? String, "\(walk.evals)")
                let subject = String(signedIn.dropFirst("Signed in as ".count))
                #expect(!subject.isEmpty)
                // The API's answer, through the proxy: the token it verified was the user's.
                let whoami = try #require(walk.evalResult(2) as? String, "\(walk.evals)")
                let claims = try JSONSerialization.jsonObject(with: Data(whoami.utf8)) as? [String: Any]
                #expect(claims?["sub"] as? String == subject, "the API saw the user's token: \(whoami)")
                // The page sees no cookie of the app (HttpOnly) and no token; Glewlwyd's own
                // cookies (its host is the app's, another port) are Glewlwyd's business.
                let cookies = try #require(walk.evalResult(3) as? String, "\(walk.evals)")
                #expect(!cookies.contains(WebApp.sessionCookie) && !cookies.contains("eyJ"), "document.cookie: \(cookies)")
                let refused = walk.evalResult(4) as? [String: Any]
                #expect(refused?["withHeader"] as? String == "refused", "a cross-site fetch with the header fails its preflight: \(walk.evals)")
                #expect(refused?["simple"] as? String == "refused", "without CORS, the page cannot read the answer: \(walk.evals)")

                // Every response the page received from the app: no token in any of them. (Each
                // file also lists the earlier pages' responses, whose bodies Chromium dropped.)
                let before = try chromium.responses("before-sign-in"), after = try chromium.responses("signed-in")
                func kept(_ responses: [(url: String, status: Int?, type: String?, body: String?)], _ path: String, _ status: Int) -> String? {
                    responses.last { $0.url.hasSuffix(path) && $0.status == status }?.body
                }
                #expect(kept(before, "/bff/user", 401)?.contains("not_signed_in") == true, "\(before.map(\.url))")
                #expect(kept(after, "/bff/user", 200)?.contains(subject) == true, "\(after.map(\.url))")
                #expect(kept(after, "/bff/api/whoami", 200)?.contains(subject) == true, "\(after.map(\.url))")
                #expect(kept(after, "/spa/app.js", 200)?.isEmpty == false)
                for response in before + after {
                    guard let body = response.body else { continue }
                    #expect(!body.contains("eyJ"), "no JWT in \(response.url)")
                    #expect(!body.contains("access_token") && !body.contains("refresh_token") && !body.contains("id_token\""), "\(response.url)")
                }

                // 50 concurrent calls once the access token is due (20 s tokens, renewed at half
                // their life): one renewal, counted in the app's log of its requests to Glewlwyd.
                let session = try #require(try chromium.cookie(WebApp.sessionCookie), "the app set its session cookie")
                let tokenEndpoint = app.issuer.absoluteString + "/token"
                func renewals() -> Int {
                    process.errorOutput.components(separatedBy: "\n").filter { $0.contains("POST \(tokenEndpoint) → 200") }.count
                }
                try await Task.sleep(for: .seconds(11))
                let renewalsBefore = renewals()
                let transport = URLSessionTransport()
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<50 {
                        group.addTask {
                            var request = HTTPRequest(method: .get, url: app.url("/bff/api/whoami"))
                            request.headerFields[.cookie] = "\(WebApp.sessionCookie)=\(session)"
                            request.headerFields[HTTPField.Name("X-CSRF")!] = "1"
                            return try await transport.send(request, body: nil).0.status.code
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
                #expect(renewals() == renewalsBefore + 1, "one renewal at Glewlwyd for 50 concurrent calls")

                // Sign out with the page's form (the session's CSRF token): Glewlwyd's end-session
                // page, back to the app, and the page sees nobody signed in.
                let out = try #require(await chromium.walk([
                    .open(app.url("/spa/")),
                    .eval(Self.when(#"!document.getElementById("signout").hidden"#, "true")),
                    .click("#signout-button"),
                    .open(app.url("/spa/")),
                    .eval(Self.when(#"\#(Self.status) === "Not signed in""#, Self.status)),
                ], name: "sign-out", user: app.user))
                #expect(out.at.count == 3, "\(out.at)")
                #expect(out.evalResult(1) as? String == "Not signed in", "\(out.evals)")
                var request = HTTPRequest(method: .get, url: app.url("/bff/user"))
                request.headerFields[.cookie] = "\(WebApp.sessionCookie)=\(session)"
                request.headerFields[HTTPField.Name("X-CSRF")!] = "1"
                #expect(try await transport.send(request, body: nil).0.status == .unauthorized, "the old session cookie after sign-out")
            }
        }
    }
}
