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
    /// its expiry.
    ///
    /// - Throws: what ``session()`` and ``TokenSession/freshTokens()`` throw (sign in
    ///   again, transient failures); a usage error for DPoP-bound tokens, which another
    ///   program cannot present as a bearer token or a password.
    func helperToken() async throws -> HelperToken {
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
