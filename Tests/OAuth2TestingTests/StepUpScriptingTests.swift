import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// Scripted step-up: sign-ins that grant less than asked, for testing clients' step-up loops.
@Suite("Scripted step-up")
struct StepUpScriptingTests {
    @Test("a withheld scope is left out of the next sign-ins' grants (the token response says so), then granted again")
    func withhold() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider, scopes: ["openid", "profile", "email", "offline_access"])
            provider.withholdScopes(["email"], times: 2)
            #expect(provider.pendingScopeWithholdings == 2)
            for _ in 0..<2 {
                let tokens = try await Fixture.signIn(client, provider)
                #expect(Set(tokens.scopes ?? []) == ["openid", "profile", "offline_access"])
                let resourceServer = try await Fixture.confidentialClient(provider)
                #expect(try await resourceServer.introspect(tokens.accessToken).scopes?.contains("email") == false)
            }
            #expect(provider.pendingScopeWithholdings == 0)
            let tokens = try await Fixture.signIn(client, provider)
            #expect(Set(tokens.scopes ?? []) == ["openid", "profile", "email", "offline_access"])
        }
    }

    @Test("a refresh cannot win back a withheld scope")
    func refreshCannotWiden() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            provider.withholdScopes(["email"])
            let tokens = try await Fixture.signIn(client, provider)
            let error = await Fixture.oauthError {
                _ = try await client.requestToken(
                    Grant(type: "refresh_token", parameters: [("refresh_token", try #require(tokens.refreshToken)), ("scope", "openid email")]))
            }
            #expect(error?.code == .invalidScope)
        }
    }

    @Test("nothing to withhold, or zero times, scripts nothing")
    func noOp() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            provider.withholdScopes([], times: 3)
            provider.withholdScopes(["email"], times: 0)
            #expect(provider.pendingScopeWithholdings == 0)
        }
    }
}
