import Foundation
import OAuth2
import Testing

@testable import OAuth2CLI

/// What `login --provider` takes from the library's preset, and the warning after a sign-in
/// that brought no refresh token.
@Suite struct LoginProviderTests {
    @Test func aProviderWithoutScopeAsksForThePresetsScopes() throws {
        #expect(try LoginCommand.scopes(nil, provider: "google") == ["openid", "email", "profile"])
        #expect(try LoginCommand.scopes(nil, provider: "GitHub") == ["read:user"])
        #expect(try LoginCommand.scopes(nil, provider: "reddit") == ["identity"])
    }

    @Test func scopeWinsAndNoProviderMeansOpenIDProfile() throws {
        #expect(try LoginCommand.scopes("repo", provider: "github") == ["repo"])
        #expect(try LoginCommand.scopes(nil, provider: nil) == ["openid", "profile"])
        #expect(throws: CLIError.self) { try LoginCommand.scopes(nil, provider: "nowhere") }
    }

    @Test func theGooglePresetAsksForOfflineAccess() throws {
        let configuration = ProviderPreset.google.applied(to: ClientConfiguration(clientID: "id", scopes: ["openid"]))
        #expect(configuration.additionalParameters[.authorization]?["access_type"] == "offline")
    }

    private func tokens(refresh: String?, expiresIn: TimeInterval?) -> TokenSet {
        TokenSet(accessToken: "at", tokenType: .bearer, refreshToken: refresh, expiresAt: expiresIn.map { Date(timeIntervalSince1970: 1_000_000 + $0) })
    }

    @Test func noWarningWithARefreshTokenOrATokenThatNeverExpires() {
        #expect(LoginCommand.missingRefreshTokenWarning(tokens(refresh: "rt", expiresIn: 3600), provider: nil, scopes: ["openid"]) == nil)
        // GitHub OAuth apps: a token without expiry needs no refresh token.
        #expect(LoginCommand.missingRefreshTokenWarning(tokens(refresh: nil, expiresIn: nil), provider: "github", scopes: ["repo"]) == nil)
    }

    @Test func theWarningSaysWhatBringsARefreshToken() throws {
        let expiring = tokens(refresh: nil, expiresIn: 3600)
        let google = try #require(LoginCommand.missingRefreshTokenWarning(expiring, provider: "google", scopes: ["openid"]))
        #expect(google.contains("exit 5") && google.contains("--prompt consent"))
        let plain = try #require(LoginCommand.missingRefreshTokenWarning(expiring, provider: nil, scopes: ["openid", "profile"]))
        #expect(plain.contains("offline_access"))
        let asked = try #require(LoginCommand.missingRefreshTokenWarning(expiring, provider: nil, scopes: ["openid", "offline_access"]))
        #expect(!asked.contains("offline_access") && !asked.contains("--prompt"))
    }
}
