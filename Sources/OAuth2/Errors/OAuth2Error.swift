import Foundation

/// The one error type of swift-oauth2.
///
/// Every failure — an RFC 6749 error answered by the authorization server, a rejected
/// response, a broken connection, an unsafe configuration — is an `OAuth2Error` with a
/// stable ``code`` and the context that explains it. Switch on ``code`` (it is an open set,
/// so new codes never break your `switch`), or ask the two questions most callers need:
/// ``isTransient`` (try again later, keep the tokens) and ``requiresReauthorization``
/// (the user has to sign in again).
///
/// An error never carries a token, a code, a verifier, a password or a client secret in
/// its message.
public struct OAuth2Error: Error, Sendable, CustomStringConvertible {
    /// Where an error comes from.
    public enum Source: String, Sendable, Hashable {
        /// The authorization server (or resource server) answered with an error.
        case server
        /// The response or the callback failed one of the library's checks, or the
        /// configuration is unusable.
        case client
        /// The request did not complete: connection, TLS, timeout.
        case transport
    }

    /// The error code: an RFC 6749 §5.2 / §4.1.2.1 code (or an extension code) when the
    /// server sent one, else one of the library's own codes.
    public var code: Code
    /// Where the error comes from.
    public var source: Source
    /// A human-readable explanation: the server's `error_description`, or the library's.
    public var message: String?
    /// The server's `error_uri`, when it sent one.
    public var uri: String?
    /// The HTTP status of the response that carried the error, if any.
    public var statusCode: Int?
    /// How long the server asked the client to wait (`Retry-After`), in seconds.
    public var retryAfter: TimeInterval?
    /// The error code exactly as the server spelled it, when the library mapped it to
    /// another code (Glewlwyd's `scope_invalid` becomes ``Code/invalidScope``).
    public var serverCode: String?
    /// The lower-level error (URLError, NIO or TLS errors), when there is one.
    public var underlyingError: (any Error & Sendable)?
    /// For ``Code/timeout`` of an exchange: the request deadline that ran out.
    public var deadline: Duration?
    /// For ``Code/signInRequired``: why the session cannot go on without a sign-in.
    public var signInReason: SignInReason?

    /// Why a ``TokenSession`` needs a new sign-in (``Code/signInRequired``).
    public enum SignInReason: String, Sendable, Hashable {
        /// The store holds no tokens for the session.
        case noTokens
        /// The access token expired and there is no refresh token to renew it.
        case noRefreshToken
        /// The server refused the refresh token (``serverCode`` says how); the tokens were
        /// removed.
        case refreshTokenRefused
        /// Another process or replica removed the session's record from a shared store
        /// (``TokenStoreChangeObserving``): a sign-out elsewhere.
        case signedOutElsewhere
    }
    /// `true` when the server sent no error object and the code was inferred from the
    /// HTTP status alone.
    var inferredFromStatus = false

    /// Creates an error.
    public init(
        _ code: Code,
        source: Source,
        message: String? = nil,
        uri: String? = nil,
        statusCode: Int? = nil,
        retryAfter: TimeInterval? = nil,
        serverCode: String? = nil,
        underlyingError: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.source = source
        self.message = message
        self.uri = uri
        self.statusCode = statusCode
        self.retryAfter = retryAfter
        self.serverCode = serverCode
        self.underlyingError = underlyingError
    }

    /// `true` when trying again later may succeed and the tokens in hand must be kept:
    /// network failures, timeouts, HTTP 5xx, HTTP 429, `server_error` and
    /// `temporarily_unavailable`.
    public var isTransient: Bool {
        switch code {
        case .network, .timeout, .serverError, .temporarilyUnavailable, .slowDown:
            return true
        default:
            break
        }
        if let statusCode, statusCode == 429 || (500...599).contains(statusCode) {
            return true
        }
        return false
    }

    /// `true` when the grant in hand is dead and the user has to authorize again:
    /// `invalid_grant`, `access_denied`, `expired_token`, `login_required`,
    /// `consent_required`, `interaction_required`, `account_selection_required`, and the
    /// library's ``Code/signInRequired``.
    public var requiresReauthorization: Bool {
        switch code {
        case .invalidGrant, .accessDenied, .expiredToken, .loginRequired, .consentRequired,
            .interactionRequired, .accountSelectionRequired, .signInRequired:
            return true
        default:
            return false
        }
    }

