import Foundation

/// A grant presented at the token endpoint: its `grant_type` and parameters.
///
/// ```swift
/// let tokens = try await client.requestToken(.clientCredentials(scopes: ["read"]))
/// let other = try await client.requestToken(.extension(type: "urn:example:grant", parameters: [...]))
/// ```
///
/// Token exchange and the JWT bearer grant have their own: ``tokenExchange(_:)`` (better
/// through ``OAuth2Client/exchangeToken(_:)``, which reads `issued_token_type`) and
/// ``jwtBearer(assertion:scopes:)``.
public struct Grant: Sendable, CustomStringConvertible {
    /// The `grant_type` value.
    public let type: String
    /// The grant's parameters, in order (client authentication is added separately).
    public let parameters: [(String, String)]
    /// The scopes asked for, used when the response omits `scope`.
    public let requestedScopes: [String]?
    /// For a `refresh_token` grant, the claims of the ID token being refreshed: a new ID
    /// token in the answer must name the same issuer and subject (OIDC Core §12.2).
    public let previousIDTokenClaims: IDTokenClaims?

    /// Whether the client adds its configured scopes when it sends the grant
    /// (``clientCredentials(scopes:)`` and ``password(username:password:scopes:)`` without
    /// scopes).
    let usesConfiguredScopes: Bool

    /// Creates any grant.
    public init(type: String, parameters: [(String, String)], requestedScopes: [String]? = nil) {
        self.init(type: type, parameters: parameters, requestedScopes: requestedScopes, previousIDTokenClaims: nil)
    }

    private init(
        type: String, parameters: [(String, String)], requestedScopes: [String]?, previousIDTokenClaims: IDTokenClaims? = nil,
        usesConfiguredScopes: Bool = false
    ) {
        self.type = type
        self.parameters = parameters
        self.requestedScopes = requestedScopes
        self.previousIDTokenClaims = previousIDTokenClaims
        self.usesConfiguredScopes = usesConfiguredScopes
    }

    /// `authorization_code` with its PKCE verifier (RFC 6749 §4.1.3, RFC 7636 §4.5).
    public static func authorizationCode(code: String, redirectURI: URL, codeVerifier: String) -> Grant {
        Grant(
            type: "authorization_code",
            parameters: [("code", code), ("redirect_uri", redirectURI.absoluteString), ("code_verifier", codeVerifier)]
        )
    }

    /// `client_credentials` (RFC 6749 §4.4).
    ///
    /// - Parameter scopes: the scopes to ask for; `nil` (the default) asks for the client's
    ///   configured ones (``ClientConfiguration/scopes``), as
    ///   ``OAuth2Client/clientCredentials(scopes:)`` does; `[]` sends no `scope`.
    public static func clientCredentials(scopes: [String]? = nil) -> Grant {
        Grant(
            type: "client_credentials", parameters: scopeParameter(scopes ?? []), requestedScopes: scopes?.nilIfEmpty,
            usesConfiguredScopes: scopes == nil)
    }

    /// `password` (RFC 6749 §4.3; deprecated by RFC 9700, kept for legacy servers).
    ///
    /// - Parameters:
    ///   - username: the resource owner's username.
    ///   - password: the resource owner's password.
    ///   - scopes: the scopes to ask for; `nil` (the default) asks for the client's
    ///     configured ones, as ``OAuth2Client/password(username:password:scopes:)`` does; `[]`
    ///     sends no `scope`.
    public static func password(username: String, password: String, scopes: [String]? = nil) -> Grant {
        Grant(
            type: "password",
            parameters: [("username", username), ("password", password)] + scopeParameter(scopes ?? []),
            requestedScopes: scopes?.nilIfEmpty,
            usesConfiguredScopes: scopes == nil
        )
    }

    /// `refresh_token` (RFC 6749 §6). `scopes` may narrow the grant; empty keeps it.
    ///
    /// ``OAuth2Client/requestToken(_:requestedScopes:)`` sends it as a session's refresh
    /// does: an answer without a refresh token keeps `refreshToken`, an HTTP 400 without an
    /// error object (Glewlwyd's) is `invalid_grant`, and a new ID token must name the issuer
    /// and subject of `previousIDTokenClaims` when given (OIDC Core §12.2).
    ///
    /// ```swift
    /// let renewed = try await client.requestToken(
    ///     .refreshToken(refreshToken, previousIDTokenClaims: tokens.idTokenClaims))
    /// ```
    ///
    /// - Parameters:
    ///   - refreshToken: the refresh token.
    ///   - scopes: scopes to narrow the grant to; empty keeps the grant's.
    ///   - previousIDTokenClaims: the claims of the ID token being refreshed
    ///     (`TokenSet.idTokenClaims`), if any.
    public static func refreshToken(_ refreshToken: String, scopes: [String] = [], previousIDTokenClaims: IDTokenClaims? = nil) -> Grant {
        Grant(
            type: refreshTokenType,
            parameters: [("refresh_token", refreshToken)] + scopeParameter(scopes),
            requestedScopes: scopes.nilIfEmpty,
            previousIDTokenClaims: previousIDTokenClaims
        )
    }

