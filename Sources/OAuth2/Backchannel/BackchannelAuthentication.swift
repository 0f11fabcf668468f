import Foundation
import HTTPTypes

/// A backchannel authentication response (OpenID Connect CIBA Core §7.3): the request the
/// server accepted, and how the client waits for the user's decision.
///
/// Show ``bindingMessage`` (the user sees the same text on their authentication device),
/// then poll with ``OAuth2Client/pollBackchannelToken(_:clock:progress:)`` (poll mode) or
/// wait with ``OAuth2Client/waitForBackchannelPing(_:inbox:clock:fallbackPollInterval:progress:)``
/// (ping mode). The
/// `auth_req_id` is a secret: the `description` redacts it, and it never appears in a log
/// line or an error message.
public struct BackchannelAuthentication: Sendable, Hashable, CustomStringConvertible {
    /// The request's identifier (`auth_req_id`), a secret presented at the token endpoint.
    public let authenticationRequestID: String
    /// When the request expires: the request's send time plus `expires_in`.
    public let expiresAt: Date
    /// The minimum number of seconds between two polls (`interval`; 5 when the server
    /// sends none, as CIBA Core §7.3 says).
    public let interval: TimeInterval
    /// The scopes asked for.
    public let scopes: [String]
    /// The binding message sent with the request, to show the user.
    public let bindingMessage: String?
    /// The `sub` of the request's `id_token_hint`, which the answer's ID token must name;
    /// `nil` for the other hints.
    public let expectedSubject: String?
    /// Every other member of the response.
    public let additionalFields: [String: JSONValue]
    /// The `client_notification_token` the request was sent with, in ping mode: the bearer
    /// token the server's ping carries. A secret: never in the `description`.
    public let clientNotificationToken: String?

    /// The interval CIBA Core §7.3 prescribes when the server names none: 5 seconds.
    public static let defaultInterval: TimeInterval = 5

    /// Creates a backchannel authentication by hand (tests, a stored flow).
    public init(
        authenticationRequestID: String,
        expiresAt: Date,
        interval: TimeInterval = BackchannelAuthentication.defaultInterval,
        scopes: [String] = ["openid"],
        bindingMessage: String? = nil,
        expectedSubject: String? = nil,
        additionalFields: [String: JSONValue] = [:],
        clientNotificationToken: String? = nil
    ) {
        self.authenticationRequestID = authenticationRequestID
        self.expiresAt = expiresAt
        self.interval = interval
        self.scopes = scopes
        self.bindingMessage = bindingMessage
        self.expectedSubject = expectedSubject
        self.additionalFields = additionalFields
        self.clientNotificationToken = clientNotificationToken
    }

    /// Parses a backchannel authentication response (CIBA Core §7.3, errors §13).
    ///
    /// Lenient where servers deviate: `expires_in` and `interval` may be strings. An
    /// interval below one second is raised to one second, so a broken server cannot make
    /// the client poll in a tight loop.
    ///
    /// - Parameters:
    ///   - response: the HTTP response.
    ///   - body: the response body.
    ///   - scopes: the scopes of the request, kept in ``scopes``.
    ///   - bindingMessage: the binding message of the request, kept in ``bindingMessage``.
    ///   - expectedSubject: the `sub` of the request's `id_token_hint`, if it had one.
    ///   - sentAt: when the request was sent; `expires_in` counts from then.
    /// - Throws: the server's error, typed (`invalid_request`, `unknown_user_id`,
    ///   `invalid_binding_message`, `invalid_client` — also for an empty 401 or 403 —…);
    ///   ``OAuth2Error/Code/invalidResponse`` when the body is not a JSON object or
    ///   `auth_req_id` or `expires_in` is missing or malformed. No message contains the
    ///   `auth_req_id`.
    public static func parse(
        response: HTTPResponse,
        body: Data,
        scopes: [String],
        bindingMessage: String? = nil,
        expectedSubject: String? = nil,
        sentAt: Date
    ) throws(OAuth2Error) -> BackchannelAuthentication {
        let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
        if let error = ResponseParsing.error(in: response, members: members, kind: .backchannelAuthentication, now: sentAt) {
            throw error
        }
        guard let members else {
            throw .invalidResponse("The backchannel authentication response is not a JSON object.", statusCode: response.status.code)
        }
        guard let id = members["auth_req_id"]?.stringValue, !id.isEmpty, id.count <= 4096,
            !id.contains(where: { $0.isWhitespace || $0.isNewline })
        else {
            throw .invalidResponse("The backchannel authentication response has no usable auth_req_id.", statusCode: response.status.code)
        }
        guard let expiresIn = ResponseParsing.number(members["expires_in"]), expiresIn > 0, expiresIn < 1e9 else {
            throw .invalidResponse("The backchannel authentication response has no usable expires_in.", statusCode: response.status.code)
        }
        var interval = defaultInterval
        if let value = members["interval"], value != .null {
            guard let seconds = ResponseParsing.number(value), seconds >= 0, seconds < 1e6 else {
                throw .invalidResponse("The interval member is not a number of seconds.")
            }
            interval = max(1, seconds)
        }
        let known: Set<String> = ["auth_req_id", "expires_in", "interval"]
        return BackchannelAuthentication(
            authenticationRequestID: id,
            expiresAt: sentAt.addingTimeInterval(expiresIn),
            interval: interval,
            scopes: scopes,
            bindingMessage: bindingMessage,
            expectedSubject: expectedSubject,
            additionalFields: members.filter { !known.contains($0.key) }
        )
    }

    /// The expiry, the interval and the binding message; the `auth_req_id` is redacted.
    public var description: String {
        "BackchannelAuthentication(authenticationRequestID: \(Redactor.placeholder), expiresAt: \(expiresAt), interval: \(interval)"
            + (bindingMessage.map { ", bindingMessage: \($0)" } ?? "") + ")"
    }
}

/// What happens while ``OAuth2Client/pollBackchannelToken(_:clock:progress:)`` polls: the
/// device flow's events (waiting, pending, slow down, retrying), with the same meaning.
public typealias BackchannelPollEvent = DevicePollEvent