    /// One line: code, source, HTTP status and message. Never contains a secret.
    public var description: String {
        var text = "OAuth2Error.\(code.rawValue)"
        if let serverCode, serverCode != code.rawValue { text += " (server said \"\(serverCode)\")" }
        if let statusCode { text += " [HTTP \(statusCode)]" }
        if let message, !message.isEmpty { text += ": \(message)" }
        if let retryAfter { text += " (retry after \(Int(retryAfter.rounded(.up))) s)" }
        return text
    }
}

extension OAuth2Error {
    /// A stable error code. RFC codes keep their registered spelling; the library's own
    /// codes are spelled in the same `snake_case` style.
    public struct Code: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral,
        CustomStringConvertible
    {
        /// The code's spelling.
        public let rawValue: String
        /// Creates a code from its spelling.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a code from a string literal.
        public init(stringLiteral value: String) { self.rawValue = value }
        /// The code's spelling.
        public var description: String { rawValue }

        // RFC 6749 §5.2 (token endpoint)
        /// `invalid_request`
        public static let invalidRequest: Code = "invalid_request"
        /// `invalid_client`
        public static let invalidClient: Code = "invalid_client"
        /// `invalid_grant`
        public static let invalidGrant: Code = "invalid_grant"
        /// `unauthorized_client`
        public static let unauthorizedClient: Code = "unauthorized_client"
        /// `unsupported_grant_type`
        public static let unsupportedGrantType: Code = "unsupported_grant_type"
        /// `invalid_scope`
        public static let invalidScope: Code = "invalid_scope"
        // RFC 6749 §4.1.2.1 (authorization endpoint)
        /// `access_denied`
        public static let accessDenied: Code = "access_denied"
        /// `unsupported_response_type`
        public static let unsupportedResponseType: Code = "unsupported_response_type"
        /// `server_error`
        public static let serverError: Code = "server_error"
        /// `temporarily_unavailable`
        public static let temporarilyUnavailable: Code = "temporarily_unavailable"
        // RFC 6750 (resource servers)
        /// `invalid_token`
        public static let invalidToken: Code = "invalid_token"
        /// `insufficient_scope`
        public static let insufficientScope: Code = "insufficient_scope"
        // RFC 8628 (device flow)
        /// `authorization_pending`
        public static let authorizationPending: Code = "authorization_pending"
        /// `slow_down`
        public static let slowDown: Code = "slow_down"
        /// `expired_token`
        public static let expiredToken: Code = "expired_token"
        // OpenID Connect CIBA Core §13 (backchannel authentication)
        /// `expired_login_hint_token`: the `login_hint_token` has expired.
        public static let expiredLoginHintToken: Code = "expired_login_hint_token"
        /// `unknown_user_id`: the server cannot tell which user the hint names.
        public static let unknownUserID: Code = "unknown_user_id"
        /// `missing_user_code`: the server requires a `user_code` the request lacks.
        public static let missingUserCode: Code = "missing_user_code"
        /// `invalid_user_code`: the `user_code` is wrong.
        public static let invalidUserCode: Code = "invalid_user_code"
        /// `invalid_binding_message`: the `binding_message` is too long or not allowed.
        public static let invalidBindingMessage: Code = "invalid_binding_message"
        // RFC 9449 (DPoP)
        /// `invalid_dpop_proof`
        public static let invalidDPoPProof: Code = "invalid_dpop_proof"
        /// `use_dpop_nonce`
        public static let useDPoPNonce: Code = "use_dpop_nonce"
        /// The library's own: a token requested with a DPoP proof came back as a Bearer
        /// token, which ``DPoPOptions/allowsBearerTokens`` does not allow.
        public static let unboundToken: Code = "unbound_token"
        // RFC 9126 / RFC 9101
        /// `invalid_request_uri`
        public static let invalidRequestURI: Code = "invalid_request_uri"
        /// `invalid_request_object`
        public static let invalidRequestObject: Code = "invalid_request_object"
        // OpenID Connect Core §3.1.2.6
        /// `interaction_required`
        public static let interactionRequired: Code = "interaction_required"
        /// `login_required`
        public static let loginRequired: Code = "login_required"
        /// `account_selection_required`
        public static let accountSelectionRequired: Code = "account_selection_required"
        /// `consent_required`
        public static let consentRequired: Code = "consent_required"
        // RFC 8693
        /// `invalid_target`
        public static let invalidTarget: Code = "invalid_target"
        // RFC 7591 §3.2.2 (dynamic client registration)
        /// `invalid_redirect_uri`: a registered redirect URI is refused.
        public static let invalidRedirectURI: Code = "invalid_redirect_uri"
        /// `invalid_client_metadata`: a metadata member is invalid (also the library's
        /// answer to metadata it refuses to send).
        public static let invalidClientMetadata: Code = "invalid_client_metadata"
        /// `invalid_software_statement`
        public static let invalidSoftwareStatement: Code = "invalid_software_statement"
        /// `unapproved_software_statement`
        public static let unapprovedSoftwareStatement: Code = "unapproved_software_statement"

        // The library's own codes.
        /// The configuration cannot work (missing client id, bad redirect URI, …).
        public static let invalidConfiguration: Code = "invalid_configuration"
        /// An endpoint is not HTTPS and not on a loopback host.
        public static let insecureEndpoint: Code = "insecure_endpoint"
        /// The server's metadata has no endpoint for the requested operation.
        public static let missingEndpoint: Code = "missing_endpoint"
        /// The `state` of an authorization response is missing or differs from the one sent.
        public static let stateMismatch: Code = "state_mismatch"
        /// An `issuer` (in a metadata document or an RFC 9207 `iss` parameter) is missing or
        /// differs from the expected one.
        public static let issuerMismatch: Code = "issuer_mismatch"
        /// The callback did not arrive at the registered redirect URI.
        public static let redirectMismatch: Code = "redirect_mismatch"
        /// A response could not be understood, or lacks a required member.
        public static let invalidResponse: Code = "invalid_response"
        /// An ID token failed validation (signature, issuer, audience, expiry, nonce…);
        /// ``OAuth2Error/joseReason`` says which check. No token of that response is used.
        public static let invalidIDToken: Code = "invalid_id_token"
        /// A UserInfo response failed validation (its `sub`, or its signature when signed).
        public static let invalidUserInfo: Code = "invalid_userinfo"
        /// A JWT introspection answer (RFC 9701) failed validation (its content type, signature,
        /// `iss`, `aud`, `iat` or `token_introspection` claim); ``OAuth2Error/joseReason`` says
        /// which check when it was a JWT one.
        public static let invalidIntrospectionResponse: Code = "invalid_introspection_response"
        /// A JWT-secured authorization response (JARM) failed validation (its decryption,
        /// signature, `iss`, `aud` or `exp`), or a plain response came where a JWT was asked
        /// for (a downgrade); ``OAuth2Error/joseReason`` says which JWT check. The JWT is never
        /// echoed, and no code of it reaches the token endpoint.
        public static let invalidAuthorizationResponse: Code = "invalid_authorization_response"
        /// A non-success HTTP status without a usable error object.
        public static let httpError: Code = "http_error"
        /// The connection failed (refused, reset, DNS, closed early).
        public static let network: Code = "network"
        /// The request timed out.
        public static let timeout: Code = "timeout"
        /// TLS failed: an untrusted or invalid certificate, a handshake failure.
        public static let tls: Code = "tls"
        /// The operation was cancelled.
        public static let cancelled: Code = "cancelled"
        /// The user ended an interactive sign-in before it completed: closed the web
        /// authentication sheet (`ASWebAuthenticationSession`), or refused to let the app open
        /// the provider's page. Not a failure to report; nothing reached the token endpoint.
        public static let userCancelled: Code = "user_cancelled"
        /// A ``TokenSession`` has no usable grant: it has no tokens, no refresh token, or the
        /// server refused its refresh token (then ``OAuth2Error/serverCode`` says how, and the
        /// session's tokens have been removed). The user has to sign in again.
        public static let signInRequired: Code = "sign_in_required"
        /// A protected resource's metadata names another resource than the URL it was
        /// discovered from (RFC 9728 §3.3): an impersonation attempt, refused.
        public static let resourceMismatch: Code = "resource_mismatch"
        /// A resource's challenge points its metadata (`resource_metadata`) to another origin
        /// than the resource's own: refused, lest another party choose the resource's
        /// authorization server.
        public static let metadataOriginMismatch: Code = "metadata_origin_mismatch"
        /// A protected resource's metadata lists no authorization server the client can use
        /// (`authorization_servers` missing, empty, or without the one asked for).
        public static let noAuthorizationServer: Code = "no_authorization_server"

        /// Whether this is a code the library declares (above): one of RFC 6749 and its
        /// extensions, OpenID Connect's, or the library's own — `false` for any other word a
        /// server sent. A page may name a declared code to the person at the browser; anything
        /// else is someone's free text (a callback's `error` is whatever its URL says).
        public var isDeclared: Bool { Self.declared.contains(self) }

        /// Every code declared above.
        static let declared: Set<Code> = [
            .invalidRequest, .invalidClient, .invalidGrant, .unauthorizedClient, .unsupportedGrantType,
            .invalidScope, .accessDenied, .unsupportedResponseType, .serverError, .temporarilyUnavailable,
            .invalidToken, .insufficientScope, .authorizationPending, .slowDown, .expiredToken,
            .invalidDPoPProof, .useDPoPNonce, .unboundToken, .invalidRequestURI, .invalidRequestObject,
            .interactionRequired, .loginRequired, .accountSelectionRequired, .consentRequired,
            .invalidTarget, .invalidRedirectURI, .invalidClientMetadata, .invalidSoftwareStatement,
            .unapprovedSoftwareStatement, .invalidConfiguration, .insecureEndpoint, .missingEndpoint,
            .stateMismatch, .issuerMismatch, .redirectMismatch, .invalidResponse, .invalidIDToken,
            .invalidUserInfo, .invalidIntrospectionResponse, .invalidAuthorizationResponse, .httpError, .network, .timeout, .tls, .cancelled, .userCancelled, .signInRequired,
            .resourceMismatch, .metadataOriginMismatch, .noAuthorizationServer,
            .expiredLoginHintToken, .unknownUserID, .missingUserCode, .invalidUserCode, .invalidBindingMessage,
        ]
    }
}

