// The whole test file that "Testing your code with OAuth2Testing" shows ("A test of your own
// code"): the code under test and its test, run by `swift test --filter ProfileLoaderTests`.
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Testing
import Testing

/// The code under test, from your app's module: the user's name from an API that wants the
/// user's access token (here the provider's UserInfo endpoint).
struct ProfileLoader {
    let session: TokenSession
    let api: URL

    func displayName() async throws -> String? {
        let (response, body) = try await session.perform(HTTPRequest(method: .get, url: api))
        guard response.status == .ok else { return nil }
        let profile = try JSONSerialization.jsonObject(with: body) as? [String: Any]
        return profile?["name"] as? String
    }
}

@Suite("ProfileLoader against the embedded provider")
struct ProfileLoaderTests {
    @Test("reads the name, and renews an expired access token on its own")
    func readsTheNameAndRenews() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            // The app's client, pointed at the provider; any loopback port is accepted.
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(
                    clientID: TestProvider.Demo.publicClientID,
                    redirectURI: URL(string: "http://127.0.0.1:53682/callback")!,
                    scopes: ["openid", "profile", "offline_access"]))
            let request = try await client.startAuthorization()
            let callback = try await provider.followRedirect(from: request.url)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            let loader = ProfileLoader(
                session: try await TokenSession(client: client, tokens: tokens),
                api: try #require(client.metadata.userInfoEndpoint))

            #expect(try await loader.displayName() == "Demo User")

            // Every access token expires at once: the API answers 401, the session renews
            // with the refresh token (one token request) and sends the request again.
            provider.expireAccessTokens()
            provider.resetRequestCounts()
            #expect(try await loader.displayName() == "Demo User")
            #expect(provider.requestCount(.token) == 1)
            #expect(provider.requestCount(.userInfo) == 2)
        }
    }

    @Test("gives up when the provider refuses the refresh token: the user must sign in again")
    func signInRequiredWhenTheGrantEnds() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(
                    clientID: TestProvider.Demo.publicClientID,
                    redirectURI: URL(string: "http://127.0.0.1:53682/callback")!,
                    scopes: ["openid", "profile", "offline_access"]))
            let request = try await client.startAuthorization()
            let tokens = try await client.completeAuthorization(
                callbackURL: try await provider.followRedirect(from: request.url), request: request)
            let loader = ProfileLoader(
                session: try await TokenSession(client: client, tokens: tokens),
                api: try #require(client.metadata.userInfoEndpoint))

            provider.revokeAll()   // the grant ends at the provider: no token works, no refresh
            let error = await #expect(throws: OAuth2Error.self) { try await loader.displayName() }
            #expect(error?.code == .signInRequired)
        }
    }
}
