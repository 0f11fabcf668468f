import Foundation

/// Why a JWS, a JWE, a JWK or a JWT was refused.
///
/// In `OAuth2`, ID-token and UserInfo failures surface as an `OAuth2Error` (code
/// `invalid_id_token` or `invalid_userinfo`) whose `underlyingError` is a `JOSEError`;
/// `OAuth2Error.joseReason` reads it.
/// Messages never contain a token or a key.
public struct JOSEError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, open set of reasons.
    public struct Reason: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The reason's name.
        public let rawValue: String
        /// Creates a reason.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a reason from a literal.
        public init(stringLiteral value: String) { self.rawValue = value }
        /// The name.
        public var description: String { rawValue }

        /// Not a well-formed compact JWS / JSON document / JWK, or too large.
        public static let malformed: Reason = "malformed"
        /// A JSON object names a member twice.
        public static let duplicateMember: Reason = "duplicate_member"
        /// The header lists a critical extension (`crit`) that is not understood.
        public static let unsupportedCritical: Reason = "unsupported_critical"
        /// `alg` is `none`, unknown, or outside the allowed set.
        public static let algorithmNotAllowed: Reason = "algorithm_not_allowed"
        /// No key of the key set fits the token's `kid`, `alg` and use, even after a refetch.
        public static let keyNotFound: Reason = "key_not_found"
        /// A key cannot be used (wrong size, not on the curve, private member missing…).
        public static let invalidKey: Reason = "invalid_key"
        /// A JWE cannot be decrypted with any of the recipient's keys (wrong key, forged or
        /// altered content): one reason for every cause, so that failures leak nothing.
        public static let decryptionFailed: Reason = "decryption_failed"
        /// The signature does not verify.
        public static let signatureInvalid: Reason = "signature_invalid"
        /// `iss` is missing or is not the issuer.
        public static let issuerMismatch: Reason = "issuer_mismatch"
        /// `aud` is missing or does not contain the client id.
        public static let audienceMismatch: Reason = "audience_mismatch"
        /// `aud` names an audience that is not trusted.
        public static let untrustedAudience: Reason = "untrusted_audience"
        /// `azp` is missing with several audiences, or is not the client id.
        public static let authorizedPartyMismatch: Reason = "azp_mismatch"
        /// `exp` is missing or in the past.
        public static let expired: Reason = "expired"
        /// `iat` is missing or in the future.
        public static let issuedAtInvalid: Reason = "iat_invalid"
        /// `sub` is missing, or differs from the session's subject.
        public static let subjectMismatch: Reason = "subject_mismatch"
        /// `nonce` is missing or is not the one sent.
        public static let nonceMismatch: Reason = "nonce_mismatch"
        /// `auth_time` is missing while `max_age` was requested, or too old.
        public static let authTimeInvalid: Reason = "auth_time_invalid"
        /// `at_hash` does not match the access token.
        public static let accessTokenHashMismatch: Reason = "at_hash_mismatch"
        /// `c_hash` does not match the authorization code.
        public static let codeHashMismatch: Reason = "c_hash_mismatch"
        /// A claim has the wrong JSON type.
        public static let invalidClaim: Reason = "invalid_claim"
    }

    /// Why.
    public var reason: Reason
    /// What was wrong, for people.
    public var message: String

    /// Creates an error.
    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    /// `reason: message`.
    public var description: String { "\(reason): \(message)" }
}
