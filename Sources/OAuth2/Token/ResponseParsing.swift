import Foundation
import HTTPTypes

/// Reading the answers of the token, revocation, introspection and device endpoints:
/// lenient about the shape (JSON or form bodies, errors inside an HTTP 200, empty error
/// bodies), strict about what matters.
enum ResponseParsing {
    /// The body as a flat object: a JSON object, or form-encoded pairs (GitHub without an
    /// `Accept` header). `nil` when the body is neither (empty, HTML, garbage).
    static func members(of body: Data, contentType: String?) -> [String: JSONValue]? {
        let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        if let object = JSONValue.parseObject(body) { return object }
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

extension RequestKind {
    /// Endpoints where a 401/403 means the client's credentials were refused.
    var authenticatesClient: Bool {
        switch self {
        case .token, .revocation, .introspection, .pushedAuthorization, .deviceAuthorization: return true
        default: return false
        }
    }
}

/// HTTP-date (RFC 9110 §5.6.7), IMF-fixdate form, plus the obsolete forms servers still send.
enum HTTPDate {
    static func parse(_ text: String) -> Date? {
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}

extension TokenSet {
    /// Parses a token endpoint response (RFC 6749 §5.1/§5.2).
    ///
    /// - Parameters:
    ///   - requestedScopes: the scopes of the request, used when the response omits `scope`.
    ///   - sentAt: when the request was sent; `expires_in` counts from then, so the expiry
    ///     errs early rather than late.
    /// - Throws: the server's error (typed, also from an HTTP 200 or an empty 4xx body);
    ///   ``OAuth2Error/Code/invalidResponse`` for a body that is neither JSON nor form data,
    ///   a missing `access_token`, or a `token_type` other than Bearer or DPoP.
    public static func parse(
        response: HTTPResponse,
        body: Data,
        requestedScopes: [String]? = nil,
        sentAt: Date,
        receivedAt: Date = Date()
    ) throws(OAuth2Error) -> TokenSet {
        try parse(
            response: response, body: body, requestedScopes: requestedScopes, sentAt: sentAt,
            receivedAt: receivedAt, quirks: [])
    }

    /// Parses a token endpoint response, bending to the server's `quirks`.
    static func parse(
        response: HTTPResponse,
        body: Data,
        requestedScopes: [String]?,
        sentAt: Date,
        receivedAt: Date,
        quirks: ServerQuirks
    ) throws(OAuth2Error) -> TokenSet {
        let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
        if let error = ResponseParsing.error(in: response, members: members, kind: .token, now: receivedAt) {
            throw error
        }
        guard let members else {
            throw .invalidResponse("The token response is neither JSON nor form data.", statusCode: response.status.code)
        }
        guard let accessToken = members["access_token"]?.stringValue, !accessToken.isEmpty else {
            throw .invalidResponse("The token response has no access_token.", statusCode: response.status.code)
        }
        let tokenType: TokenType
        switch members["token_type"] {
        case .none, .null?:
            tokenType = .bearer  // Several providers omit it; the only type they issue is Bearer.
        case .string(let raw)?:
            guard let known = TokenType(rawValue: raw) else {
                throw .invalidResponse("The token type \"\(Redactor.sanitizeServerText(raw, limit: 40))\" is not supported.")
            }
            tokenType = known
        default:
            throw .invalidResponse("The token_type member is not a string.")
        }
        var expiresAt: Date?
        if let seconds = ResponseParsing.number(members["expires_in"]), seconds >= 0, seconds < 1e10 {
            expiresAt = sentAt.addingTimeInterval(seconds)
        }
        for optional in ["refresh_token", "id_token", "scope"] {
            if let value = members[optional], value != .null, value.stringValue == nil {
                throw .invalidResponse("The \(optional) member is not a string.")
            }
        }
        let known: Set<String> = ["access_token", "token_type", "expires_in", "refresh_token", "id_token", "scope"]
        return TokenSet(
            accessToken: accessToken,
            tokenType: tokenType,
            refreshToken: members["refresh_token"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            idToken: members["id_token"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            expiresAt: expiresAt,
            scopes: ResponseParsing.scopes(members["scope"]?.stringValue, commaSeparated: quirks.contains(.commaSeparatedScopes))
                ?? requestedScopes,
            issuedAt: receivedAt,
            serverDate: response.headerFields[.date].flatMap(HTTPDate.parse),
            additionalFields: members.filter { !known.contains($0.key) }
        )
    }
}

/// The first challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1): its scheme
/// (`Bearer`, `DPoP`) and parameters (`error`, `error_description`, `realm`, `scope`…).
public struct WWWAuthenticate: Sendable, Hashable {
    /// The auth scheme, as sent.
    public let scheme: String
    /// The auth parameters, names lowercased.
    public let parameters: [String: String]

    /// Parses the first challenge of a header value; `nil` when there is none.
    public init?(_ value: String) {
        var scanner = Substring(value)
        func skipSpaces() { scanner = scanner.drop(while: { $0 == " " || $0 == "\t" }) }
        skipSpaces()
        let scheme = scanner.prefix(while: { $0 != " " && $0 != "," && $0 != "\t" })
        guard !scheme.isEmpty else { return nil }
        scanner = scanner.dropFirst(scheme.count)
        var parameters: [String: String] = [:]
        while true {
            scanner = scanner.drop(while: { $0 == " " || $0 == "," || $0 == "\t" })
            let name = scanner.prefix(while: { $0 != "=" && $0 != " " && $0 != "," })
            guard !name.isEmpty else { break }
            var rest = scanner.dropFirst(name.count).drop(while: { $0 == " " })
            // `Bearer, DPoP …`: the next challenge starts; only the first is read.
            guard rest.first == "=" else { break }
            rest = rest.dropFirst().drop(while: { $0 == " " })
            var parsed = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                while let character = rest.first, character != "\"" {
                    if character == "\\" { rest = rest.dropFirst() }
                    if let next = rest.first { parsed.append(next) }
                    rest = rest.dropFirst()
                }
                rest = rest.dropFirst()
            } else {
                let token = rest.prefix(while: { $0 != "," && $0 != " " })
                parsed = String(token)
                rest = rest.dropFirst(token.count)
            }
            parameters[name.lowercased()] = parsed
            scanner = rest
        }
        self.scheme = String(scheme)
        self.parameters = parameters
    }
}
