import Foundation
import HTTPTypes
import OAuth2
import OAuth2Testing
import Testing

/// The provider's resource indicators (RFC 8707): a token asked for a resource has that
/// resource as its audience (the introspection answer's `aud`), so that a resource server
/// under test can refuse a token meant for another.
@Suite("Resource indicators")
struct ResourceIndicatorTests {
    static let mcp = URL(string: "https://mcp.example.com/mcp")!

    @Test("resource on the authorization and token requests: the token's audience is the resource, through refreshes too")
    func audienceIsTheResource() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            // As DiscoveredResource.boundToResource(_:) configures a client: `resource` on every
            // authorization and token request.
            let bound = [RequestKind.authorization, .token].reduce(into: [RequestKind: [String: String]]()) { $0[$1] = ["resource": Self.mcp.absoluteString] }
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(
                    clientID: TestProvider.Demo.publicClientID, redirectURI: Fixture.redirectURI, scopes: ["openid", "offline_access"],
                    additionalParameters: bound),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let tokens = try await Fixture.signIn(client, provider)
            let resourceServer = try await Fixture.confidentialClient(provider)
            #expect(try await resourceServer.introspect(tokens.accessToken).audience == [Self.mcp.absoluteString])
            let refreshed = try await client.requestToken(.refreshToken(try #require(tokens.refreshToken)))
            #expect(try await resourceServer.introspect(refreshed.accessToken).audience == [Self.mcp.absoluteString], "the grant's resource")
        }
    }

    @Test("a token request may narrow the resources but not name one the grant did not (refused before the refresh token is spent)")
    func tokenRequestResources() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let other = URL(string: "https://api.example.com/")!
            let client = try await Fixture.publicClient(provider)
            let tokens = try await Fixture.signIn(client, provider, options: AuthorizationOptions(resources: [Self.mcp, other]))
            let resourceServer = try await Fixture.confidentialClient(provider)
            #expect(try await resourceServer.introspect(tokens.accessToken).audience == [Self.mcp.absoluteString, other.absoluteString])
            let refreshToken = try #require(tokens.refreshToken)
            let error = await Fixture.oauthError {
                _ = try await client.requestToken(
                    Grant(type: "refresh_token", parameters: [("refresh_token", refreshToken), ("resource", "https://evil.example.com/")]))
            }
            #expect(error?.code == .invalidTarget)
            let narrowed = try await client.requestToken(
                Grant(type: "refresh_token", parameters: [("refresh_token", refreshToken), ("resource", other.absoluteString)]))
            #expect(try await resourceServer.introspect(narrowed.accessToken).audience == [other.absoluteString])
        }
    }

    @Test("a resource that is not an absolute URI, or has a fragment, is invalid_target")
    func invalidResource() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let request = try client.authorizationRequest(AuthorizationOptions(resources: [URL(string: "https://mcp.example.com/mcp#x")!]))
            let callback = try await provider.followRedirect(from: request.url)
            #expect(Fixture.query(callback)["error"] == "invalid_target")
            let service = try await Fixture.confidentialClient(provider)
            let error = await Fixture.oauthError {
                _ = try await service.requestToken(Grant(type: "client_credentials", parameters: [("resource", "not a uri")]))
            }
            #expect(error?.code == .invalidTarget)
        }
    }

    @Test("without a resource, the audience stays the client's")
    func noResource() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let tokens = try await Fixture.signIn(try await Fixture.publicClient(provider), provider)
            let resourceServer = try await Fixture.confidentialClient(provider)
            #expect(try await resourceServer.introspect(tokens.accessToken).audience == [TestProvider.Demo.publicClientID])
        }
    }
}
