import Foundation
import HTTPTypes

/// A device authorization response (RFC 8628 §3.2): what the user is shown, and the
/// device code the client polls the token endpoint with.
///
/// Show ``userCode`` and ``verificationURI`` (or ``verificationURIComplete``, which
/// carries the code, as a link or QR code), then poll with
/// ``OAuth2Client/pollDeviceToken(_:clock:progress:)``. The device code is a secret: the
/// `description` redacts it, and it never appears in a log line or an error message.
public struct DeviceAuthorization: Sendable, Hashable, CustomStringConvertible {
    /// The device verification code (`device_code`), a secret presented at the token
    /// endpoint while polling.
    public let deviceCode: String
    /// The code the user enters at the verification URI (`user_code`).
    public let userCode: String
    /// Where the user goes to enter the code (`verification_uri`).
    public let verificationURI: URL
    /// The verification URI with the user code in it (`verification_uri_complete`), for a
    /// link or a QR code; `nil` when the server sent none.
    public let verificationURIComplete: URL?
    /// When the device code expires: the request's send time plus `expires_in`.
    public let expiresAt: Date
    /// The minimum number of seconds between two polls (`interval`; 5 when the server
    /// sends none, as RFC 8628 §3.2 says).
    public let interval: TimeInterval
    /// The scopes asked for in the device authorization request.
    public let scopes: [String]
    /// The server's own instructions for the user, when it sends any (`message`, as
    /// Microsoft Entra ID does).
    public let message: String?
    /// Every other member of the response.
    public let additionalFields: [String: JSONValue]

    /// The interval RFC 8628 §3.2 prescribes when the server names none: 5 seconds.
    public static let defaultInterval: TimeInterval = 5

    /// Creates a device authorization by hand (tests, a test provider, a stored flow).
    public init(
        deviceCode: String,
        userCode: String,
        verificationURI: URL,
        verificationURIComplete: URL? = nil,
        expiresAt: Date,
        interval: TimeInterval = DeviceAuthorization.defaultInterval,
        scopes: [String] = [],
        message: String? = nil,
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.deviceCode = deviceCode
        self.userCode = userCode
        self.verificationURI = verificationURI
        self.verificationURIComplete = verificationURIComplete
        self.expiresAt = expiresAt
        self.interval = interval
        self.scopes = scopes
        self.message = message
        self.additionalFields = additionalFields
    }

    /// The URL to encode in a QR code or open: ``verificationURIComplete`` when the server
    /// sent one, else ``verificationURI``.
    public var preferredVerificationURI: URL { verificationURIComplete ?? verificationURI }