    /// The refresh grant's `grant_type` (RFC 6749 §6).
    static let refreshTokenType = "refresh_token"

    /// This grant with `scopes` (the configuration's) when it sends none: for a grant made
    /// to use them, and for a refresh with ``ServerQuirks/scopesOnRefresh``.
    func addingScopes(_ scopes: [String]) -> Grant {
        guard !scopes.isEmpty, !parameters.contains(where: { $0.0 == "scope" }) else { return self }
        return Grant(
            type: type, parameters: parameters + Self.scopeParameter(scopes), requestedScopes: requestedScopes ?? scopes,
            previousIDTokenClaims: previousIDTokenClaims)
    }

    /// This grant with `authorization_details` (RFC 9396 §6): for a `client_credentials`
    /// grant, the details to ask for; for an `authorization_code` or `refresh_token` grant,
    /// a subset of those granted, to narrow the new token to. Empty returns the grant as it is.
    ///
    /// ```swift
    /// let grant = try Grant.clientCredentials().addingAuthorizationDetails([AuthorizationDetail(payment)])
    /// ```
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when a member cannot be written
    ///   as JSON, or the grant already has an `authorization_details` parameter.
    public func addingAuthorizationDetails(_ details: [AuthorizationDetail]) throws(OAuth2Error) -> Grant {
        guard !details.isEmpty else { return self }
        guard !parameters.contains(where: { $0.0 == "authorization_details" }) else {
            throw .client(.invalidConfiguration, "The grant already has authorization_details.")
        }
        return Grant(
            type: type, parameters: parameters + [("authorization_details", try AuthorizationDetail.parameter(details))],
            requestedScopes: requestedScopes, previousIDTokenClaims: previousIDTokenClaims, usesConfiguredScopes: usesConfiguredScopes)
    }

    /// The device code grant (RFC 8628 §3.4): `urn:ietf:params:oauth:grant-type:device_code`
    /// with the `device_code` of a ``DeviceAuthorization``. One request; to poll until the
    /// user decides, use ``OAuth2Client/pollDeviceToken(_:progress:)``.
    public static func deviceCode(_ deviceCode: String) -> Grant {
        Grant(type: deviceCodeType, parameters: [("device_code", deviceCode)])
    }

    /// The device code grant's `grant_type` (RFC 8628 §3.4).
    public static let deviceCodeType = "urn:ietf:params:oauth:grant-type:device_code"

    /// The CIBA grant (OpenID Connect CIBA Core §10.1): `urn:openid:params:grant-type:ciba`
    /// with the `auth_req_id` of a ``BackchannelAuthentication``. One request; to poll until
    /// the user decides, use ``OAuth2Client/pollBackchannelToken(_:progress:)``.
    public static func ciba(authenticationRequestID: String) -> Grant {
        Grant(type: cibaType, parameters: [("auth_req_id", authenticationRequestID)])
    }

    /// The CIBA grant's `grant_type` (CIBA Core §10.1).
    public static let cibaType = "urn:openid:params:grant-type:ciba"

    /// An extension grant (RFC 6749 §4.5): a grant type URI and its parameters, for grants
    /// without a constructor of their own.
    public static func `extension`(type: String, parameters: [String: String]) -> Grant {
        Grant(
            type: type,
            parameters: parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
            requestedScopes: ResponseParsing.scopes(parameters["scope"])
        )
    }

    /// The grant type and parameter names; values are redacted unless harmless.
    public var description: String {
        "Grant(\(type): \(Redactor.parameters(parameters)))"
    }

    private static func scopeParameter(_ scopes: [String]) -> [(String, String)] {
        scopes.isEmpty ? [] : [("scope", scopes.joined(separator: " "))]
    }
}

extension Array where Element == String {
    var nilIfEmpty: [String]? { isEmpty ? nil : self }
}
