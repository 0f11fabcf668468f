import Foundation
import HTTPTypes
import OAuth2Internals

/// Reading the answers of the token, revocation, introspection and device endpoints:
/// lenient about the shape (JSON or form bodies, errors inside an HTTP 200, empty error
/// bodies), strict about what matters.
enum ResponseParsing {
    /// The body as a flat object: a JSON object, or form-encoded pairs (GitHub without an
    /// `Accept` header). `nil` when the body is neither (empty, HTML, garbage).
    static func members(of body: Data, contentType: String?) -> [String: JSONValue]? {
        if let object = JSONValue.parseObject(body) { return object }
        // (Only now: Foundation's trimming costs more than parsing a token response.)
        let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        if type == "application/json" || (type?.hasSuffix("+json") ?? false) { return nil }
        guard type == "application/x-www-form-urlencoded" || type == "text/plain" || type == nil,
            !body.isEmpty, body.count <= 64 * 1024,
            let text = String(data: body, encoding: .utf8),
            text.contains("="), !text.contains("<"),
            !text.contains(where: { $0.isNewline || $0 == " " }),
            let pairs = FormURLEncoding.decode(text)
        else { return nil }
        var members: [String: JSONValue] = [:]
        for (name, value) in pairs where members[name] == nil { members[name] = .string(value) }
        return members
    }

    /// The error a response carries, if any: a non-2xx status, or an `error` member in any
    /// response (GitHub and Reddit answer errors with HTTP 200).
    ///
    /// Three deviations are understood: Facebook's Graph API error object
    /// (`{"error": {"message": …, "type": "OAuthException", "code": 100}}`), whose message
    /// is kept and whose meaning comes from the status; an `error` that is a number
    /// (Reddit's `{"message": "Unauthorized", "error": 401}`), which is no error code, so the
    /// status gives the meaning; and `unauthorized_client` with
    /// HTTP 401 from an endpoint that authenticates the client (Keycloak's answer to a wrong
    /// secret), which is ``OAuth2Error/Code/invalidClient`` (RFC 6749 §5.2 reserves 401 for
    /// failed client authentication).
    static func error(
        in response: HTTPResponse,
        members: [String: JSONValue]?,
        kind: RequestKind,
        now: Date
    ) -> OAuth2Error? {
        let status = response.status.code
        let retryAfter = self.retryAfter(response, now: now)
        if let members, let code = members["error"]?.stringValue, !code.isEmpty {
            var error = OAuth2Error.fromServer(
                error: code,
                description: members.string("error_description"),
                uri: members.string("error_uri"),
                statusCode: status,
                retryAfter: retryAfter
            )
            if error.code == .unauthorizedClient, status == 401, kind.authenticatesClient {
                error.serverCode = error.serverCode ?? error.code.rawValue
                error.code = .invalidClient
            }
            return error
        }
        let graphError = members?["error"]?.objectValue
        guard response.status.kind != .successful || graphError != nil else { return nil }
        // A resource server's error lives in its challenge (RFC 6750 §3).
        if let challenge = response.headerFields[.wwwAuthenticate].flatMap(WWWAuthenticate.init),
            let code = challenge.parameters["error"], !code.isEmpty
        {
            return OAuth2Error.fromServer(
                error: code,
                description: challenge.parameters["error_description"],
                uri: challenge.parameters["error_uri"],
                statusCode: status,
                retryAfter: retryAfter
            )
        }
        // No error code: infer the meaning from the status, and say so.
        var error = inferredError(status: status, kind: kind, retryAfter: retryAfter)
        if let graphError {
            if let message = graphError.string("message"), !message.isEmpty {
                error.message = Redactor.sanitizeServerText(message)
            }
            error.serverCode = graphError.string("type")
        }
        return error
    }

    /// The error an HTTP status means when the body has no error code.
    private static func inferredError(status: Int, kind: RequestKind, retryAfter: TimeInterval?) -> OAuth2Error {
        let code: OAuth2Error.Code
        let message: String
        switch status {
        case 401 where kind.authenticatesClient, 403 where kind.authenticatesClient:
            code = .invalidClient
            message = "HTTP \(status) without an error object: the server refused the client's credentials."
        case 400:
            code = .invalidRequest
            message = "HTTP 400 without an error object: the server refused the request."
        case 429, 503:
            code = .temporarilyUnavailable
            message = "HTTP \(status): the server is busy or unavailable."
        case 500...599:
            code = .serverError
            message = "HTTP \(status): the server failed."
        case 200...299:
            code = .invalidResponse
            message = "HTTP \(status) with an error object that has no error code."
        default:
            code = .httpError
            message = "HTTP \(status) without an error object."
        }
        var error = OAuth2Error(code, source: .server, message: message, statusCode: status, retryAfter: retryAfter)
        error.inferredFromStatus = true
        return error
    }

    /// `Retry-After` as seconds from now: delta-seconds or an HTTP-date.
    static func retryAfter(_ response: HTTPResponse, now: Date) -> TimeInterval? {
        guard let value = response.headerFields[.retryAfter]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Int(value), seconds >= 0 { return TimeInterval(seconds) }
        guard let date = HTTPDate.parse(value) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// Space-separated scope text as a list; with `commaSeparated`, commas separate too
    /// (GitHub, LinkedIn).
    static func scopes(_ text: String?, commaSeparated: Bool = false) -> [String]? {
        text.map { $0.split(whereSeparator: { $0 == " " || (commaSeparated && $0 == ",") }).map(String.init) }
    }

    /// A number that may arrive as a JSON number or a string (`"3600"`).
    static func number(_ value: JSONValue?) -> Double? {
        switch value {
        case .integer(let number): return Double(number)
        case .number(let number): return number.isFinite ? number : nil
        case .string(let text): return Double(text.trimmingCharacters(in: .whitespaces)).flatMap { $0.isFinite ? $0 : nil }
        default: return nil
        }
    }
}
