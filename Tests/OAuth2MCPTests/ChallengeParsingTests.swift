#if MCP
import Foundation
import OAuth2
import Testing
@testable import OAuth2MCP

/// How the authorizer reads the challenges the SDK hands it: one dictionary of headers, in
/// which several `WWW-Authenticate` headers arrive joined by commas.
@Suite struct ChallengeParsingTests {
    @Test func joinedChallengesAreSplitAtTheirSchemes() {
        let headers = ["Www-Authenticate": #"Bearer realm="mcp, example", error="invalid_token", DPoP algs="ES256 RS256", error="use_dpop_nonce""#]
        let challenges = TokenSessionAuthorizer.challenges(in: headers)
        #expect(challenges.map(\.scheme) == ["Bearer", "DPoP"])
        #expect(challenges.first?.parameters["realm"] == "mcp, example")
        #expect(challenges.first?.parameters["error"] == "invalid_token")
        #expect(challenges.last?.parameters["algs"] == "ES256 RS256")
        #expect(challenges.last?.parameters["error"] == "use_dpop_nonce")
    }

    @Test func aLoneSchemeIsAChallenge() {
        let challenges = TokenSessionAuthorizer.challenges(in: ["WWW-Authenticate": "Basic, Bearer"])
        #expect(challenges.map(\.scheme) == ["Basic", "Bearer"])
        #expect(TokenSessionAuthorizer.refusesToken(challenges))
    }

    @Test func refusalIsInvalidTokenOrNoError() {
        func refuses(_ value: String) -> Bool {
            TokenSessionAuthorizer.refusesToken(TokenSessionAuthorizer.challenges(in: ["WWW-Authenticate": value]))
        }
        #expect(refuses(#"Bearer error="invalid_token""#))
        #expect(refuses(#"Bearer resource_metadata="https://x.example/.well-known/oauth-protected-resource""#))
        #expect(!refuses(#"Bearer error="invalid_request""#))
        #expect(!refuses(#"DPoP error="use_dpop_nonce""#))
        #expect(TokenSessionAuthorizer.refusesToken([]))
    }

    @Test func insufficientScopeNamesItsScopes() {
        let challenges = TokenSessionAuthorizer.challenges(in: ["WWW-Authenticate": #"Bearer error="insufficient_scope", scope="mcp:read mcp:write""#])
        #expect(TokenSessionAuthorizer.insufficientScope(challenges) == ["mcp:read", "mcp:write"])
        #expect(TokenSessionAuthorizer.insufficientScope(TokenSessionAuthorizer.challenges(in: ["WWW-Authenticate": #"Bearer error="insufficient_scope""#])) == nil)
        #expect(TokenSessionAuthorizer.insufficientScope(TokenSessionAuthorizer.challenges(in: ["WWW-Authenticate": #"Basic error="insufficient_scope", scope="x""#])) == nil)
    }

    @Test func aNonceIsTakenOnlyFromAUseDPoPNonceChallengeAndOnlyWhenValid() {
        let challenge = ["WWW-Authenticate": #"DPoP error="use_dpop_nonce""#]
        func nonce(_ headers: [String: String]) -> String? {
            TokenSessionAuthorizer.nonceAsked(challenges: TokenSessionAuthorizer.challenges(in: headers), headers: headers)
        }
        #expect(nonce(challenge.merging(["dpop-nonce": "n-1"]) { $1 }) == "n-1")
        #expect(nonce(challenge) == nil)
        #expect(nonce(challenge.merging(["DPoP-Nonce": "bad\"nonce"]) { $1 }) == nil)
        #expect(nonce(challenge.merging(["DPoP-Nonce": String(repeating: "n", count: 1025)]) { $1 }) == nil)
        #expect(nonce(["WWW-Authenticate": #"Bearer error="invalid_token""#, "DPoP-Nonce": "n-1"]) == nil)
    }
}
#endif
