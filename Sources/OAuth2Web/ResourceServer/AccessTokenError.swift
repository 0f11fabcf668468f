import HTTPTypes
import OAuth2JOSE

/// Why a request to a protected resource was refused: an RFC 6750 / RFC 9449 error code,
/// a finer reason for logs and tests, and a description that is safe to send and to log.
///
/// Neither ``message`` nor ``description`` ever holds token or proof material: they name
/// the rule that failed, not the value that failed it.
///
/// ``ResourceServer/authorize(_:clientCertificate:requiredScopes:requiredAuthorizationDetails:)`` turns it into a response
/// (``AccessTokenChallenge``); ``status`` is the status that response has.
public struct AccessTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error code sent in `WWW-Authenticate` (RFC 6750 §3.1, RFC 9449 §7.1, §9), plus
    /// two local codes that are not sent: ``missingToken`` and ``temporarilyUnavailable``.
    /// An open set: switch over it with a `default`.
    public struct Code: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// Creates a code.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a code from a literal.
        public init(stringLiteral value: String) { self.rawValue = value }
        /// The name.
        public var description: String { rawValue }

        /// The request carries no access token (RFC 6750 §3.1: the challenge then has no
        /// `error`). Status 401.
        public static let missingToken: Code = "missing_token"
        /// `invalid_request`: a malformed `Authorization` header, several of them, or a
        /// token in an unsupported place. Status 400.
        public static let invalidRequest: Code = "invalid_request"
        /// `invalid_token`: expired, revoked, malformed, from an untrusted issuer, for
        /// another audience, with a bad signature, or bound to a key the request does not
        /// prove. Status 401.
        public static let invalidToken: Code = "invalid_token"
        /// `insufficient_scope`: the token lacks a scope the resource requires. Status 403.
        public static let insufficientScope: Code = "insufficient_scope"
        /// `invalid_dpop_proof`: the DPoP proof is missing, malformed, or fails a check of
        /// RFC 9449 §4.3. Status 401.
        public static let invalidDPoPProof: Code = "invalid_dpop_proof"
        /// `use_dpop_nonce`: the proof lacks the server's current nonce; the response
        /// carries a `DPoP-Nonce` header to retry with (RFC 9449 §9). Status 401.
        public static let useDPoPNonce: Code = "use_dpop_nonce"
        /// The token could not be checked now (the introspection endpoint or the JWK set
        /// cannot be reached and nothing usable is cached). Not the token's fault: status
        /// 503, no `error` sent.
        public static let temporarilyUnavailable: Code = "temporarily_unavailable"

        /// Whether this code goes into the `error` parameter of a challenge.
        public var isSentToClient: Bool { self != .missingToken && self != .temporarilyUnavailable }
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

        /// A JOSE check failed; the JOSE reason (`signature_invalid`, `expired`…) is this
        /// reason's name.
        public init(_ jose: JOSEError.Reason) { self.rawValue = jose.rawValue }

        /// The request has no access token.
        public static let missingToken: Reason = "missing_token"
        /// A token, proof or header is not well-formed, or too large.
        public static let malformed: Reason = "malformed"
        /// `typ` is not `at+jwt` (RFC 9068 §4) or not `dpop+jwt` (RFC 9449 §4.3).
        public static let typeMismatch: Reason = "typ_mismatch"
        /// `nbf` is in the future.
        public static let notYetValid: Reason = "not_yet_valid"
        /// A required claim is missing (`sub`, `client_id`, `jti`, `htm`…).
        public static let missingClaim: Reason = "missing_claim"
        /// The introspection endpoint says the token is not active.
        public static let inactive: Reason = "inactive"
        /// The token's format is not accepted (an opaque token without introspection).
        public static let unsupportedFormat: Reason = "unsupported_format"
        /// The token is DPoP-bound but was sent as a bearer token, or is not bound but was
        /// sent with the DPoP scheme, or bearer tokens are not accepted.
        public static let bindingMismatch: Reason = "binding_mismatch"
        /// `cnf.jkt` is not the thumbprint of the proof's key, or `cnf.x5t#S256` not the thumbprint of the presented certificate.
        public static let confirmationMismatch: Reason = "cnf_mismatch"
        /// The proof's `htm` is not the request's method.
        public static let methodMismatch: Reason = "htm_mismatch"
        /// The proof's `htu` is not the request's URL (built from the public base URL).
        public static let urlMismatch: Reason = "htu_mismatch"
        /// The proof's `ath` is not the hash of the access token.
        public static let accessTokenHashMismatch: Reason = "ath_mismatch"
        /// The proof's `jti` was seen before.
        public static let replayed: Reason = "replayed"
        /// The proof has no nonce, or an expired or unknown one.
        public static let nonceRequired: Reason = "nonce_required"
        /// The proof's `jwk` is missing, private, symmetric or unusable.
        public static let invalidProofKey: Reason = "invalid_jwk"
        /// The token lacks a required scope.
        public static let missingScope: Reason = "missing_scope"
        /// The token's `authorization_details` (RFC 9396) do not cover what the resource requires.
        public static let missingAuthorizationDetails: Reason = "missing_authorization_details"
        /// Introspection says the token is another kind of token (a refresh token).
        public static let notAnAccessToken: Reason = "not_access_token"
        /// A key set, introspection answer or replay record could not be obtained in time.
        public static let unavailable: Reason = "unavailable"
    }

    /// The code sent to the client.
    public var code: Code
    /// The finer reason.
    public var reason: Reason
    /// What was wrong, for people; sent as `error_description`. Never holds a token.
    public var message: String
    /// The scopes the resource requires, sent as the challenge's `scope`: for
    /// ``Code/insufficientScope`` the scopes to ask for (RFC 6750 §3.1); ``ResourceServer``
    /// sets the route's scopes on every refusal, so that a 401 names them too.
    public var requiredScopes: [String]
    /// For ``Code/useDPoPNonce`` (and whenever the client should switch to a fresh nonce):
    /// the nonce to send back in a `DPoP-Nonce` header.
    public var dpopNonce: String?
    /// The authentication scheme of the refused request (`nil` when it had none): the
    /// challenge carrying the error uses it.
    public var scheme: AccessTokenScheme?

    /// Creates an error.
    public init(_ code: Code, reason: Reason, _ message: String, requiredScopes: [String] = [], dpopNonce: String? = nil) {
        self.code = code
        self.reason = reason
        self.message = message
        self.requiredScopes = requiredScopes
        self.dpopNonce = dpopNonce
    }

    /// The response status for this error: 400 for `invalid_request`, 403 for
    /// `insufficient_scope`, 503 when the token could not be checked, 401 otherwise.
    public var status: HTTPResponse.Status {
        switch code {
        case .invalidRequest: return .badRequest
        case .insufficientScope: return .forbidden
        case .temporarilyUnavailable: return .serviceUnavailable
        default: return .unauthorized
        }
    }

    /// `code (reason): message`.
    public var description: String { "\(code) (\(reason)): \(message)" }

    static func invalidToken(_ reason: Reason, _ message: String) -> AccessTokenError {
        AccessTokenError(.invalidToken, reason: reason, message)
    }

    /// A parse failure of the token, described by its reason only: a `JOSEError`'s message
    /// may quote a member name of the token, which must not be echoed back.
    static func invalidToken(_ jose: JOSEError) -> AccessTokenError {
        AccessTokenError(.invalidToken, reason: Reason(jose.reason), "The access token \(parseFailure(jose.reason)).")
    }

    /// A parse failure of a DPoP proof, described by its reason only.
    static func invalidProof(_ jose: JOSEError) -> AccessTokenError {
        AccessTokenError(.invalidDPoPProof, reason: Reason(jose.reason), "The DPoP proof \(parseFailure(jose.reason)).")
    }

    private static func parseFailure(_ reason: JOSEError.Reason) -> String {
        switch reason {
        case .duplicateMember: return "names a member twice"
        case .unsupportedCritical: return "lists critical header extensions that are not supported"
        default: return "is not a well-formed compact JWS with a JSON object payload"
        }
    }

    static func invalidProof(_ reason: Reason, _ message: String) -> AccessTokenError {
        AccessTokenError(.invalidDPoPProof, reason: reason, message)
    }
}
