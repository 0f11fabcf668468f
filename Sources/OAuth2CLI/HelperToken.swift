import Foundation
import OAuth2

/// What a credential helper (`git-credential`, `kubectl-credential`) hands to another
/// program: an access token that is fresh — renewed first when it is due, by the rule of
/// `oauth2 token` — and when it stops working.
struct HelperToken: Sendable {
    /// The access token.
    var accessToken: String
    /// When it expires, in this machine's clock; `nil` when the server did not say.
    var expiresAt: Date?
}

extension Context {
    /// The profile's access token, renewed first when due (as `oauth2 token` does), with
    /// its expiry; from the agent when `OAUTH2_AGENT_SOCK` names one.
    ///
    /// - Throws: what ``session()`` and ``TokenSession/freshTokens()`` throw (sign in
    ///   again, transient failures); a usage error for DPoP-bound tokens, which another
    ///   program cannot present as a bearer token or a password.
    func helperToken() async throws -> HelperToken {
        if let socket = AgentClient.configuredSocket {
            // OAUTH2_AGENT_SOCK: the agent answers (it serves no DPoP-bound profile); no store is opened.
            let token = try AgentClient.accessToken(profile: profileName, socket: socket)
            return HelperToken(accessToken: token.accessToken, expiresAt: token.expiresAt)
        }
        let (_, session) = try await session()
        let tokens = try await session.freshTokens()
        guard tokens.tokenType != .dpop else {
            throw CLIError.usage(
                "Profile \"\(profileName)\" holds DPoP-bound tokens, which only work with a proof of this machine's key",
                hint: "sign in without --dpop for git and kubectl")
        }
        return HelperToken(accessToken: tokens.accessToken, expiresAt: tokens.expiresAt)
    }
}