    /// Parses a device authorization response (RFC 8628 §3.2), JSON or form-encoded (GitHub
    /// without `Accept: application/json`).
    ///
    /// Lenient where providers deviate: `expires_in` and `interval` may be strings, and
    /// Google's older `verification_url` stands for `verification_uri`. An interval below one
    /// second is raised to one second, so a broken server cannot make the client poll in a
    /// tight loop.
    ///
    /// - Parameters:
    ///   - response: the HTTP response.
    ///   - body: the response body.
    ///   - requestedScopes: the scopes of the request, kept in ``scopes``.
    ///   - sentAt: when the request was sent; `expires_in` counts from then, so the expiry
    ///     errs early rather than late.
    /// - Throws: the server's error (typed, also from an HTTP 200 or an empty 4xx body);
    ///   ``OAuth2Error/Code/invalidResponse`` when the body is neither JSON nor form data, or
    ///   `device_code`, `user_code`, `verification_uri` or `expires_in` is missing or
    ///   malformed; ``OAuth2Error/Code/insecureEndpoint`` when a verification URI is plain
    ///   HTTP on a host that is not loopback. No message contains the device code.
    public static func parse(
        response: HTTPResponse,
        body: Data,
        requestedScopes: [String] = [],
        sentAt: Date
    ) throws(OAuth2Error) -> DeviceAuthorization {
        let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
        if let error = ResponseParsing.error(in: response, members: members, kind: .deviceAuthorization, now: sentAt) {
            throw error
        }
        guard let members else {
            throw .invalidResponse("The device authorization response is neither JSON nor form data.", statusCode: response.status.code)
        }
        func requiredString(_ name: String) throws(OAuth2Error) -> String {
            guard let value = members[name]?.stringValue, !value.isEmpty else {
                throw .invalidResponse("The device authorization response has no \(name).", statusCode: response.status.code)
            }
            return value
        }
        let deviceCode = try requiredString("device_code")
        let userCode = try requiredString("user_code")
        let verificationName = members["verification_uri"] == nil && members["verification_url"] != nil ? "verification_url" : "verification_uri"
        let verificationURI = try verificationURL(try requiredString(verificationName), name: verificationName)
        var verificationURIComplete: URL?
        if let value = members["verification_uri_complete"], value != .null {
            guard let text = value.stringValue else {
                throw .invalidResponse("The verification_uri_complete member is not a string.")
            }
            verificationURIComplete = try verificationURL(text, name: "verification_uri_complete")
        }
        guard let expiresIn = ResponseParsing.number(members["expires_in"]), expiresIn > 0, expiresIn < 1e9 else {
            throw .invalidResponse("The device authorization response has no usable expires_in.", statusCode: response.status.code)
        }
        var interval = defaultInterval
        if let value = members["interval"], value != .null {
            guard let seconds = ResponseParsing.number(value), seconds >= 0, seconds < 1e6 else {
                throw .invalidResponse("The interval member is not a number of seconds.")
            }
            interval = max(1, seconds)
        }
        let known: Set<String> = [
            "device_code", "user_code", "verification_uri", "verification_url", "verification_uri_complete",
            "expires_in", "interval", "message",
        ]
        return DeviceAuthorization(
            deviceCode: deviceCode,
            userCode: userCode,
            verificationURI: verificationURI,
            verificationURIComplete: verificationURIComplete,
            expiresAt: sentAt.addingTimeInterval(expiresIn),
            interval: interval,
            scopes: requestedScopes,
            message: members["message"]?.stringValue.map { Redactor.sanitizeServerText($0) },
            additionalFields: members.filter { !known.contains($0.key) }
        )
    }

    /// An absolute http(s) URL that passes the ``EndpointPolicy`` (the user types their
    /// password there).
    private static func verificationURL(_ text: String, name: String) throws(OAuth2Error) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            url.host?.isEmpty == false
        else {
            throw .invalidResponse("The \(name) is not an absolute http(s) URL.")
        }
        try EndpointPolicy.validate(url, name: name.replacingOccurrences(of: "_", with: " "))
        return url
    }

    /// The user code, the verification URI and the expiry; the device code is redacted.
    public var description: String {
        "DeviceAuthorization(deviceCode: \(Redactor.placeholder), userCode: \(userCode), "
            + "verificationURI: \(verificationURI.absoluteString), expiresAt: \(expiresAt), interval: \(interval))"
    }
}

/// What happens while ``OAuth2Client/pollDeviceToken(_:clock:progress:)`` polls, for a
/// progress display.
public enum DevicePollEvent: Sendable, Hashable {
    /// The client waits `seconds` before its next poll (number `attempt`, from 1).
    case waiting(seconds: TimeInterval, attempt: Int)
    /// The server answered `authorization_pending`: the user has not approved yet.
    case authorizationPending(attempt: Int)
    /// The server answered `slow_down`; polls are now at least `interval` seconds apart.
    case slowDown(interval: TimeInterval)
    /// A poll failed in a way that may pass (network failure, timeout, 5xx, 429: `code`);
    /// the interval is doubled to `interval` seconds (RFC 8628 §3.5) and polling goes on.
    case retrying(code: OAuth2Error.Code, interval: TimeInterval)
}
