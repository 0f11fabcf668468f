import Foundation
import Logging

/// A session's DPoP options (RFC 9449): those of the client it was created with, until it
/// reads a stored record whose tokens are bound to another key — then that key, so that
/// renewals and requests keep using the key the tokens are bound to.
final class SessionDPoP: @unchecked Sendable {
    private let lock = NSLock()
    private var options: DPoPOptions?

    init(_ options: DPoPOptions?) {
        self.options = options
    }

    /// The options in force.
    var current: DPoPOptions? { lock.withLock { options } }

    /// Adopts the key stored with `record`, if it has one, keeping the other options; returns
    /// the options in force. A stored key that cannot be read is reported and ignored: the
    /// server will refuse the tokens, and a sign-in replaces them.
    @discardableResult
    func adopt(_ record: StoredSession?, logger: Logger) -> DPoPOptions? {
        guard let record else { return current }
        let stored: DPoPKey?
        do {
            stored = try record.dpopKey()
        } catch {
            logger.warning("session \(record.key): the stored DPoP key cannot be read (\(error.reason))")
            return current
        }
        guard let stored else { return current }
        return lock.withLock {
            if options?.key.thumbprint != stored.thumbprint {
                options = DPoPOptions(
                    key: stored, allowsBearerTokens: options?.allowsBearerTokens ?? false,
                    bindsAuthorizationCode: options?.bindsAuthorizationCode ?? true)
            }
            return options
        }
    }
}
