import Foundation
import HTTPTypes

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

extension RequestKind {
    /// Endpoints where a 401/403 means the client's credentials were refused.
    var authenticatesClient: Bool {
        switch self {
        case .token, .revocation, .introspection, .pushedAuthorization, .deviceAuthorization: return true
        default: return false
        }
    }
}

/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, plus the two obsolete forms a recipient must
/// accept (RFC 850 and asctime).
///
/// Parsed by hand over ASCII bytes: Foundation's `DateFormatter` on Linux traps on some
/// non-ASCII input (found by fuzzing a `Retry-After` header), and a header is untrusted text.
enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count <= 64, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        var scanner = Scanner(bytes: bytes)
        if let date = imfFixdate(&scanner) { return date }
        scanner = Scanner(bytes: bytes)
        if let date = rfc850(&scanner) { return date }
        scanner = Scanner(bytes: bytes)
        return asctime(&scanner)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ s: inout Scanner) -> Date? {
        guard s.word(in: shortDays) != nil, s.literal(", "),
            let day = s.digits(2), s.literal(" "), let month = s.month(), s.literal(" "),
            let year = s.digits(4), s.literal(" "), let time = s.time(), s.literal(" GMT"), s.atEnd
        else { return nil }
        return date(year: year, month: month, day: day, time: time)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year more than 50 years ahead is taken
    /// to be in the past (RFC 9110 §5.6.7).
    private static func rfc850(_ s: inout Scanner) -> Date? {
        guard s.word(in: longDays) != nil, s.literal(", "),
            let day = s.digits(2), s.literal("-"), let month = s.month(), s.literal("-"),
            let shortYear = s.digits(2), s.literal(" "), let time = s.time(), s.literal(" GMT"), s.atEnd
        else { return nil }
        let currentYear = Calendar(identifier: .gregorian).component(.year, from: Date())
        var year = currentYear - currentYear % 100 + shortYear
        if year > currentYear + 50 { year -= 100 }
        return date(year: year, month: month, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994`
    private static func asctime(_ s: inout Scanner) -> Date? {
        guard s.word(in: shortDays) != nil, s.literal(" "), let month = s.month(), s.literal(" ") else { return nil }
        let day: Int
        if s.literal(" ") {
            guard let digit = s.digits(1) else { return nil }
            day = digit
        } else {
            guard let digits = s.digits(2) else { return nil }
            day = digits
        }
        guard s.literal(" "), let time = s.time(), s.literal(" "), let year = s.digits(4), s.atEnd else { return nil }
        return date(year: year, month: month, day: day, time: time)
    }

    private static func date(year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int)) -> Date? {
        guard year >= 1970, (1...31).contains(day), time.hour < 24, time.minute < 60, time.second <= 60 else { return nil }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let monthLengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= monthLengths[month - 1] else { return nil }
        // Days from the civil date (Howard Hinnant's algorithm), proleptic Gregorian, UTC.
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + time.hour * 3600 + time.minute * 60 + min(time.second, 59)
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func literal(_ text: String) -> Bool {
            let expected = Array(text.utf8)
            guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected)
            else { return false }
            index += expected.count
            return true
        }

        /// Exactly `count` ASCII digits.
        mutating func digits(_ count: Int) -> Int? {
            guard bytes.count - index >= count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }

        /// One of `words` (case-sensitive, as the grammar says); its index.
        mutating func word(in words: [String]) -> Int? {
            for (position, word) in words.enumerated() where literal(word) { return position }
            return nil
        }

        /// A three-letter month name as 1...12.
        mutating func month() -> Int? { word(in: HTTPDate.months).map { $0 + 1 } }

        /// `HH:MM:SS`
        mutating func time() -> (hour: Int, minute: Int, second: Int)? {
            guard let hour = digits(2), literal(":"), let minute = digits(2), literal(":"), let second = digits(2)
            else { return nil }
            return (hour, minute, second)
        }
    }
}

extension TokenSet {
    /// Parses a token endpoint response (RFC 6749 §5.1/§5.2).
    ///
    /// - Parameters:
    ///   - response: the HTTP response.
    ///   - body: the response body.
    ///   - requestedScopes: the scopes of the request, used when the response omits `scope`.
    ///   - sentAt: when the request was sent; `expires_in` counts from then, so the expiry
    ///     errs early rather than late.
    ///   - receivedAt: when the response arrived: the tokens' ``TokenSet/issuedAt``.
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
        return try parse(
            members: members, statusCode: response.status.code, requestedScopes: requestedScopes, sentAt: sentAt,
            receivedAt: receivedAt, serverDate: response.headerFields[.date].flatMap(HTTPDate.parse), quirks: quirks)
    }

    /// Reads the members of a token response (a token endpoint's body, or the parameters of
    /// an implicit grant's fragment): `access_token` required, `token_type` Bearer or DPoP
    /// (Bearer when absent), `expires_in` counted from `sentAt`, `scope` (else
    /// `requestedScopes`), the rest kept in ``additionalFields``.
    static func parse(
        members: [String: JSONValue],
        statusCode: Int?,
        requestedScopes: [String]?,
        sentAt: Date,
        receivedAt: Date,
        serverDate: Date?,
        quirks: ServerQuirks
    ) throws(OAuth2Error) -> TokenSet {
        guard let accessToken = members["access_token"]?.stringValue, !accessToken.isEmpty else {
            throw .invalidResponse("The token response has no access_token.", statusCode: statusCode)
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
            serverDate: serverDate,
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
