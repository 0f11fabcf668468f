import HTTPTypes

/// Why ``BackchannelPingInbox`` refused a request to the client notification endpoint
/// (OpenID Connect CIBA Core §10.2), and how to answer it.
///
/// Neither ``message`` nor ``description`` holds a token or an `auth_req_id`: they name the
/// rule that failed. A request without a valid bearer token learns only that (401), never
/// what else the endpoint checks.
public struct BackchannelPingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What failed. An open set: switch over it with a `default`.
    public struct Reason: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The reason's name.
        public let rawValue: String
        /// Creates a reason.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a reason from a literal.
        public init(stringLiteral value: String) { self.rawValue = value }
        /// The name.
        public var description: String { rawValue }

        /// The method is not POST (405).
        public static let methodNotAllowed: Reason = "method_not_allowed"
        /// No `Authorization: Bearer` field (401).
        public static let missingToken: Reason = "missing_token"
        /// The bearer token names no pending request, or is malformed (401, `invalid_token`).
        public static let unknownToken: Reason = "unknown_token"
        /// The body is not `application/json` (415).
        public static let unsupportedMediaType: Reason = "unsupported_media_type"
        /// The body is larger than ``BackchannelPingInbox/maximumBodySize`` (413).
        public static let bodyTooLarge: Reason = "body_too_large"
        /// The body is not one strict JSON object with a string `auth_req_id` (400).
        public static let malformedRequest: Reason = "malformed_request"
        /// The `auth_req_id` is not the one of the request the bearer token names (400).
        public static let unknownRequest: Reason = "unknown_request"
    }

    /// What failed.
    public let reason: Reason
    /// A sentence naming the rule that failed (no token, no `auth_req_id`).
    public let message: String

    /// Creates an error.
    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    /// The status to answer with: 401 for a missing or unknown bearer token, 405, 413, 415,
    /// else 400.
    public var status: HTTPResponse.Status {
        switch reason {
        case .missingToken, .unknownToken: .unauthorized
        case .methodNotAllowed: .methodNotAllowed
        case .bodyTooLarge: .contentTooLarge
        case .unsupportedMediaType: .unsupportedMediaType
        default: .badRequest
        }
    }

    /// The `WWW-Authenticate` field of a 401 (RFC 6750 §3): `Bearer`, with
    /// `error="invalid_token"` when a token was sent; `nil` for the other statuses.
    public var challenge: String? {
        switch reason {
        case .missingToken: "Bearer"
        case .unknownToken: #"Bearer error="invalid_token""#
        default: nil
        }
    }

    /// The reason and the message.
    public var description: String { "BackchannelPingError(\(reason.rawValue)): \(message)" }
}
