import Foundation
import Logging
import OAuth2Internals

/// One renewal of a ``TokenSession``, run in a task of its own under the store's exclusive lock: re-read
/// the record, renew only if the stored token still needs it, save before returning.
struct RenewalAttempt: Sendable {
    enum Outcome: Sendable {
        /// Fresh tokens, saved: from the server, or found in the store.
        case renewed(TokenSet, fromServer: Bool)
        /// Fresh tokens from the server that the store failed to save.
        case unsaved(TokenSet, any Error)
        /// The server refused the grant (the record is removed), or the record was removed
        /// elsewhere.
        case signedOut(OAuth2Error)
        /// Nothing to renew with (no tokens, no refresh token); nothing changed.
        case unavailable(OAuth2Error)
    }

    let key: TokenSessionKey
    /// The session's client, before its DPoP key is settled.
    let client: OAuth2Client
    /// The session's state, where a DPoP key stored with the record is adopted.
    let state: Locked<SessionState>
    let store: any TokenStore
    let options: TokenSession.Options
    /// The session's tokens when the renewal started.
    let memory: TokenSet?
    /// An access token that must not be returned (refused by a resource server, or forced).
    let rejected: String?

    func run() async throws -> Outcome {
        try await store.withExclusiveAccess(to: key) {
            let stored = try await store.load(key)
            // Tokens in memory always have a record (they were read from it, or the session
            // took them only once they were saved): a record that is gone now was removed
            // by a sign-out elsewhere (another replica or process). Renewing would bring it back.
            if stored == nil, memory != nil, case .refreshToken = options.renewal {
                return .signedOut(TokenSession.signedOutElsewhere)
            }
            // Tokens bound to a stored DPoP key are renewed with that key.
            let dpopOptions = TokenSession.adoptDPoP(stored, state: state, client: self.client)
            let client = self.client.withDPoP(dpopOptions)
            let newest = Self.newest(stored?.tokens, memory)
            if let newest, newest.accessToken != rejected,
                TokenExpiry(newest, leeway: options.leeway).isFresh(at: client.now())
            {
                return .renewed(newest, fromServer: false)  // another session or process renewed it
            }
            let renewed: TokenSet
            switch options.renewal {
            case .refreshToken:
                guard let newest else {
                    return .unavailable(TokenSession.noTokens)
                }
                guard newest.refreshToken != nil else {
                    var error = OAuth2Error(
                        .signInRequired, source: .client, message: "The access token expired and there is no refresh token: sign in again.")
                    error.signInReason = .noRefreshToken
                    return .unavailable(error)
                }
                do {
                    renewed = try await client.refresh(newest)
                } catch let error as OAuth2Error where error.requiresReauthorization {
                    do {
                        try await store.remove(key)
                    } catch {
                        client.logger.warning("session \(key): the refused tokens could not be removed from the store")
                    }
                    return .signedOut(Self.refused(error))
                }
            case .clientCredentials(let scopes):
                renewed = try await client.clientCredentials(scopes: scopes)
            }
            var record = stored ?? StoredTokenSession(key: key, tokens: renewed)
            record.tokens = renewed
            record.updatedAt = client.now()
            if let dpopKey = dpopOptions?.key { record.setDPoPKey(dpopKey) }
            do {
                try await store.save(record)
            } catch {
                return .unsaved(renewed, error)
            }
            return .renewed(renewed, fromServer: true)
        }
    }

    /// The later of two token sets (the store's wins a tie).
    static func newest(_ stored: TokenSet?, _ memory: TokenSet?) -> TokenSet? {
        guard let stored else { return memory }
        guard let memory else { return stored }
        return memory.issuedAt > stored.issuedAt ? memory : stored
    }

    /// `sign_in_required`, carrying the server's refusal.
    static func refused(_ error: OAuth2Error) -> OAuth2Error {
        var refused = OAuth2Error(
            .signInRequired,
            source: error.source,
            message: "The server refused the refresh token (\(error.serverCode ?? error.code.rawValue)); the session's tokens were removed: sign in again.",
            uri: error.uri,
            statusCode: error.statusCode,
            serverCode: error.serverCode ?? error.code.rawValue,
            underlyingError: error)
        refused.signInReason = .refreshTokenRefused
        return refused
    }
}
