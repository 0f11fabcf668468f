import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE

/// A client's CIBA notification endpoint in ping mode (its registered
/// `backchannel_client_notification_endpoint`, OpenID Connect CIBA Core §10.2), independent
/// of any web framework: it hands each request to a `BackchannelPingInbox` and answers as
/// the specification says.
///
/// ```swift
/// let inbox = BackchannelPingInbox()
/// let endpoint = BackchannelPingEndpoint(inbox: inbox)
/// // For each request to the endpoint:
/// let answer = endpoint.handle(request, body: bodyBytes)
/// // Respond with answer.status, answer.headerFields and answer.body.
/// ```
///
/// - A POST with the bearer token of a pending request and `{"auth_req_id": …}` naming that
///   request: `204 No Content`; the waiting `OAuth2Client.waitForBackchannelPing` then asks
///   for the tokens.
/// - No bearer token, or one that names no pending request: 401 with `WWW-Authenticate:
///   Bearer` (`error="invalid_token"` when a token was sent) and an empty body: nothing is
///   said about the rest of the request, and the body is not read.
/// - Any other method: 405 with `Allow: POST`. A body over
///   `BackchannelPingInbox.maximumBodySize`: 413; not `application/json`: 415; not one strict
///   JSON object with a string `auth_req_id`, or another request's `auth_req_id`: 400 with
///   `{"error": "invalid_request", "error_description": …}`.
/// - Every answer carries `Cache-Control: no-store`.
public struct BackchannelPingEndpoint: Sendable {
    /// The response to send: status, header fields and body.
    public struct Response: Sendable, Hashable {
        /// 204 on success; 400, 401, 405, 413 or 415.
        public let status: HTTPResponse.Status
        /// `Cache-Control: no-store`; `WWW-Authenticate` with 401, `Allow: POST` with 405,
        /// `Content-Type: application/json` with a body.
        public let headerFields: HTTPFields
        /// Empty, except the JSON error object of a 400, 413 or 415.
        public let body: [UInt8]
        /// Why the request was refused, on failure.
        public let error: BackchannelPingError?

        /// The response head: ``status`` and ``headerFields``.
        public var response: HTTPResponse { HTTPResponse(status: status, headerFields: headerFields) }
    }

    /// The inbox the pings go to, shared with the code that waits for them.
    public let inbox: BackchannelPingInbox

    /// Creates an endpoint that feeds `inbox`.
    public init(inbox: BackchannelPingInbox) {
        self.inbox = inbox
    }

    /// Answers a request to the notification endpoint; never throws.
    ///
    /// - Parameters:
    ///   - request: the request's head (method, `Authorization` and `Content-Type` are read).
    ///   - body: the request's body bytes (at most `BackchannelPingInbox.maximumBodySize`
    ///     are read, and only from a caller with a valid bearer token).
    public func handle(_ request: HTTPRequest, body: some Sequence<UInt8>) -> Response {
        do {
            try inbox.receive(request, body: body)
            return Response(status: .noContent, headerFields: WebResponse.hardened([.cacheControl: "no-store"]), body: [], error: nil)
        } catch {
            var fields = WebResponse.hardened([.cacheControl: "no-store"])
            var body: [UInt8] = []
            if let challenge = error.challenge {
                fields[.wwwAuthenticate] = challenge
            } else {
                if error.status == .methodNotAllowed { fields[.allow] = "POST" }
                fields[.contentType] = "application/json"
                let object: JSONValue = .object(["error": "invalid_request", "error_description": .string(error.message)])
                body = Array(object.description.utf8)
            }
            return Response(status: error.status, headerFields: fields, body: body, error: error)
        }
    }
}
