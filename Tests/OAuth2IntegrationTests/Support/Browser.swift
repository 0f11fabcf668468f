import Foundation
import HTTPTypes
import OAuth2
import Testing

/// Just enough of a browser to sign a test user in: a cookie jar, no redirects followed.
/// It talks to the servers through the library's own URLSession transport.
final class Browser: @unchecked Sendable {
    private(set) var cookies: [String: String] = [:]
    private let transport = URLSessionTransport()

    /// Sends a request without a body (DELETE, say) with the jar's cookies.
    @discardableResult
    func send(_ method: HTTPRequest.Method, _ url: URL) async throws -> (HTTPResponse, Data) {
        try await send(HTTPRequest(method: method, url: url), body: nil)
    }

    /// Sends `name=value` from now on, as if a server had set it (a cookie a real browser got).
    func setCookie(_ name: String, _ value: String) { cookies[name] = value }

    @discardableResult
    func get(_ url: URL) async throws -> (HTTPResponse, Data) {
        try await send(HTTPRequest(method: .get, url: url), body: nil)
    }

    func json(_ method: HTTPRequest.Method, _ url: URL, _ body: String) async throws {
        var request = HTTPRequest(method: method, url: url)
        request.headerFields[.contentType] = "application/json"
        let (response, _) = try await send(request, body: Data(body.utf8))
        #expect(response.status.kind == .successful, "\(method) \(url.path) answered \(response.status.code)")
    }

    @discardableResult
    func form(_ url: URL, _ parameters: [(String, String)]) async throws -> (HTTPResponse, Data) {
        var request = HTTPRequest(method: .post, url: url)
        request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        request.headerFields[.referer] = url.absoluteString
        let body = parameters.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        return try await send(request, body: Data(body.utf8))
    }

    /// The hidden inputs of an HTML form, in order, their values unescaped.
    static func hiddenInputs(_ html: String) -> [(String, String)] {
        let tag = try! NSRegularExpression(pattern: "<input[^>]*>", options: [.caseInsensitive])
        func attribute(_ name: String, in text: String) -> String? {
            let pattern = try! NSRegularExpression(pattern: "\\b\(name)=\"([^\"]*)\"", options: [.caseInsensitive])
            guard let match = pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
                let range = Range(match.range(at: 1), in: text)
            else { return nil }
            return String(text[range])
        }
        return tag.matches(in: html, range: NSRange(html.startIndex..., in: html)).compactMap { match in
            guard let range = Range(match.range, in: html) else { return nil }
            let input = String(html[range])
            guard attribute("type", in: input)?.lowercased() == "hidden", let name = attribute("name", in: input) else { return nil }
            let value = (attribute("value", in: input) ?? "")
                .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#x27;", with: "'")
                .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                .replacingOccurrences(of: "&amp;", with: "&")
            return (name, value)
        }
    }

    /// POSTs `body` as it is, with `headers`.
    func post(_ url: URL, body: String, headers: HTTPFields) async throws -> (HTTPResponse, Data) {
        var request = HTTPRequest(method: .post, url: url)
        request.headerFields.append(contentsOf: headers)
        return try await send(request, body: Data(body.utf8))
    }

    /// What the loopback listener's fragment relay page does in a browser, done by hand
    /// (the tests have no JavaScript engine of their own; Tests/Browser/fragment-relay.mjs
    /// runs the real script with node): GET the address without its fragment, check the page
    /// carries the one script its CSP allows, then POST the fragment, form-encoded, to the
    /// same path from the page's origin. Returns the relay page and the POST's answer.
    func relayFragment(of callback: URL) async throws -> (page: String, csp: String?, answer: HTTPResponse, text: String) {
        var components = try #require(URLComponents(url: callback, resolvingAgainstBaseURL: false))
        let fragment = components.percentEncodedFragment ?? ""
        components.fragment = nil
        let address = try #require(components.url)
        let (pageResponse, page) = try await get(address)
        #expect(pageResponse.status == .ok)
        #expect(pageResponse.headerFields[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
        let origin = "\(address.scheme ?? "http")://\(address.host ?? "")\(address.port.map { ":\($0)" } ?? "")"
        let (answer, text) = try await post(address, body: fragment, headers: [
            .contentType: "application/x-www-form-urlencoded", HTTPField.Name("Origin")!: origin,
            HTTPField.Name("Sec-Fetch-Site")!: "same-origin",
        ])
        return (String(decoding: page, as: UTF8.self), pageResponse.headerFields[.contentSecurityPolicy], answer, String(decoding: text, as: UTF8.self))
    }

    /// Where `response` redirects, resolved against `url`; `nil` when it is no redirect.
    static func location(of response: HTTPResponse, relativeTo url: URL) -> URL? {
        guard response.status.kind == .redirection, let location = response.headerFields[.location] else { return nil }
        return URL(string: location, relativeTo: url)?.absoluteURL
    }

    /// POSTs a form to `url` and returns the redirect's target.
    func redirect(fromForm url: URL, _ parameters: [(String, String)]) async throws -> URL {
        let (response, body) = try await form(url, parameters)
        guard let target = Self.location(of: response, relativeTo: url) else {
            Issue.record("expected a redirect from POST \(url.path), got \(response.status.code): \(String(decoding: body.prefix(300), as: UTF8.self))")
            throw CancellationError()
        }
        return target
    }

    /// GETs `url` and returns the redirect's target.
    func redirect(from url: URL) async throws -> URL {
        let (response, body) = try await get(url)
        guard response.status.kind == .redirection, let location = response.headerFields[.location],
            let target = URL(string: location, relativeTo: url)?.absoluteURL
        else {
            Issue.record("expected a redirect from \(url.path), got \(response.status.code): \(String(decoding: body.prefix(300), as: UTF8.self))")
            throw CancellationError()
        }
        return target
    }

    private func send(_ original: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        var request = original
        if !cookies.isEmpty {
            request.headerFields[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }
        let (response, data) = try await transport.send(request, body: body)
        // URLSession on Linux folds several Set-Cookie headers into one, comma-separated:
        // a cookie starts at the beginning or after a comma, with `name=` right away.
        for value in response.headerFields[values: .setCookie] {
            for match in value.matches(of: /(?:^|,)\s*([^=;,\s]+)=([^;,]*)/) {
                cookies[String(match.output.1)] = String(match.output.2)
            }
        }
        return (response, data)
    }

    private static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._*")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

/// Counts the requests of each kind a client sends.
final class RequestCounter: HTTPInterceptor, @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [RequestKind: Int] = [:]
    private var _total = 0

    func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws {
        lock.withLock {
            counts[kind, default: 0] += 1
            _total += 1
        }
    }

    func count(_ kind: RequestKind) -> Int { lock.withLock { counts[kind] ?? 0 } }
    var total: Int { lock.withLock { _total } }
}
