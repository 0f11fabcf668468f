import Foundation

extension StoredTokenSession {
    /// The member of ``additionalFields`` that holds the session's DPoP key (a private JWK).
    public static let dpopKeyField = "dpop_key"

    /// The DPoP key the session's tokens are bound to, if one was stored with
    /// ``setDPoPKey(_:)``: a restarted process loads it and keeps its sender-constrained
    /// tokens working.
    ///
    /// - Throws: `JOSEError.Reason.invalidKey` (or another `JOSEError`) when a key is
    ///   stored but cannot be read.
    public func dpopKey() throws(JOSEError) -> DPoPKey? {
        guard let stored = additionalFields[Self.dpopKeyField], stored != .null else { return nil }
        guard let jwk = stored.objectValue else { throw JOSEError(.invalidKey, "The stored DPoP key is not a JWK.") }
        return try DPoPKey(jwk: jwk)
    }

    /// Stores `key` (as a private JWK) with the session's tokens, or removes it with `nil`.
    /// Stores keep it as they keep the tokens: a ``FileTokenStore`` file is mode 0600, and
    /// encrypted when the store is.
    public mutating func setDPoPKey(_ key: DPoPKey?) {
        additionalFields[Self.dpopKeyField] = key.map { .object($0.privateJWK) }
    }
}

extension TokenSet {
    /// The `cnf.jkt` of the access token, when it is a JWT that has one (RFC 9449 §6.1): the
    /// thumbprint of the DPoP key it is bound to. Read without verifying the token (the
    /// client is not its audience): for display and checks, not for trust.
    public var accessTokenKeyThumbprint: String? {
        guard accessToken.utf8.count <= JWS.maximumSize, let jws = try? JWS(compact: accessToken),
            let claims = try? jws.claims()
        else { return nil }
        return claims["cnf"]?.objectValue?["jkt"]?.stringValue
    }
}
