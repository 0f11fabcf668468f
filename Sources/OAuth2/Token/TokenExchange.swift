import Foundation
import HTTPTypes

/// A token type identifier of token exchange (RFC 8693 §3): the type of a subject or actor
/// token, of the token asked for, and of the token issued.
///
/// An open set: the six URIs RFC 8693 registers are constants, and any other URI (a
/// transaction token, a vendor's type) is a value too.
///
/// ```swift
/// let type: TokenTypeURI = .accessToken            // urn:ietf:params:oauth:token-type:access_token
/// let other: TokenTypeURI = "urn:example:token-type:ticket"   // any URI, as a string literal
/// ```
public struct TokenTypeURI: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    /// The URI, as sent and received.
    public let rawValue: String

    /// Any token type URI, as given.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Any token type URI, as given.
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// The prefix of the types RFC 8693 registers.
    public static let prefix = "urn:ietf:params:oauth:token-type:"

    /// `urn:ietf:params:oauth:token-type:access_token`: an OAuth 2.0 access token.
    public static let accessToken = TokenTypeURI(rawValue: prefix + "access_token")
    /// `urn:ietf:params:oauth:token-type:refresh_token`: an OAuth 2.0 refresh token.
    public static let refreshToken = TokenTypeURI(rawValue: prefix + "refresh_token")
    /// `urn:ietf:params:oauth:token-type:id_token`: an OpenID Connect ID token.
    public static let idToken = TokenTypeURI(rawValue: prefix + "id_token")
    /// `urn:ietf:params:oauth:token-type:jwt`: a JWT (RFC 7519), e.g. an authorization grant
    /// for the JWT bearer grant of another server.
    public static let jwt = TokenTypeURI(rawValue: prefix + "jwt")
    /// `urn:ietf:params:oauth:token-type:saml1`: a base64url-encoded SAML 1.1 assertion.
    public static let saml1 = TokenTypeURI(rawValue: prefix + "saml1")
    /// `urn:ietf:params:oauth:token-type:saml2`: a base64url-encoded SAML 2.0 assertion.
    public static let saml2 = TokenTypeURI(rawValue: prefix + "saml2")

    /// The registered types, in RFC 8693 §3's order.
    public static let registered: [TokenTypeURI] = [.accessToken, .refreshToken, .idToken, .jwt, .saml1, .saml2]

    /// A type from a short name (`access_token`, `refresh_token`, `id_token`, `jwt`, `saml1`,
    /// `saml2`, or any other name after the RFC 8693 prefix, such as `txn_token`) or from a
    /// full URI (anything with a `:` in it: `urn:…`, `https://…`); `nil` for empty or
    /// whitespace-containing text.
    public init?(name: String) {
        guard !name.isEmpty, !name.contains(where: { $0.isWhitespace || $0.isNewline }) else { return nil }
        if name.contains(":") {
            self.init(rawValue: name)
        } else {
            guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") })
            else { return nil }
            self.init(rawValue: Self.prefix + name)
        }
    }

    /// The name after the RFC 8693 prefix (`access_token`, `jwt`…); `nil` for other URIs.
    public var shortName: String? {
        rawValue.hasPrefix(Self.prefix) ? String(rawValue.dropFirst(Self.prefix.count)) : nil
    }

    /// The URI.
    public var description: String { rawValue }

    /// Decodes the URI.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    /// Encodes the URI.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// A token exchange request (RFC 8693 §2.1): a subject token — and, for delegation, an actor
/// token — traded for a token for another audience, resource or type.
///
/// ```swift
/// let request = TokenExchangeRequest(
///     subject: .init(accessToken, type: .accessToken),
///     audiences: ["https://api.example.com"],
///     requestedTokenType: .accessToken)
/// let answer = try await client.exchangeToken(request)
/// ```
///
/// Its `description` names the token types but never shows a token.
public struct TokenExchangeRequest: Sendable, Hashable, CustomStringConvertible {
    /// A token presented in an exchange, with its type.
    public struct Token: Sendable, Hashable, CustomStringConvertible {
        /// The token itself.
        public var value: String
        /// What kind of token it is.
        public var type: TokenTypeURI

        /// A token and its type.
        public init(_ value: String, type: TokenTypeURI) {
            self.value = value
            self.type = type
        }

        /// The type only; the token is redacted.
        public var description: String { "\(type) \(Redactor.placeholder)" }
    }

    /// `subject_token` and `subject_token_type`: whom the new token represents.
    public var subject: Token
    /// `actor_token` and `actor_token_type`: who acts for the subject (delegation); `nil`
    /// for impersonation.
    public var actor: Token?
    /// `resource` (repeatable): absolute URIs of the services the token is for.
    public var resources: [URL]
    /// `audience` (repeatable): logical names of the services the token is for.
    public var audiences: [String]
    /// `scope`: the scopes asked for; empty sends none.
    public var scopes: [String]
    /// `requested_token_type`: the type wanted; `nil` lets the server choose.
    public var requestedTokenType: TokenTypeURI?

