import Foundation

/// A token obtained for a downstream service (by token exchange or client credentials), as
/// ``DownstreamTokens`` caches it.
///
/// Its `description` never shows the token.
public struct DownstreamToken: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The token to send (an exchange's issued token, the access token of client credentials).
    public var token: String
    /// `token_type` as sent (`Bearer`, `DPoP`, `N_A`…); `nil` when the server sent none.
    public var tokenType: String?
    /// `issued_token_type` of an exchange; `nil` for client credentials.
    public var issuedTokenType: TokenTypeURI?
    /// The scopes granted (the response's `scope`, else the requested ones), if known.
    public var scopes: [String]?
    /// When the token expires: from `expires_in`, else the cache's
    /// ``DownstreamTokens/Configuration/lifetimeWithoutExpiry`` after it was issued.
    public var expiresAt: Date
    /// When the token was received.
    public var issuedAt: Date

    /// Creates a token.
    public init(token: String, tokenType: String?, issuedTokenType: TokenTypeURI? = nil, scopes: [String]? = nil, expiresAt: Date, issuedAt: Date) {
        self.token = token
        self.tokenType = tokenType
        self.issuedTokenType = issuedTokenType
        self.scopes = scopes
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
    }

    /// The answer of an exchange; one without `expires_in` expires `lifetimeWithoutExpiry`
    /// after it was received.
    public init(_ answer: TokenExchangeResponse, lifetimeWithoutExpiry: TimeInterval) {
        self.init(
            token: answer.issuedToken, tokenType: answer.tokenType, issuedTokenType: answer.issuedTokenType, scopes: answer.scopes,
            expiresAt: answer.expiresAt ?? answer.issuedAt.addingTimeInterval(lifetimeWithoutExpiry), issuedAt: answer.issuedAt)
    }

    /// The access token of `tokens`; tokens without an expiry expire `lifetimeWithoutExpiry`
    /// after they were received.
    public init(_ tokens: TokenSet, lifetimeWithoutExpiry: TimeInterval) {
        self.init(
            token: tokens.accessToken, tokenType: tokens.tokenType.rawValue, scopes: tokens.scopes,
            expiresAt: tokens.expiresAt ?? tokens.issuedAt.addingTimeInterval(lifetimeWithoutExpiry), issuedAt: tokens.issuedAt)
    }

    /// The value of an `Authorization` header for this token: `DPoP <token>` for a DPoP-bound
    /// token, else `Bearer <token>`.
    public var authorizationValue: String {
        (tokenType?.caseInsensitiveCompare("DPoP") == .orderedSame ? "DPoP " : "Bearer ") + token
    }

    /// Types, scopes and expiry; the token is redacted.
    public var description: String {
        var parts = ["token: \(Redactor.placeholder)"]
        if let tokenType { parts.append("tokenType: \(tokenType)") }
        if let issuedTokenType { parts.append("issuedTokenType: \(issuedTokenType)") }
        if let scopes { parts.append("scopes: \(scopes.joined(separator: " "))") }
        parts.append("expiresAt: \(expiresAt)")
        return "DownstreamToken(\(parts.joined(separator: ", ")))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// Hides the token from `dump` and debuggers too.
    public var customMirror: Mirror { Mirror(self, children: ["description": description], displayStyle: .struct) }
}
