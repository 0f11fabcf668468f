#if Hummingbird
import Foundation
import HTTPTypes
@testable import HummingbirdWebApp
import OAuth2
import OAuth2JOSE
import OAuth2Testing
import Testing

/// The example app's bearer-protected API: HummingbirdResourceServerMiddleware over OAuth2Web's
/// ResourceServer, checking the provider's tokens at its introspection endpoint.
@Suite("Hummingbird: bearer-protected routes", .timeLimit(.minutes(2)))
struct ResourceServerMiddlewareTests {
    /// An access token of the demo user, from the demo confidential client (password grant).
    static func accessToken(_ provider: TestProvider) async throws -> String {
        let client = try await OAuth2Client(
            server: .issuer(provider.issuer),
            configuration: ClientConfiguration(
                clientID: TestProvider.Demo.confidentialClientID, clientSecret: TestProvider.Demo.confidentialClientSecret,
                scopes: ["openid", "profile", "api"]),
            environment: HTTPEnvironment(transport: WebAppFixture.transport, metadataCache: MetadataCache()))
        return try await client.password(username: TestProvider.Demo.username, password: TestProvider.Demo.password).accessToken
    }

    @Test("The provider's access token is accepted, and the route sees it")
    func accepted() async throws {
        try await WebAppFixture.withApp { provider, app in
            let token = try await Self.accessToken(provider)
            var browser = Browser()
            let (response, body) = try await browser.get(app.at("/api/bearer/whoami"), headers: [.authorization: "Bearer \(token)"])
            #expect(response.status == .ok)
            let claims = try JSONDecoder().decode([String: JSONValue].self, from: body)
            #expect(claims["sub"] == .string(TestProvider.Demo.subject))
            #expect(claims["client_id"] == .string(TestProvider.Demo.confidentialClientID))
            #expect(claims["scope"]?.stringValue?.split(separator: " ").contains("api") == true)
            #expect(!body.text.contains(token))
        }
    }

    @Test("A token the provider issued to another client is refused: the API states whose tokens it accepts")
    func anotherClientsTokenIsRefused() async throws {
        try await WebAppFixture.withApp { provider, app in
            // Another app at the same provider: its tokens are active, and not for this API.
            provider.register(
                TestProvider.Client(
                    id: "another-app", secret: "another-app-secret", grantTypes: [.clientCredentials, .password],
                    allowedScopes: TestProvider.Demo.scopes))
            let other = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(clientID: "another-app", clientSecret: "another-app-secret", scopes: ["api"]),
                environment: HTTPEnvironment(transport: WebAppFixture.transport, metadataCache: MetadataCache()))
            // The client's own token (introspected without `aud`, client_id another-app) and a
            // user's token of that client (its `aud` names another-app).
            let own = try await other.clientCredentials().accessToken
            let users = try await other.password(username: TestProvider.Demo.username, password: TestProvider.Demo.password).accessToken
            var browser = Browser()
            for token in [own, users] {
                let (response, body) = try await browser.get(app.at("/api/bearer/whoami"), headers: [.authorization: "Bearer \(token)"])
                #expect(response.status == .unauthorized, "\(body.text)")
                #expect(response.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
            }
        }
    }

    @Test("A bad token is refused with the RFC 6750 challenge; no token gets a bare challenge")
    func refused() async throws {
        try await WebAppFixture.withApp { provider, app in
            var browser = Browser()
            let (bad, badBody) = try await browser.get(app.at("/api/bearer/whoami"), headers: [.authorization: "Bearer not-a-token"])
            #expect(bad.status == .unauthorized)
            let challenge = try #require(bad.headerFields[.wwwAuthenticate])
            #expect(challenge.hasPrefix("Bearer "))
            #expect(challenge.contains(#"error="invalid_token""#))
            #expect(!badBody.text.contains("not-a-token"))

            let (none, _) = try await browser.get(app.at("/api/bearer/whoami"))
            #expect(none.status == .unauthorized)
            let bare = try #require(none.headerFields[.wwwAuthenticate])
            #expect(bare.hasPrefix("Bearer"))
            #expect(!bare.contains("error="))

            // A token in the query is refused (RFC 6750 §2.3 is not accepted).
            let token = try await Self.accessToken(provider)
            let (query, _) = try await browser.get(URL(string: app.at("/api/bearer/whoami").absoluteString + "?access_token=\(token)")!)
            #expect(query.status == .badRequest)
            #expect(query.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_request""#) == true)

            // A session cookie is no bearer token.
            _ = try await browser.signIn(app: app, provider: provider)
            let (cookieOnly, _) = try await browser.get(app.at("/api/bearer/whoami"))
            #expect(cookieOnly.status == .unauthorized)
        }
    }
}
#endif
