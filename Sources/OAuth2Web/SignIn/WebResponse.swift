import Foundation
import HTTPTypes
import OAuth2

/// A response for a framework adapter to send: status, header fields (`Location`,
/// `Set-Cookie`, `Cache-Control`) and body.
public struct WebResponse: Sendable, Hashable {
    /// The status.
    public var status: HTTPResponse.Status
    /// The header fields; `Set-Cookie` may appear several times.
    public var headerFields: HTTPFields
    /// The body (a short text for the person at the browser, or JSON for the provider).
    public var body: [UInt8]
    /// Why the request failed, when it did (for the app's own error page or log).
    public var error: WebSignInError?

    /// Creates a response. Its header fields get `X-Content-Type-Options: nosniff` unless
    /// they set that field: a browser then never reads a body as anything but its
    /// `Content-Type` says.
    public init(status: HTTPResponse.Status, headerFields: HTTPFields = [:], body: [UInt8] = [], error: WebSignInError? = nil) {
        self.status = status
        self.headerFields = Self.hardened(headerFields)
        self.body = body
        self.error = error
    }

    /// The response head: ``status`` and ``headerFields``.
    public var response: HTTPResponse { HTTPResponse(status: status, headerFields: headerFields) }

    /// `fields` with what every answer of the library carries: `X-Content-Type-Options:
    /// nosniff` unless they set that field. The one place it is added (the back-channel
    /// logout endpoint's answers use it too).
    package static func hardened(_ fields: HTTPFields) -> HTTPFields {
        var fields = fields
        if fields[.xContentTypeOptions] == nil { fields[.xContentTypeOptions] = "nosniff" }
        return fields
    }

    /// A `303 See Other` to `location`, never cached.
    static func redirect(to location: URL, cookies: [String] = []) -> WebResponse {
        var fields: HTTPFields = [.location: location.absoluteString, .cacheControl: "no-store"]
        for cookie in cookies { fields.append(HTTPField(name: .setCookie, value: cookie)) }
        return WebResponse(status: .seeOther, headerFields: fields)
    }

    /// A plain-text page saying what failed (never a token or code), never cached.
    static func failure(_ error: WebSignInError, cookies: [String] = []) -> WebResponse {
        var fields: HTTPFields = [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"]
        for cookie in cookies { fields.append(HTTPField(name: .setCookie, value: cookie)) }
        return WebResponse(status: error.status, headerFields: fields, body: Array("\(error.message)\n".utf8), error: error)
    }
}

/// Why a web sign-in route refused a request. The message names what failed, never a
/// token, code or cookie value.
public struct WebSignInError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, stable across versions.
    public enum Reason: String, Sendable, Hashable {
        /// A callback whose `state` names no pending sign-in (unknown, used, or expired).
        case unknownSignIn
        /// A callback from another browser than the one that started the sign-in.
        case browserMismatch
        /// The provider answered with an error (`access_denied`…), or the callback or its
        /// tokens failed a check (`iss`, ID token).
        case signInFailed
        /// The ID token has no subject to sign in (no `openid` scope?).
        case missingIdentity
        /// The signed-in user does not meet the route's requirement, even after a new
        /// sign-in.
        case forbidden
        /// A form without the session's CSRF token, or from another origin.
        case forgedRequest
        /// The method is not the route's.
        case methodNotAllowed
        /// A store or the provider could not answer now.
        case unavailable
    }

    /// What went wrong.
    public let reason: Reason
    /// A sentence for the person at the browser or the app's log.
    public let message: String
    /// The library's error behind a ``Reason/signInFailed``: the provider's code or the
    /// failed check.
    public let underlyingCode: OAuth2Error.Code?

    init(_ reason: Reason, _ message: String, underlyingCode: OAuth2Error.Code? = nil) {
        self.reason = reason
        self.message = message
        self.underlyingCode = underlyingCode
    }

    /// The HTTP status of the answer.
    public var status: HTTPResponse.Status {
        switch reason {
        case .unknownSignIn, .browserMismatch, .signInFailed, .missingIdentity: .badRequest
        case .forbidden, .forgedRequest: .forbidden
        case .methodNotAllowed: .methodNotAllowed
        case .unavailable: .serviceUnavailable
        }
    }

    /// The reason and the message.
    public var description: String { "WebSignInError(\(reason.rawValue)): \(message)" }
}

extension HTTPField.Name {
    /// `X-Content-Type-Options`, which every answer of the library sets to `nosniff`.
    package static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
}
