import Foundation

/// The access token type of a token response (RFC 6749 §7.1): `Bearer` or `DPoP`,
/// compared without regard to case.
public struct TokenType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The canonical spelling (`Bearer`, `DPoP`).
    public let rawValue: String

    /// Accepts `Bearer` and `DPoP` in any case, spelled canonically; `nil` for any other.
    public init?(rawValue: String) {
        switch rawValue.lowercased() {
        case "bearer": self = .bearer
        case "dpop": self = .dpop
        default: return nil
        }
    }

    private init(canonical: String) { self.rawValue = canonical }

    /// `Bearer` (RFC 6750)
    public static let bearer = TokenType(canonical: "Bearer")
    /// `DPoP` (RFC 9449)
    public static let dpop = TokenType(canonical: "DPoP")

    /// The canonical spelling.
    public var description: String { rawValue }

    /// Decodes a stored token type.
    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let value = TokenType(rawValue: raw) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "Unknown token type"))
        }
        self = value
    }

    /// Encodes the canonical spelling.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The tokens of one grant: what a token endpoint returned, with its expiry made absolute.
///
/// Its `description` and `debugDescription` never show a token, so printing a `TokenSet`
/// or logging it by mistake leaks nothing.
public struct TokenSet: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The access token.
    public var accessToken: String
    /// `Bearer` or `DPoP`.
    public var tokenType: TokenType
    /// The refresh token, if the server issued one.
    public var refreshToken: String?
    /// The OpenID Connect ID token (a JWT), if the server issued one.
    public var idToken: String?
    /// When the access token expires, computed from `expires_in` and the time the request
    /// was sent; `nil` when the server did not say.
    public var expiresAt: Date?
    /// The granted scopes: the response's `scope`, else the requested ones (RFC 6749 §5.1).
    public var scopes: [String]?
    /// When the token response was received.
    public var issuedAt: Date
    /// The server's clock when it answered: the token response's `Date` header, if it sent
    /// one. `serverDate - issuedAt` is the server's clock skew (to within a second), which a
    /// ``TokenSession`` uses to read expiry times written in the server's clock.
    public var serverDate: Date?
    /// Every other member of the token response (`refresh_expires_in`, `issued_token_type`…).
    public var additionalFields: [String: JSONValue]

    /// Creates a token set.
    public init(
        accessToken: String,
        tokenType: TokenType = .bearer,
        refreshToken: String? = nil,
        idToken: String? = nil,
        expiresAt: Date? = nil,
        scopes: [String]? = nil,
        issuedAt: Date = Date(),
        serverDate: Date? = nil,
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.expiresAt = expiresAt
        self.scopes = scopes
        self.issuedAt = issuedAt
        self.serverDate = serverDate
        self.additionalFields = additionalFields
    }

    /// The `authorization_details` the server granted (RFC 9396 §7), read from
    /// ``additionalFields`` (so a stored token set keeps them); `nil` when the response had
    /// none, or none that reads as a JSON array of objects with a `type`.
    public var authorizationDetails: [AuthorizationDetail]? {
        AuthorizationDetail.entries(of: additionalFields["authorization_details"])
    }

    /// The granted `authorization_details` of type `Value`, decoded (none when none was granted).
    ///
    /// - Throws: ``OAuth2Error/Code/invalidResponse`` when an entry of that type does not decode.
    public func authorizationDetails<Value: AuthorizationDetailType>(of _: Value.Type) throws(OAuth2Error) -> [Value] {
        try (authorizationDetails ?? []).decoded(as: Value.self)
    }

    /// `true` when the access token has expired, or will within `leeway`.
    public func isExpired(at date: Date = Date(), leeway: TimeInterval = 0) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt.timeIntervalSince(date) <= leeway
    }

    /// The tokens of a refresh response merged into these: a refresh response without a
    /// refresh token keeps the current one (RFC 6749 §6), one without an ID token keeps
    /// the current ID token (OIDC Core §12.2), one without scope keeps the current scopes,
    /// one without `authorization_details` keeps the current ones (RFC 9396 §7).
    public func merging(refreshed: TokenSet) -> TokenSet {
        var merged = refreshed
        if merged.additionalFields["authorization_details"] == nil, let details = additionalFields["authorization_details"] {
            merged.additionalFields["authorization_details"] = details
        }
        if merged.refreshToken == nil { merged.refreshToken = refreshToken }
        if merged.idToken == nil { merged.idToken = idToken }
        if merged.scopes == nil { merged.scopes = scopes }
        return merged
    }

    /// Token type, expiry and scopes; the tokens are redacted.
    public var description: String {
        var parts = ["tokenType: \(tokenType)", "accessToken: \(Redactor.placeholder)"]
        if refreshToken != nil { parts.append("refreshToken: \(Redactor.placeholder)") }
        if idToken != nil { parts.append("idToken: \(Redactor.placeholder)") }
        if let expiresAt { parts.append("expiresAt: \(expiresAt)") }
        if let scopes { parts.append("scopes: \(scopes.joined(separator: " "))") }
        return "TokenSet(\(parts.joined(separator: ", ")))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// Hides the tokens from `dump` and debuggers too.
    public var customMirror: Mirror {
        Mirror(self, children: ["description": description], displayStyle: .struct)
    }
}

extension TokenSet: CustomReflectable {}
