import Foundation
import HTTPTypes

extension OAuth2Client {
    /// This client with other DPoP options — a session's own key, say — sharing everything
    /// else: transport, interceptors, the JWK-set cache and the DPoP nonces.
    ///
    /// ```swift
    /// let key = try record.dpopKey() ?? DPoPKey.generate(for: client.metadata)
    /// let bound = client.withDPoP(DPoPOptions(key: key))
    /// ```
    public func withDPoP(_ options: DPoPOptions?) -> OAuth2Client {
        var copy = self
        copy.configuration.dpop = options
        return copy
    }
}