extension OAuth2Error {
    /// Codes some servers send under a non-standard name, mapped to the registered one.
    static let serverCodeAliases: [String: Code] = [
        "scope_invalid": .invalidScope,  // Glewlwyd
        "invalid_scopes": .invalidScope,
        "client_invalid": .invalidClient,
        "grant_invalid": .invalidGrant,
        "invalid_code": .invalidGrant,  // Glewlwyd, for a wrong code or code_verifier
        "unsupported_grant": .unsupportedGrantType,
        "bad_verification_code": .invalidGrant,  // GitHub: a wrong or expired authorization code
        "bad_refresh_token": .invalidGrant,  // GitHub: a dead refresh token
        "incorrect_device_code": .invalidGrant,  // GitHub: an unknown device code
        "device_not_found": .invalidGrant,  // django-oauth-toolkit: an unknown device code
        "incorrect_client_credentials": .invalidClient,  // GitHub
    ]

    /// Builds an error from an RFC 6749 error object (`error`, `error_description`,
    /// `error_uri`).
    static func fromServer(
        error rawCode: String,
        description: String?,
        uri: String?,
        statusCode: Int?,
        retryAfter: TimeInterval?
    ) -> OAuth2Error {
        let normalized = rawCode.trimmingCharacters(in: .whitespaces)
        guard Redactor.isValidErrorCode(normalized) else {
            // Not echoed: it could carry anything, a forged log line included.
            return OAuth2Error(
                .invalidResponse, source: .server,
                message: "The server answered with an error code outside RFC 6749's character set (§5.2).",
                statusCode: statusCode, retryAfter: retryAfter)
        }
        let code = serverCodeAliases[normalized.lowercased()] ?? Code(rawValue: normalized)
        return OAuth2Error(
            code,
            source: .server,
            message: description.map { Redactor.sanitizeServerText($0) },
            uri: uri.map { Redactor.sanitizeServerText($0) },
            statusCode: statusCode,
            retryAfter: retryAfter,
            serverCode: code.rawValue == normalized ? nil : normalized
        )
    }

    /// This error with every secret of `secrets` replaced by ``Redactor/placeholder`` in
    /// the text the server supplied (message, URI, server code).
    func withholding(_ secrets: HeldSecrets) -> OAuth2Error {
        guard !secrets.isEmpty else { return self }
        var error = self
        error.message = message.map(secrets.scrub)
        error.uri = uri.map(secrets.scrub)
        error.serverCode = serverCode.map(secrets.scrub)
        return error
    }

    static func client(_ code: Code, _ message: String) -> OAuth2Error {
        OAuth2Error(code, source: .client, message: message)
    }

    static func invalidResponse(_ message: String, statusCode: Int? = nil) -> OAuth2Error {
        OAuth2Error(.invalidResponse, source: .client, message: message, statusCode: statusCode)
    }
}
