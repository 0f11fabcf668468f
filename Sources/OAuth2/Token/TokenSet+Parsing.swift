import Foundation
import HTTPTypes

extension TokenSet {
    /// Parses a token endpoint response (RFC 6749 §5.1/§5.2).
    ///
    /// - Parameters:
    ///   - response: the HTTP response.
    ///   - body: the response body.
    ///   - requestedScopes: the scopes of the request, used when the response omits `scope`.
    ///   - sentAt: when the request was sent; `expires_in` counts from then, so the expiry
    ///     errs early rather than late.
    ///   - receivedAt: when the response arrived: the tokens' ``TokenSet/issuedAt``.
    /// - Throws: the server's error (typed, also from an HTTP 200 or an empty 4xx body);
    ///   ``OAuth2Error/Code/invalidResponse`` for a body that is neither JSON nor form data,
    ///   a missing `access_token`, or a `token_type` other than Bearer or DPoP.
    public static func parse(
        response: HTTPResponse,
        body: Data,
        requestedScopes: [String]? = nil,
        sentAt: Date,
        receivedAt: Date = Date()
    ) throws(OAuth2Error) -> TokenSet {
        try parse(
            response: response, body: body, requestedScopes: requestedScopes, sentAt: sentAt,
            receivedAt: receivedAt, quirks: [])
    }

    /// Parses a token endpoint response, bending to the server's `quirks`.
    static func parse(
        response: HTTPResponse,
        body: Data,
        requestedScopes: [String]?,
        sentAt: Date,
        receivedAt: Date,
        quirks: ServerQuirks
    ) throws(OAuth2Error) -> TokenSet {
        let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
        if let error = ResponseParsing.error(in: response, members: members, kind: .token, now: receivedAt) {
            throw error
        }
        guard let members else {
            throw .invalidResponse("The token response is neither JSON nor form data.", statusCode: response.status.code)
        }
        return try parse(
            members: members, statusCode: response.status.code, requestedScopes: requestedScopes, sentAt: sentAt,
            receivedAt: receivedAt, serverDate: response.headerFields[.date].flatMap(HTTPDate.parse), quirks: quirks)
    }

    /// Reads the members of a token response (a token endpoint's body, or the parameters of
    /// an implicit grant's fragment): `access_token` required, `token_type` Bearer or DPoP
    /// (Bearer when absent), `expires_in` counted from `sentAt`, `scope` (else
    /// `requestedScopes`), the rest kept in ``additionalFields``.
    static func parse(
        members: [String: JSONValue],
        statusCode: Int?,
        requestedScopes: [String]?,
        sentAt: Date,
        receivedAt: Date,
        serverDate: Date?,
        quirks: ServerQuirks
    ) throws(OAuth2Error) -> TokenSet {
        guard let accessToken = members["access_token"]?.stringValue, !accessToken.isEmpty else {
            throw .invalidResponse("The token response has no access_token.", statusCode: statusCode)
        }
        let tokenType: TokenType
        switch members["token_type"] {
        case .none, .null?:
            tokenType = .bearer  // Several providers omit it; the only type they issue is Bearer.
        case .string(let raw)?:
            guard let known = TokenType(rawValue: raw) else {
                throw .invalidResponse("The token type \"\(Redactor.sanitizeServerText(raw, limit: 40))\" is not supported.")
            }
            tokenType = known
        default:
            throw .invalidResponse("The token_type member is not a string.")
        }
        var expiresAt: Date?
        if let seconds = ResponseParsing.number(members["expires_in"]), seconds >= 0, seconds < 1e10 {
            expiresAt = sentAt.addingTimeInterval(seconds)
        }
        for optional in ["refresh_token", "id_token", "scope"] {
            if let value = members[optional], value != .null, value.stringValue == nil {
                throw .invalidResponse("The \(optional) member is not a string.")
            }
        }
        let known: Set<String> = ["access_token", "token_type", "expires_in", "refresh_token", "id_token", "scope"]
        return TokenSet(
            accessToken: accessToken,
            tokenType: tokenType,
            refreshToken: members["refresh_token"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            idToken: members["id_token"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            expiresAt: expiresAt,
            scopes: ResponseParsing.scopes(members["scope"]?.stringValue, commaSeparated: quirks.contains(.commaSeparatedScopes))
                ?? requestedScopes,
            issuedAt: receivedAt,
            serverDate: serverDate,
            additionalFields: members.filter { !known.contains($0.key) }
        )
    }
}
