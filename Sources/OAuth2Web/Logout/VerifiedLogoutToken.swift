import Foundation

/// A logout token that passed every check of OpenID Connect Back-Channel Logout 1.0 §2.6:
/// the provider asks to end the sessions of ``subject`` at this client, or the one session
/// ``sessionID`` names (or the sessions that match both, when both are given).
///
/// It holds what the token says, never the token itself: its `description` is safe to log.
public struct VerifiedLogoutToken: Sendable, Hashable, CustomStringConvertible {
    /// `iss`: the provider that sent it.
    public let issuer: String
    /// `sub`: the user whose sessions end, when the token names one.
    public let subject: String?
    /// `sid`: the provider's session that ended (the `sid` of the ID tokens issued in it),
    /// when the token names one.
    public let sessionID: String?
    /// `jti`: the token's identifier.
    public let jwtID: String
    /// `iat`.
    public let issuedAt: Date
    /// `exp`, when the token has one (Glewlwyd 2.7.5's have none).
    public let expiresAt: Date?

    /// Creates a value; the verifier makes these.
    public init(issuer: String, subject: String?, sessionID: String?, jwtID: String, issuedAt: Date, expiresAt: Date?) {
        self.issuer = issuer
        self.subject = subject
        self.sessionID = sessionID
        self.jwtID = jwtID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }

    /// Issuer, subject and session; never the token.
    public var description: String {
        "VerifiedLogoutToken(iss: \(issuer), sub: \(subject ?? "-"), sid: \(sessionID ?? "-"))"
    }
}