    /// Creates a request.
    public init(
        subject: Token,
        actor: Token? = nil,
        resources: [URL] = [],
        audiences: [String] = [],
        scopes: [String] = [],
        requestedTokenType: TokenTypeURI? = nil
    ) {
        self.subject = subject
        self.actor = actor
        self.resources = resources
        self.audiences = audiences
        self.scopes = scopes
        self.requestedTokenType = requestedTokenType
    }

    /// The request's parameters (without `grant_type`), in the order RFC 8693 §2.1 lists them.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidRequest`` for an empty subject or actor token or
    ///   type, an empty audience or scope, or a resource that is not an absolute URI or has a
    ///   fragment (RFC 8707 §2).
    public func parameters() throws(OAuth2Error) -> [(String, String)] {
        try Self.check(subject, "subject")
        var parameters = [("subject_token", subject.value), ("subject_token_type", subject.type.rawValue)]
        if let actor {
            try Self.check(actor, "actor")
            parameters += [("actor_token", actor.value), ("actor_token_type", actor.type.rawValue)]
        }
        for resource in resources {
            guard resource.scheme != nil, resource.fragment == nil else {
                throw .client(.invalidRequest, "A resource must be an absolute URI without a fragment (RFC 8707 §2).")
            }
            parameters.append(("resource", resource.absoluteString))
        }
        for audience in audiences {
            guard !audience.isEmpty else { throw .client(.invalidRequest, "An audience must not be empty.") }
            parameters.append(("audience", audience))
        }
        if !scopes.isEmpty {
            guard scopes.allSatisfy({ !$0.isEmpty && !$0.contains(" ") }) else {
                throw .client(.invalidRequest, "A scope must be a non-empty word without spaces.")
            }
            parameters.append(("scope", scopes.joined(separator: " ")))
        }
        if let requestedTokenType {
            guard !requestedTokenType.rawValue.isEmpty else {
                throw .client(.invalidRequest, "The requested token type must not be empty.")
            }
            parameters.append(("requested_token_type", requestedTokenType.rawValue))
        }
        return parameters
    }

    private static func check(_ token: Token, _ role: String) throws(OAuth2Error) {
        guard !token.value.isEmpty else { throw .client(.invalidRequest, "The \(role) token is empty.") }
        guard !token.type.rawValue.isEmpty else { throw .client(.invalidRequest, "The \(role) token type is empty.") }
    }

    /// Token types, targets and scopes; the tokens are redacted.
    public var description: String {
        var parts = ["subject: \(subject)"]
        if let actor { parts.append("actor: \(actor)") }
        if !resources.isEmpty { parts.append("resources: \(resources.map(\.absoluteString))") }
        if !audiences.isEmpty { parts.append("audiences: \(audiences)") }
        if !scopes.isEmpty { parts.append("scopes: \(scopes.joined(separator: " "))") }
        if let requestedTokenType { parts.append("requestedTokenType: \(requestedTokenType)") }
        return "TokenExchangeRequest(\(parts.joined(separator: ", ")))"
    }
}

