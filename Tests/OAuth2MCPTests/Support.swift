#if MCP
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An authorization server's token endpoint behind a transport that answers from a closure
/// (no socket): each refresh gets `at-N` / `rt-N`, and every token request is counted. It
/// stands in for the network only; the session, its renewal and the authorizer are real.
final class TokenEndpoint: HTTPTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var forms: [[String: String]] = []
    let tokenType: String

    init(tokenType: String = "Bearer") { self.tokenType = tokenType }

    var requests: [[String: String]] { lock.withLock { forms } }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let form = FormURLEncoding.decode(String(decoding: body ?? Data(), as: UTF8.self))
            .map { Dictionary($0, uniquingKeysWith: { first, _ in first }) } ?? [:]
        let count = lock.withLock {
            forms.append(form)
            return forms.count
        }
        let json = #"{"access_token":"at-\#(count)","token_type":"\#(tokenType)","expires_in":3600,"refresh_token":"rt-\#(count)"}"#
        return (HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]), Data(json.utf8))
    }

    static let metadata = ServerMetadata(
        issuer: URL(string: "https://as.example.com")!, authorizationEndpoint: URL(string: "https://as.example.com/authorize")!,
        tokenEndpoint: URL(string: "https://as.example.com/token")!)

    /// A client of this endpoint, with `dpop` if given.
    func client(scopes: [String] = ["mcp:read"], dpop: DPoPOptions? = nil) throws -> OAuth2Client {
        var configuration = ClientConfiguration(clientID: "mcp-client", redirectURI: URL(string: "http://127.0.0.1:9/callback")!, scopes: scopes)
        configuration.dpop = dpop
        return try OAuth2Client(metadata: Self.metadata, configuration: configuration, environment: HTTPEnvironment(transport: self))
    }
}

/// The `URLSession` the SDK passes to the authorizer's hooks (which do not use it).
let unusedSession = URLSession(configuration: .ephemeral)

/// The MCP endpoint of the unit tests.
let mcpEndpoint = URL(string: "https://mcp.example.com/mcp")!
#endif
