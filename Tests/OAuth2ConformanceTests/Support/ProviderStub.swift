import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport

/// A local server that answers the way one provider does, and records what it was sent: a
/// ``RecordingProvider`` that also publishes the stub ID tokens' key at the provider's
/// JWK-set path.
enum ProviderStub {
    typealias Respond = RecordingProvider.Respond

    /// Runs `body` with a stub answering through `respond`, then shuts the server down.
    static func with<T>(_ respond: @escaping Respond, _ body: (RecordingProvider) async throws -> T) async throws -> T {
        try await RecordingProvider.with({ request, base in
            if request.head.method == .get, StubIDToken.keySetPaths.contains(where: request.path.hasSuffix) {
                return StubIDToken.keySet
            }
            return await respond(request, base)
        }, body)
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
    StubIDToken.remember(nonce: request.nonce, for: code)
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

/// Real ID tokens for the provider stubs: signed with one RS256 key that every stub
/// publishes at its JWK-set path, carrying the nonce of the authorization request whose
/// code is exchanged (``callback(for:code:extra:)`` remembers it).
enum StubIDToken {
    static let key = try! JWSSigningKey.generate(.rs256, keyID: "stub-key")
    private static let lock = NSLock()
    nonisolated(unsafe) private static var nonces: [String: String] = [:]

    /// The JWK-set paths of the providers the stubs imitate.
    static let keySetPaths = [
        "/oauth2/v3/certs", "/oauth/discovery/keys", "/v1/keys", "/discovery/v2.0/keys", "/oauth/openid/jwks",
        "/.well-known/jwks.json", "/protocol/openid-connect/certs",
    ]

    static func remember(nonce: String?, for code: String) {
        guard let nonce else { return }
        lock.withLock { nonces[code] = nonce }
    }

    /// The JWK set answer.
    static var keySet: LocalHTTPServer.Reply {
        .json(200, String(decoding: JSONWebKeySet(keys: [key.publicKey!]).jsonData, as: UTF8.self))
    }

    /// A signed ID token for `audience` from `issuer`; with the remembered nonce when
    /// `code` is given (a code exchange), without one for a refresh.
    static func make(issuer: String, audience: String, code: String? = nil, subject: String = "stub-user") -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": .string(subject),
            "iat": .integer(now), "exp": .integer(now + 3600),
        ]
        if let code, let nonce = lock.withLock({ nonces[code] }) { claims["nonce"] = .string(nonce) }
        return try! key.sign(claims: claims, header: ["typ": "JWT"])
    }
}
