import Foundation

extension TokenSession {
    /// `true` while `tokens` need no renewal at `now` under `options`: the rule by which
    /// ``freshTokens()`` answers from the tokens in hand (`expires_in`, else a JWT access
    /// token's `exp` corrected for the server's clock skew, less the leeway — half the
    /// lifetime for a token that lives less than twice the leeway).
    ///
    /// For a caller that holds stored tokens but no session: the `oauth2` tool answers a
    /// cached `oauth2 token` from its store with it, before it makes a client or starts a
    /// thread, and makes a session only when this says no.
    package static func isFresh(_ tokens: TokenSet, options: Options = Options(), at now: Date) -> Bool {
        TokenExpiry(tokens, leeway: options.leeway).isFresh(at: now)
    }

    /// When the access token of `tokens` stops working, in this machine's clock, as a
    /// session reads it (`expires_in`, else a JWT access token's `exp` corrected for the
    /// server's clock skew); `nil` when unknown.
    package static func expiresAt(of tokens: TokenSet) -> Date? {
        TokenExpiry(tokens, leeway: 0).expiresAt
    }
}
