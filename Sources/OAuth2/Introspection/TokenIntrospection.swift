import Foundation
import HTTPTypes

/// A hint to the revocation or introspection endpoint about the token's kind
/// (RFC 7009 §2.1, RFC 7662 §2.1).
public struct TokenTypeHint: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    /// The registered name.
    public let rawValue: String
    /// Creates a hint from its registered name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates a hint from a string literal.
    public init(stringLiteral value: String) { self.rawValue = value }
    /// `access_token`
    public static let accessToken: Self = "access_token"
    /// `refresh_token`
    public static let refreshToken: Self = "refresh_token"
}

/// An introspection response (RFC 7662 §2.2).
public struct IntrospectionResponse: Sendable, Hashable {
    /// Whether the token is active. Every other member is meaningful only when it is.
    public let active: Bool
    /// `scope`
    public let scopes: [String]?
    /// `client_id`
    public let clientID: String?
    /// `username`
    public let username: String?
    /// `token_type`
    public let tokenType: String?
    /// `exp`
    public let expiresAt: Date?
    /// `iat`
    public let issuedAt: Date?
    /// `nbf`
    public let notBefore: Date?
    /// `sub`
    public let subject: String?
    /// `aud` (a string or an array in the response; always a list here)
    public let audience: [String]?
    /// `iss`
    public let issuer: String?
    /// `jti`
    public let jwtID: String?
    /// The whole response, for extension members (`cnf`, …).
    public let fields: [String: JSONValue]

    /// The token's `authorization_details` (RFC 9396 §9.2); `nil` when the answer has none,
    /// or none that reads as a JSON array of objects with a `type`.
    public var authorizationDetails: [AuthorizationDetail]? {
        AuthorizationDetail.entries(of: fields["authorization_details"])
    }

    /// The token's `authorization_details` of type `Value`, decoded.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidResponse`` when an entry of that type does not decode.
    public func authorizationDetails<Value: AuthorizationDetailType>(of _: Value.Type) throws(OAuth2Error) -> [Value] {
        try (authorizationDetails ?? []).decoded(as: Value.self)
    }

    /// Parses an introspection response.
    /// - Throws: the server's error, or ``OAuth2Error/Code/invalidResponse`` when the body
    ///   is not a JSON object or `active` is missing.
    public static func parse(response: HTTPResponse, body: Data, receivedAt: Date = Date()) throws(OAuth2Error)
        -> IntrospectionResponse
    {
        let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
        if let error = ResponseParsing.error(in: response, members: members, kind: .introspection, now: receivedAt) {
            throw error
        }
        guard let members else {
            throw .invalidResponse("The introspection response is not a JSON object.", statusCode: response.status.code)
        }
        return try parse(members: members)
    }

    /// Reads the members of an introspection answer (a JSON body's, or a JWT answer's
    /// `token_introspection` claim).
    ///
    /// - Throws: ``OAuth2Error/Code/invalidResponse`` when `active` is missing.
    static func parse(members: [String: JSONValue]) throws(OAuth2Error) -> IntrospectionResponse {
        let active: Bool
        switch members["active"] {
        case .bool(let value)?: active = value
        case .string(let text)?: active = text.lowercased() == "true"  // lenient: some servers quote it
        default: throw .invalidResponse("The introspection response has no boolean active member.")
        }
        func date(_ name: String) -> Date? {
            ResponseParsing.number(members[name]).map(Date.init(timeIntervalSince1970:))
        }
        let audience: [String]?
        switch members["aud"] {
        case .string(let value)?: audience = [value]
        case .array(let values)?: audience = values.compactMap(\.stringValue)
        default: audience = nil
        }
        return IntrospectionResponse(
            active: active,
            scopes: ResponseParsing.scopes(members["scope"]?.stringValue),
            clientID: members.string("client_id"),
            username: members.string("username"),
            tokenType: members.string("token_type"),
            expiresAt: date("exp"),
            issuedAt: date("iat"),
            notBefore: date("nbf"),
            subject: members.string("sub"),
            audience: audience,
            issuer: members.string("iss"),
            jwtID: members.string("jti"),
            fields: members
        )
    }
}
