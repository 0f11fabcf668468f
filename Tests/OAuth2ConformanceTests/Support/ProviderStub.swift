import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport

/// A local server that answers the way one provider does, and records what it was sent.
/// The answering closure gets the request and the server's base URL (for discovery
/// documents, whose issuer must name the server).
final class ProviderStub: @unchecked Sendable {
    typealias Respond = @Sendable (LocalHTTPServer.Request, URL) async -> LocalHTTPServer.Reply

    private let lock = NSLock()
    private var _requests: [LocalHTTPServer.Request] = []
    private var _baseURL: URL?

    /// Every request received, in order.
    var requests: [LocalHTTPServer.Request] { lock.withLock { _requests } }
    /// The requests received at `path`.
    func requests(to path: String) -> [LocalHTTPServer.Request] { requests.filter { $0.path == path } }
    /// `http://127.0.0.1:<port>`.
    var baseURL: URL { lock.withLock { _baseURL! } }

    /// Runs `body` with a stub answering through `respond`, then shuts the server down.
    static func with<T>(_ respond: @escaping Respond, _ body: (ProviderStub) async throws -> T) async throws -> T {
        let stub = ProviderStub()
        return try await LocalHTTPServer.with(handler: { [stub] request in
            stub.lock.withLock { stub._requests.append(request) }
            return await respond(request, stub.baseURL)
        }) { server in
            stub.lock.withLock { stub._baseURL = server.baseURL }
            return try await body(stub)
        }
    }
}

extension LocalHTTPServer.Reply {
    /// A JSON object answer with HTTP 200.
    static func object(_ members: [String: Any]) -> Self { object(200, members) }

    /// A JSON object answer.
    static func object(_ status: Int, _ members: [String: Any], headers: HTTPFields = [:]) -> Self {
        let data = (try? JSONSerialization.data(withJSONObject: members, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return .response(HTTPResponse(status: .init(code: status), headerFields: fields), data)
    }

    /// A form-encoded answer, as GitHub gives without `Accept: application/json`.
    static func form(_ pairs: [(String, String)]) -> Self {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._*")
        let text = pairs.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
        return .body(200, Data(text.utf8), contentType: "application/x-www-form-urlencoded; charset=utf-8")
    }

    /// 404 with an HTML page, as web servers answer an unknown path.
    static var notFound: Self {
        .body(404, Data("<html><body>Not Found</body></html>".utf8), contentType: "text/html")
    }
}

extension LocalHTTPServer.Request {
    /// The `Authorization` header.
    var authorization: String? { head.headerFields[.authorization] }
    /// The `Accept` header.
    var accept: String? { head.headerFields[.accept] }
}

/// `Basic base64(id ":" secret)` as RFC 6749 §2.3.1 builds it for plain ASCII credentials.
func basic(_ id: String, _ secret: String) -> String {
    "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()
}

/// The callback a browser would follow after the user approved `request`.
func callback(for request: AuthorizationRequest, code: String, extra: String = "") -> URL {
    var components = URLComponents(url: request.redirectURI, resolvingAgainstBaseURL: false)!
    components.queryItems = [URLQueryItem(name: "code", value: code), URLQueryItem(name: "state", value: request.state)]
    let url = components.url!
    return extra.isEmpty ? url : URL(string: url.absoluteString + "&" + extra)!
}

/// The query parameters of a URL, form-decoded (`+` is a space).
func query(_ url: URL) -> [String: String] {
    var components = URLComponents()
    components.percentEncodedQuery = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery?
        .replacingOccurrences(of: "+", with: "%20")
    let items = components.queryItems ?? []
    return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
}

let redirectURI = URL(string: "http://127.0.0.1:53682/callback")!