/// The answer to a token exchange (RFC 8693 §2.2.1).
///
/// The issued token is in the response's `access_token` member whatever its type — an
/// access token, an ID token, a JWT grant for another server, a SAML assertion — so it is
/// ``issuedToken`` here, and ``issuedTokenType`` says what it is. ``tokenType`` is how it
/// is used: `Bearer` or `DPoP` for an access token, `N_A` for a token that is not one.
/// ``tokenSet`` is the answer as a ``TokenSet`` when the issued token is an access token
/// (to make a ``TokenSession`` of it, or call an API).
///
/// Its `description` never shows a token.
public struct TokenExchangeResponse: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The issued token (the response's `access_token` member).
    public var issuedToken: String
    /// `issued_token_type`: what the issued token is.
    public var issuedTokenType: TokenTypeURI
    /// `token_type` as sent (`Bearer`, `DPoP`, `N_A`…); `nil` when the server sent none.
    public var tokenType: String?
    /// When the issued token expires, from `expires_in` and the time the request was sent.
    public var expiresAt: Date?
    /// The scopes of the issued token: the response's `scope`, else the requested ones.
    public var scopes: [String]?
    /// A refresh token, if the server issued one.
    public var refreshToken: String?
    /// When the response was received.
    public var issuedAt: Date
    /// The server's clock when it answered (its `Date` header), if it sent one.
    public var serverDate: Date?
    /// Every other member of the response.
    public var additionalFields: [String: JSONValue]

    /// Creates a response.
    public init(
        issuedToken: String,
        issuedTokenType: TokenTypeURI,
        tokenType: String?,
        expiresAt: Date? = nil,
        scopes: [String]? = nil,
        refreshToken: String? = nil,
        issuedAt: Date = Date(),
        serverDate: Date? = nil,
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.issuedToken = issuedToken
        self.issuedTokenType = issuedTokenType
        self.tokenType = tokenType
        self.expiresAt = expiresAt
        self.scopes = scopes
        self.refreshToken = refreshToken
        self.issuedAt = issuedAt
        self.serverDate = serverDate
        self.additionalFields = additionalFields
    }

    /// `true` when `token_type` is `N_A` (in any case): the issued token is not an access
    /// token and cannot be sent to an API as one.
    public var isNotApplicable: Bool { tokenType?.uppercased() == "N_A" }

    /// The answer as a ``TokenSet``, when the issued token is usable as an access token:
    /// `token_type` `Bearer` or `DPoP` (or, with none sent, an issued type of
    /// ``TokenTypeURI/accessToken``); `nil` otherwise (`N_A`, or an unknown token type).
    /// Its ``TokenSet/additionalFields`` keep `issued_token_type`.
    public var tokenSet: TokenSet? {
        let type: TokenType
        if let tokenType {
            guard let known = TokenType(rawValue: tokenType) else { return nil }
            type = known
        } else {
            guard issuedTokenType == .accessToken else { return nil }
            type = .bearer
        }
        var fields = additionalFields
        fields["issued_token_type"] = .string(issuedTokenType.rawValue)
        return TokenSet(
            accessToken: issuedToken, tokenType: type, refreshToken: refreshToken, expiresAt: expiresAt,
            scopes: scopes, issuedAt: issuedAt, serverDate: serverDate, additionalFields: fields)
    }

    /// Parses a token exchange response (RFC 8693 §2.2).
    ///
    /// - Throws: the server's error (typed: `invalid_grant` for a refused subject or actor
    ///   token, `invalid_target` for a refused audience or resource, RFC 8693 §2.2.2);
    ///   ``OAuth2Error/Code/invalidResponse`` for a body that is neither JSON nor form data, or
    ///   that lacks `access_token` or `issued_token_type` (both REQUIRED), or has a member of
    ///   the wrong type.
    public static func parse(
        response: HTTPResponse,
        body: Data,
        requestedScopes: [String]? = nil,
        sentAt: Date,
        receivedAt: Date = Date()
    ) throws(OAuth2Error) -> TokenExchangeResponse {
        let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
        if let error = ResponseParsing.error(in: response, members: members, kind: .token, now: receivedAt) {
            throw error
        }
        guard let members else {
            throw .invalidResponse("The token exchange response is neither JSON nor form data.", statusCode: response.status.code)
        }
        guard let token = members["access_token"]?.stringValue, !token.isEmpty else {
            throw .invalidResponse("The token exchange response has no access_token (the issued token).", statusCode: response.status.code)
        }
        guard let issuedType = members["issued_token_type"]?.stringValue, !issuedType.isEmpty else {
            throw .invalidResponse("The token exchange response has no issued_token_type (RFC 8693 §2.2.1).", statusCode: response.status.code)
        }
        for optional in ["token_type", "refresh_token", "scope"] {
            if let value = members[optional], value != .null, value.stringValue == nil {
                throw .invalidResponse("The \(optional) member is not a string.")
            }
        }
        var expiresAt: Date?
        if let seconds = ResponseParsing.number(members["expires_in"]), seconds >= 0, seconds < 1e10 {
            expiresAt = sentAt.addingTimeInterval(seconds)
        }
        let known: Set<String> = ["access_token", "issued_token_type", "token_type", "expires_in", "refresh_token", "scope"]
        return TokenExchangeResponse(
            issuedToken: token,
            issuedTokenType: TokenTypeURI(rawValue: issuedType),
            tokenType: members["token_type"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            expiresAt: expiresAt,
            scopes: ResponseParsing.scopes(members["scope"]?.stringValue).flatMap { $0.isEmpty ? nil : $0 } ?? requestedScopes,
            refreshToken: members["refresh_token"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            issuedAt: receivedAt,
            serverDate: response.headerFields[.date].flatMap(HTTPDate.parse),
            additionalFields: members.filter { !known.contains($0.key) })
    }

    /// Issued and token types, expiry and scopes; the tokens are redacted.
    public var description: String {
        var parts = ["issuedTokenType: \(issuedTokenType)", "issuedToken: \(Redactor.placeholder)"]
        if let tokenType { parts.append("tokenType: \(tokenType)") }
        if refreshToken != nil { parts.append("refreshToken: \(Redactor.placeholder)") }
        if let expiresAt { parts.append("expiresAt: \(expiresAt)") }
        if let scopes { parts.append("scopes: \(scopes.joined(separator: " "))") }
        return "TokenExchangeResponse(\(parts.joined(separator: ", ")))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// Hides the tokens from `dump` and debuggers too.
    public var customMirror: Mirror { Mirror(self, children: ["description": description], displayStyle: .struct) }
}
