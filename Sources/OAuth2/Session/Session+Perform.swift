import Foundation
import HTTPTypes

extension Session {
    /// `request` with the session's access token in its `Authorization` header, renewed
    /// first when it expires within the leeway.
    ///
    /// The token goes only to HTTPS URLs, or to plain HTTP on a loopback host.
    ///
    /// - Throws: ``OAuth2Error/Code/insecureEndpoint`` for any other URL;
    ///   ``OAuth2Error/Code/invalidConfiguration`` for a DPoP-bound token (this version
    ///   makes no DPoP proofs yet); otherwise as ``freshTokens()``.
    public nonisolated func authorize(_ request: HTTPRequest) async throws -> HTTPRequest {
        try Self.checkDestination(request)
        return try Self.authorize(request, with: try await freshTokens())
    }

    /// Sends `request` with the session's access token through the client's transport and
    /// interceptors, and returns the response, whatever its status — except a refused token.
    ///
    /// On a 401 whose challenge is `Bearer error="invalid_token"` or names no error (and on
    /// a 403 when ``Options/retryOnForbidden`` is set), the token is renewed once — shared
    /// with every other caller that saw it refused — and the request sent once more.
    ///
    /// - Parameter body: the request body, sent again on the retry.
    /// - Throws: ``OAuth2Error/Code/invalidToken`` (or the challenge's `error`, with the
    ///   HTTP status) when the retry is refused too; transport errors; otherwise as
    ///   ``authorize(_:)``.
    public nonisolated func perform(_ request: HTTPRequest, body: Data? = nil) async throws -> (HTTPResponse, Data) {
        try Self.checkDestination(request)
        let tokens = try await freshTokens()
        let (response, responseBody) = try await client.pipeline.send(
            try Self.authorize(request, with: tokens), body: body, kind: .resource)
        guard refusesToken(response) else { return (response, responseBody) }
        let renewed = try await renew(rejecting: tokens.accessToken)
        let (retried, retriedBody) = try await client.pipeline.send(
            try Self.authorize(request, with: renewed), body: body, kind: .resource)
        guard refusesToken(retried) else { return (retried, retriedBody) }
        let challenge = BearerChallenge(retried.headerFields[values: .wwwAuthenticate])
        throw OAuth2Error(
            challenge?.error.map { OAuth2Error.Code(rawValue: $0) } ?? (retried.status.code == 401 ? .invalidToken : .httpError),
            source: .server,
            message: challenge?.errorDescription.map { Redactor.sanitizeServerText($0) }
                ?? "The resource server refused a renewed access token too.",
            statusCode: retried.status.code)
    }

    /// Whether `response` says the access token was refused, in a way a new token can fix.
    nonisolated func refusesToken(_ response: HTTPResponse) -> Bool {
        switch response.status.code {
        case 401:
            // A challenge that names another error (insufficient_scope, invalid_request)
            // is not cured by a new token.
            guard let error = BearerChallenge(response.headerFields[values: .wwwAuthenticate])?.error else { return true }
            return error == OAuth2Error.Code.invalidToken.rawValue
        case 403:
            return options.retryOnForbidden
        default:
            return false
        }
    }

    static func authorize(_ request: HTTPRequest, with tokens: TokenSet) throws(OAuth2Error) -> HTTPRequest {
        guard tokens.tokenType == .bearer else {
            throw .client(.invalidConfiguration, "The access token is DPoP-bound; this version cannot make DPoP proofs yet.")
        }
        var request = request
        request.headerFields[.authorization] = "Bearer " + tokens.accessToken
        return request
    }

    /// A token goes over HTTPS, or plain HTTP to a loopback host only.
    static func checkDestination(_ request: HTTPRequest) throws(OAuth2Error) {
        let scheme = request.scheme?.lowercased()
        if scheme == "https" { return }
        if scheme == "http", let authority = request.authority, EndpointPolicy.isLoopback(host: host(of: authority)) { return }
        throw .client(.insecureEndpoint, "An access token is sent over HTTPS only (plain HTTP only to a loopback host).")
    }

    private static func host(of authority: String) -> String {
        var text = Substring(authority)
        if let at = text.lastIndex(of: "@") { text = text[text.index(after: at)...] }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") { return String(text[...close]) }
        if let colon = text.lastIndex(of: ":") { return String(text[..<colon]) }
        return String(text)
    }
}

/// The `Bearer` (or `DPoP`) challenge of `WWW-Authenticate` (RFC 6750 §3, RFC 9110 §11.6.1):
/// its `error` and `error_description`.
///
/// Hand-written because no package in use parses challenges (the header is not an RFC 8941
/// structured field); it reads auth-params, quoted or not, and skips other schemes.
struct BearerChallenge: Equatable {
    var error: String?
    var errorDescription: String?

    /// The first Bearer or DPoP challenge among the header values; `nil` when there is none.
    init?(_ values: [String]) {
        for value in values {
            if let challenge = Self.parse(value) {
                self = challenge
                return
            }
        }
        return nil
    }

    private init(error: String?, errorDescription: String?) {
        self.error = error
        self.errorDescription = errorDescription
    }

    private static func parse(_ header: String) -> BearerChallenge? {
        var scanner = Scanner(Array(header.utf8))
        var found: BearerChallenge?
        var inTarget = false
        while !scanner.atEnd {
            scanner.skip { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: ",") }
            guard let token = scanner.token() else {
                scanner.advance()  // a stray character: skip it
                continue
            }
            scanner.skip { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            if scanner.peek == UInt8(ascii: "="), scanner.peek(1) != UInt8(ascii: "=") && scanner.peek(1) != nil {
                // name=value: a parameter of the current challenge.
                scanner.advance()
                scanner.skip { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
                let value = scanner.peek == UInt8(ascii: "\"") ? scanner.quoted() : scanner.token()
                guard inTarget, let value else { continue }
                switch token.lowercased() {
                case "error": found?.error = value
                case "error_description": found?.errorDescription = value
                default: break
                }
            } else {
                // A new challenge (or a token68 of the current one, which ends in "=").
                if found != nil && inTarget { return found }
                scanner.skip { $0 == UInt8(ascii: "=") }
                let scheme = token.lowercased()
                inTarget = scheme == "bearer" || scheme == "dpop"
                if inTarget { found = BearerChallenge(error: nil, errorDescription: nil) }
            }
        }
        return found
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index >= bytes.count }
        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }
        func peek(_ offset: Int) -> UInt8? { index + offset < bytes.count ? bytes[index + offset] : nil }
        mutating func advance() { index += 1 }
        mutating func skip(while predicate: (UInt8) -> Bool) {
            while let byte = peek, predicate(byte) { index += 1 }
        }

        /// An RFC 9110 token (tchar+), also accepting token68's `/`.
        mutating func token() -> String? {
            let start = index
            while let byte = peek, Self.isTokenChar(byte) { index += 1 }
            return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
        }

        /// A quoted-string with backslash escapes; unterminated runs to the end.
        mutating func quoted() -> String {
            index += 1
            var result: [UInt8] = []
            while let byte = peek {
                index += 1
                if byte == UInt8(ascii: "\"") { break }
                if byte == UInt8(ascii: "\\"), let next = peek {
                    result.append(next)
                    index += 1
                } else {
                    result.append(byte)
                }
            }
            return String(decoding: result, as: UTF8.self)
        }

        static func isTokenChar(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return "!#$%&'*+-.^_`|~/".utf8.contains(byte)
            }
        }
    }
}
