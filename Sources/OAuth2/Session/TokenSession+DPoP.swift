import Foundation
import Logging
import OAuth2Internals

// A session's DPoP options (RFC 9449): those of the client it was created with, until it
// reads a stored record whose tokens are bound to another key — then that key, so that
// renewals and requests keep using the key the tokens are bound to. The adopted options
// live in the session's state (`SessionState.adoptedDPoP`), under its one lock.

extension TokenSession {
    /// The DPoP options in force: the adopted ones, else the client's.
    var currentDPoP: DPoPOptions? {
        state.withLock { $0.adoptedDPoP } ?? baseClient.configuration.dpop
    }

    /// Adopts the key stored with `record`, if it has one, keeping the other options; returns
    /// the options in force. A stored key that cannot be read is reported and ignored: the
    /// server will refuse the tokens, and a sign-in replaces them.
    @discardableResult
    static func adoptDPoP(_ record: StoredTokenSession?, state: Locked<SessionState>, client: OAuth2Client) -> DPoPOptions? {
        let own = client.configuration.dpop
        guard let record else { return state.withLock { $0.adoptedDPoP } ?? own }
        let stored: DPoPKey?
        do {
            stored = try record.dpopKey()
        } catch {
            client.logger.warning("session \(record.key): the stored DPoP key cannot be read (\(error.reason))")
            return state.withLock { $0.adoptedDPoP } ?? own
        }
        guard let stored else { return state.withLock { $0.adoptedDPoP } ?? own }
        return state.withLock { state in
            let options = state.adoptedDPoP ?? own
            if options?.key.thumbprint != stored.thumbprint {
                state.adoptedDPoP = DPoPOptions(
                    key: stored, allowsBearerTokens: options?.allowsBearerTokens ?? false,
                    bindsAuthorizationCode: options?.bindsAuthorizationCode ?? true)
            }
            return state.adoptedDPoP ?? own
        }
    }
}
