import Foundation
import HTTPTypes
import Logging
import OAuth2Internals
@_exported import OAuth2TestSupport
@testable import OAuth2

/// A transport that answers from a closure and records what was sent. It stands in for
/// the network only; every rule under test is the library's real code.
final class StubTransport: HTTPTransport, @unchecked Sendable {
    struct Sent {
        var request: HTTPRequest
        var body: Data?
        var form: [String: String] {
            guard let body, let pairs = FormURLEncoding.decode(String(decoding: body, as: UTF8.self)) else { return [:] }
            return Dictionary(pairs, uniquingKeysWith: { first, _ in first })
        }
    }

    private let lock = NSLock()
    private var _sent: [Sent] = []
    private let handler: @Sendable (HTTPRequest, Data?) async throws -> (HTTPResponse, Data)

    init(_ handler: @escaping @Sendable (HTTPRequest, Data?) async throws -> (HTTPResponse, Data)) {
        self.handler = handler
    }

    /// Answers every request with the same status, body and content type.
    convenience init(status: Int = 200, json: String, headers: HTTPFields = [:]) {
        self.init { _, _ in
            var fields = headers
            fields[.contentType] = "application/json"
            return (HTTPResponse(status: .init(code: status), headerFields: fields), Data(json.utf8))
        }
    }

    var sent: [Sent] { lock.withLock { _sent } }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        lock.withLock { _sent.append(Sent(request: request, body: body)) }
        return try await handler(request, body)
    }
}

func response(_ status: Int, _ body: String, contentType: String? = "application/json", headers: HTTPFields = [:]) -> (HTTPResponse, Data) {
    var fields = headers
    if let contentType { fields[.contentType] = contentType }
    return (HTTPResponse(status: .init(code: status), headerFields: fields), Data(body.utf8))
}

enum Fixtures {
    static let issuer = "https://as.example.com"
    static let metadata = ServerMetadata(
        issuer: URL(string: issuer)!,
        authorizationEndpoint: URL(string: "https://as.example.com/authorize")!,
        tokenEndpoint: URL(string: "https://as.example.com/token")!,
        revocationEndpoint: URL(string: "https://as.example.com/revoke")!,
        introspectionEndpoint: URL(string: "https://as.example.com/introspect")!
    )
    static let redirect = URL(string: "http://127.0.0.1:9999/callback")!

    static func configuration(secret: String? = "s3cr3t", method: ClientAuthenticationMethod? = nil) -> ClientConfiguration {
        ClientConfiguration(clientID: "client-1", clientSecret: secret, authenticationMethod: method, redirectURI: redirect, scopes: ["openid", "read"])
    }

    static func client(
        _ transport: any HTTPTransport,
        metadata: ServerMetadata = Fixtures.metadata,
        configuration: ClientConfiguration = Fixtures.configuration(),
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = Logger(label: "test")
    ) throws -> OAuth2Client {
        try OAuth2Client(metadata: metadata, configuration: configuration, environment: HTTPEnvironment(transport: transport, interceptors: interceptors, logger: logger))
    }
}

extension StubTransport {
    /// A plain token response: a Bearer token for a minute, with a refresh token.
    static let tokenJSON = #"{"access_token":"at-1","token_type":"Bearer","expires_in":60,"refresh_token":"rt-1"}"#
}
