#if Hummingbird
import Foundation
import HTTPTypes
import HTTPTypesFoundation
@testable import HummingbirdWebApp
import Logging
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2Testing
import Testing

/// The example app (its real Hummingbird server, on 127.0.0.1 and a free port), signing in
/// with an embedded test provider of the test's own.
enum WebAppFixture {
    /// Starts a provider with the demo configuration and the app on it, runs `body` with
    /// both, then stops them.
    static func withApp(_ body: (TestProvider, URL) async throws -> Void) async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            var free = ExampleSettings()
            free.port = 0
            let settings = free
            let (listening, continuation) = AsyncStream.makeStream(of: URL.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    defer { continuation.finish() }
                    try await ExampleServer.run(settings: settings, embeddedProvider: provider, logger: logger, handlesSignals: false) { url, _ in
                        continuation.yield(url)
                    }
                }
                defer { group.cancelAll() }
                var urls = listening.makeAsyncIterator()
                guard let url = await urls.next() else {
                    try await group.next()
                    Issue.record("The app stopped before it listened")
                    return
                }
                try await body(provider, url)
            }
        }
    }

    static let logger: Logger = {
        var logger = Logger(label: "oauth2-hummingbird-tests")
        // Stopping a server by cancelling its task logs "CancellationError" at error level.
        logger.logLevel = .critical
        return logger
    }()

    /// The library's AsyncHTTPClient transport: it follows no redirect. Never shut down: it
    /// lives as long as the test process.
    static let transport = AsyncHTTPClientTransport()
}

/// A browser stand-in at the app: keeps the cookies the app sets (by name, for its own
/// origin), sends them back, and follows no redirect by itself.
struct Browser {
    var cookies: [String: String] = [:]
    /// The last `Set-Cookie` value seen for each cookie name.
    var setCookies: [String: String] = [:]

    /// Sends a request to the app with the browser's cookies, and keeps what it sets.
    mutating func send(
        _ method: HTTPRequest.Method, _ url: URL, form: [(String, String)]? = nil, body: Data? = nil, headers: HTTPFields = [:]
    ) async throws -> (HTTPResponse, Data) {
        var request = HTTPRequest(method: method, url: url)
        request.headerFields = headers
        if !cookies.isEmpty {
            request.headerFields[.cookie] = cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }
        var payload = body
        if let form {
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            payload = Data(Self.encode(form).utf8)
        }
        let (response, data) = try await WebAppFixture.transport.send(request, body: payload)
        for field in response.headerFields[values: .setCookie] {
            let pair = field.split(separator: ";", maxSplits: 1)[0]
            guard let equals = pair.firstIndex(of: "=") else { continue }
            let name = String(pair[..<equals])
            let value = String(pair[pair.index(after: equals)...])
            setCookies[name] = field
            if value.isEmpty || field.contains("Max-Age=0") { cookies[name] = nil } else { cookies[name] = value }
        }
        return (response, data)
    }

    mutating func get(_ url: URL, headers: HTTPFields = [:]) async throws -> (HTTPResponse, Data) {
        try await send(.get, url, headers: headers)
    }

    /// Signs in at the app through the provider: the app's redirect, the provider's answer
    /// (the demo user, signed in automatically), the callback. Returns the callback's answer.
    mutating func signIn(app: URL, provider: TestProvider, path: String = "/profile") async throws -> HTTPResponse {
        let (start, _) = try await get(app.at(path))
        #expect(start.status == .seeOther)
        let authorization = try #require(start.headerFields[.location].flatMap(URL.init(string:)))
        #expect(authorization.absoluteString.hasPrefix(provider.issuer.absoluteString))
        let callback = try await provider.followRedirect(from: authorization)
        #expect(callback.absoluteString.hasPrefix(app.at("/auth/callback").absoluteString))
        let (answer, _) = try await get(callback)
        return answer
    }

    /// `name=value&…`, percent-encoded but for the unreserved characters.
    static func encode(_ pairs: [(String, String)]) -> String {
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        allowed.insert(charactersIn: "-._~")
        func escape(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text }
        return pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }
}

extension URL {
    /// This base URL and `path` (which starts with `/`).
    func at(_ path: String) -> URL {
        var base = absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + path)!
    }
}

extension Data {
    var text: String { String(decoding: self, as: UTF8.self) }
}

/// The value of the hidden `csrf` input of a page's form.
func csrfToken(in page: String) -> String? {
    guard let marker = page.range(of: #"name="csrf" value=""#) else { return nil }
    let rest = page[marker.upperBound...]
    return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
}
#endif
