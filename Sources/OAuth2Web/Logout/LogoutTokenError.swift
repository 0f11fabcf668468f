import HTTPTypes
import OAuth2JOSE

/// Why a back-channel logout request was refused: an error code for the response body, a
/// finer reason for logs and tests, and a description that is safe to send and to log.
///
/// Neither ``message`` nor ``description`` ever holds token material: they name the rule
/// that failed, not the value that failed it.
///
/// ``BackChannelLogoutEndpoint`` turns it into the response OpenID Connect Back-Channel
/// Logout 1.0 §2.8 asks for: 400 with a JSON body `{"error": …, "error_description": …}` and
/// `Cache-Control: no-store` (405 for a method other than POST).
public struct LogoutTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `error` member of the response body. The specification names no codes; these
    /// follow OAuth 2.0's. An open set: switch over it with a `default`.
    public struct Code: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// Creates a code.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a code from a literal.
        public init(stringLiteral value: String) { self.rawValue = value }
        /// The name.
        public var description: String { rawValue }

        /// `invalid_request`: the request is not a back-channel logout request (method,
        /// content type, no `logout_token`), or its logout token fails a check of §2.6.
        public static let invalidRequest: Code = "invalid_request"
        /// `temporarily_unavailable`: the token could not be checked now (the issuer's keys
        /// or the replay store cannot be reached). Not the token's fault, but §2.8 still
        /// asks for a 400.
        public static let temporarilyUnavailable: Code = "temporarily_unavailable"
        /// `logout_failed`: the token is valid but the application could not end the
        /// sessions it names (its closure threw).
        public static let logoutFailed: Code = "logout_failed"
    }

    /// A finer reason than the code, for logs, metrics and tests (never sent). An open set.
    public struct Reason: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The reason's name.
        public let rawValue: String
        /// Creates a reason.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a reason from a literal.
        public init(stringLiteral value: String) { self.rawValue = value }
        /// The name.
        public var description: String { rawValue }

        /// A JOSE check failed; the JOSE reason (`signature_invalid`, `iat_invalid`…) is this
        /// reason's name.
        public init(_ jose: JOSEError.Reason) { self.rawValue = jose.rawValue }

        /// The request's method is not POST.
        public static let methodNotAllowed: Reason = "method_not_allowed"
        /// The request's body is not `application/x-www-form-urlencoded`, or not valid form
        /// encoding, or too large.
        public static let malformedRequest: Reason = "malformed_request"
        /// The request has no `logout_token` parameter, or has it twice.
        public static let missingToken: Reason = "missing_token"
        /// The token is not a well-formed compact JWS with a JSON object payload, or is too
        /// large.
        public static let malformed: Reason = "malformed"
        /// The token's `typ` is present and is not `logout+jwt` (or, when it is required,
        /// missing).
        public static let typeMismatch: Reason = "typ_mismatch"
        /// A required claim is missing (`jti`, `iat`, `events`, or `exp` when required).
        public static let missingClaim: Reason = "missing_claim"
        /// `events` lacks the back-channel logout event, or its value is not a JSON object.
        public static let eventMissing: Reason = "event_missing"
        /// The token has neither `sub` nor `sid`.
        public static let subjectMissing: Reason = "sub_and_sid_missing"
        /// The token has a `nonce`, which a logout token must not have (§2.4).
        public static let nonceForbidden: Reason = "nonce_present"
        /// The token's `jti` was seen before.
        public static let replayed: Reason = "replayed"
        /// A key set or a replay record could not be obtained in time.
        public static let unavailable: Reason = "unavailable"
        /// The application's closure threw.
        public static let logoutFailed: Reason = "logout_failed"
    }

    /// The code sent in the response body.
    public var code: Code
    /// The finer reason.
    public var reason: Reason
    /// What was wrong, for people; sent as `error_description`. Never holds a token.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, reason: Reason, _ message: String) {
        self.code = code
        self.reason = reason
        self.message = message
    }

    /// The response status: 405 for a method other than POST, 400 otherwise (§2.8: "If the
    /// request was invalid or the logout failed, the RP MUST respond with HTTP 400").
    public var status: HTTPResponse.Status {
        reason == .methodNotAllowed ? .methodNotAllowed : .badRequest
    }

    /// `code (reason): message`.
    public var description: String { "\(code) (\(reason)): \(message)" }

    static func invalid(_ reason: Reason, _ message: String) -> LogoutTokenError {
        LogoutTokenError(.invalidRequest, reason: reason, message)
    }

    /// A parse failure of the token, described by its reason only: a `JOSEError`'s message
    /// may quote a member name of the token, which must not be echoed back.
    static func invalid(_ jose: JOSEError) -> LogoutTokenError {
        let text: String
        switch jose.reason {
        case .duplicateMember: text = "names a member twice"
        case .unsupportedCritical: text = "lists critical header extensions that are not supported"
        default: text = "is not a well-formed compact JWS with a JSON object payload"
        }
        return LogoutTokenError(.invalidRequest, reason: Reason(jose.reason), "The logout token \(text).")
    }
}
