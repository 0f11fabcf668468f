#if Vapor
import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2Testing
import OAuth2TestSupport
import OAuth2Vapor
import OAuth2Web
import Testing
import Vapor

/// VaporSinglePageAppMiddleware on a real Vapor server: the user route, and the proxy to
/// routes of the same server (an echo of what arrived, an API that refuses every token)
/// through AsyncHTTPClientProxyTransport, a body of a megabyte streamed both ways.
@Suite("Vapor single-page app backend", .timeLimit(.minutes(2)))
struct VaporSinglePageAppTests {
    static let fetch = [("X-CSRF", "1"), ("Sec-Fetch-Site", "same-origin")]

    @Test("User route, proxy with the user's token and without the browser's cookies, the API's 401 as token_refused, 403 cross-site")
    func backend() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let reserved = try ReservedPort()
            defer { withExtendedLifetime(reserved) {} }
            let port = reserved.port
            let base = "http://127.0.0.1:\(port)"
            let configuration = WebSignInConfiguration(publicBaseURL: URL(string: base)!, scopes: ["openid", "profile", "offline_access"])
            provider.register(TestProvider.Client(
                id: "vapor-spa", secret: "vapor-spa-secret", redirectURIs: [configuration.redirectURI], postLogoutRedirectURIs: [configuration.url("/")]))
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(clientID: "vapor-spa", clientSecret: "vapor-spa-secret", redirectURI: configuration.redirectURI),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let signIn = WebSignIn(client: client, configuration: configuration)
            let transport = AsyncHTTPClientProxyTransport()
            let backend = SinglePageAppBackend(
                signIn: signIn,
                configuration: .init(apis: [
                    .init(pathPrefix: "/bff/api", destination: URL(string: base + "/downstream")!),
                ]),
                transport: transport)

            let app = try await Application.make(.testing)
            app.middleware.use(VaporSinglePageAppMiddleware(backend))
            app.middleware.use(VaporWebSignInMiddleware(signIn))
            app.get("profile") { _ in "profile" }
            // The downstream API: what arrived, and the body back.
            app.on(.POST, "downstream", "echo", body: .collect(maxSize: "4mb")) { request -> Response in
                var headers = HTTPHeaders()
                headers.add(name: "X-Saw-Authorization", value: request.headers.first(name: .authorization).map { String($0.prefix(6)) } ?? "none")
                headers.add(name: "X-Saw-Cookie", value: request.headers.first(name: .cookie) == nil ? "no" : "yes")
                headers.add(name: "X-Saw-CSRF", value: request.headers.first(name: "X-CSRF") == nil ? "no" : "yes")
                headers.add(name: "Set-Cookie", value: "api=1; Path=/")
                return Response(status: .ok, headers: headers, body: .init(buffer: request.body.data ?? ByteBuffer()))
            }
            app.get("downstream", "refuses") { _ -> Response in
                Response(status: .unauthorized, headers: ["WWW-Authenticate": #"Bearer error="invalid_token""#])
            }
            try await app.server.start(address: .hostname("127.0.0.1", port: port))
            do {
                let browser = VaporAdapterTests.Browser()
                let anonymous = try await browser.send(.GET, base + "/bff/user", headers: Self.fetch)
                #expect(anonymous.status == 401)
                #expect(anonymous.body.contains(#""error":"not_signed_in""#))
                #expect(try await browser.send(.GET, base + "/bff/user").status == 403)

                // Sign in (the provider signs the demo user in), back on the profile page.
                let start = try await browser.send(.GET, base + "/auth/login?returnTo=/profile")
                let authorize = try #require(start.headers.first(name: "Location").flatMap(URL.init(string:)))
                let callback = try await provider.followRedirect(from: authorize)
                #expect(try await browser.send(.GET, callback.absoluteString).status == 303)

                let user = try await browser.send(.GET, base + "/bff/user", headers: Self.fetch)
                #expect(user.status == 200)
                #expect(user.body.contains(#""sub":"\#(TestProvider.Demo.subject)""#))

                // A megabyte up and back down, through the proxy.
                let payload = String(repeating: "0123456789abcdef", count: 65_536)
                var request = HTTPClientRequest(url: base + "/bff/api/echo")
                request.method = .POST
                request.headers.add(name: "Cookie", value: browser.cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))
                for (name, value) in Self.fetch { request.headers.add(name: name, value: value) }
                request.headers.add(name: "Content-Type", value: "text/plain")
                request.body = .bytes(ByteBuffer(string: payload))
                let echoed = try await VaporAdapterTests.Browser.http.execute(request, timeout: .seconds(60))
                #expect(echoed.status == .ok)
                #expect(echoed.headers.first(name: "X-Saw-Authorization") == "Bearer")
                #expect(echoed.headers.first(name: "X-Saw-Cookie") == "no")
                #expect(echoed.headers.first(name: "X-Saw-CSRF") == "no")
                #expect(echoed.headers["Set-Cookie"].isEmpty)
                let body = try await echoed.body.collect(upTo: 4 << 20)
                #expect(String(buffer: body) == payload)

                let refused = try await browser.send(.GET, base + "/bff/api/refuses", headers: Self.fetch)
                #expect(refused.status == 401)
                #expect(refused.body.contains(#""error":"token_refused""#))
                #expect(refused.headers.first(name: "WWW-Authenticate") == nil)

                let crossSite = try await browser.send(.GET, base + "/bff/api/refuses", headers: [("X-CSRF", "1"), ("Origin", "https://evil.example")])
                #expect(crossSite.status == 403)
            } catch {
                await app.server.shutdown()
                try await app.asyncShutdown()
                try await transport.shutdown()
                throw error
            }
            await app.server.shutdown()
            try await app.asyncShutdown()
            try await transport.shutdown()
        }
    }
}
#endif
