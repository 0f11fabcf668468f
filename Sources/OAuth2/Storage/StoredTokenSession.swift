import Foundation

/// What a ``TokenStore`` keeps for one session: its tokens and what is needed to use them
/// again after a restart.
///
/// Members this version does not know (written by a newer one) are kept in
/// ``additionalFields`` and written back unchanged.
public struct StoredTokenSession: Sendable, Hashable, Codable {
    /// Whose session this is.
    public var key: TokenSessionKey
    /// The current tokens.
    public var tokens: TokenSet
    /// The `sub` of the first ID token, which every later ID token must repeat
    /// (OIDC Core §12.2); `nil` without OpenID Connect.
    public var subject: String?
    /// When this record was last written.
    public var updatedAt: Date
    /// Members written by other versions, or by features and programs that store their own
    /// state beside the tokens (a DPoP key; the `oauth2` tool's client secret), kept as they are.
    public var additionalFields: [String: JSONValue]

    /// Creates a record.
    public init(
        key: TokenSessionKey,
        tokens: TokenSet,
        subject: String? = nil,
        updatedAt: Date = Date(),
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.key = key
        self.tokens = tokens
        self.subject = subject
        self.updatedAt = updatedAt
        self.additionalFields = additionalFields
    }
}
