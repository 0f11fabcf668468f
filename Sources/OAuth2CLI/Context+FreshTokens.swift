import Foundation
import OAuth2

extension Context {
    /// The profile's tokens with an access token that needs no renewal, renewed first when
    /// it does (``TokenSession/freshTokens()``'s rule); with `forceRefresh`, renewed now.
    /// What `token`, `exec` and every command that hands a token to another program call.
    ///
    /// Tokens the file store holds fresh are answered from it directly
    /// (``storedFreshTokens()``): no client, no session, no request.
    ///
    /// - Throws: ``CLIError`` (exit 5) when the profile has no stored sign-in; what
    ///   ``TokenSession/freshTokens()`` and ``TokenSession/refresh()`` throw.
    func freshTokens(forceRefresh: Bool = false) async throws -> TokenSet {
        if !forceRefresh, let tokens = storedFreshTokens() { return tokens }
        let (_, session) = try await session()
        return forceRefresh ? try await session.refresh() : try await session.freshTokens()
    }

    /// The profile's access token, as ``freshTokens(forceRefresh:)`` gets it.
    func freshAccessToken(forceRefresh: Bool = false) async throws -> String {
        try await freshTokens(forceRefresh: forceRefresh).accessToken
    }

    /// The profile's tokens when the file store holds them and they need no renewal now
    /// (``TokenSession/isFresh(_:options:at:)``: the session's own rule), read on the
    /// calling thread; `nil` whenever anything else is the case — another store, no
    /// profile, a token due for renewal, a document the store would repair, a DPoP profile
    /// whose key is missing, `-v` (whose log tells the session's story) — and the caller
    /// then goes the session's way, which renews or reports.
    ///
    /// It makes no client, reads no client secret or key file, and starts no thread: a
    /// cached `oauth2 token` is answered with it before anything asynchronous begins
    /// (main.swift, ``StoreAnswer``).
    func storedFreshTokens(now: Date = Date()) -> TokenSet? {
        guard global.verbosity == 0, let profile = try? requireProfile(), (global.store ?? profile.store) == .file,
            let store = try? FileTokenStore(directory: global.configDirectory.appendingPathComponent("tokens")),
            let record = store.loadIfReadable(sessionKey(for: profile))
        else { return nil }
        // A DPoP profile whose key is not stored with its tokens: `session()` says sign in again.
        if profile.options[ProfileOption.dpop] != nil, (try? record.dpopKey()) == nil { return nil }
        guard TokenSession.isFresh(record.tokens, options: Self.sessionOptions(for: profile), at: now) else { return nil }
        return record.tokens
    }
}
