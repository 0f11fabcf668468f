import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web

/// `TokenIntrospector` on cached answers: `count` opaque tokens, each introspected once
/// through a transport that answers from memory (no socket), then checked again and again
/// from the cache (the SHA-256 of the token, a lock, a dictionary look-up, the expiry and
/// scope checks).
public struct IntrospectionContender: Sendable {
    public let introspector: TokenIntrospector
    public let tokens: [String]
    let transport: AnsweringTransport

    public init(count: Int = 1_000) async throws {
        transport = AnsweringTransport()
        let configuration = ClientConfiguration(clientID: "orders-api", clientSecret: "api-secret")
        let metadata = ServerMetadata(
            issuer: URL(string: "https://as.example")!, tokenEndpoint: URL(string: "https://as.example/token")!,
            introspectionEndpoint: URL(string: "https://as.example/introspect")!)
        let client = try await OAuth2Client(server: .metadata(metadata), configuration: configuration, environment: HTTPEnvironment(transport: transport, retryPolicy: .never))
        introspector = TokenIntrospector(client: client, accepting: .audiences(["https://api.example"]), policy: .init(maximumLifetime: 3_600))
        tokens = (0..<count).map { "opaque-\($0)-\(UUID().uuidString)" }
        for token in tokens { _ = try await introspector.verify(token, requiredScopes: [AccessTokenFixture.requiredScope]) }
        guard transport.calls == count, introspector.cachedCount == count else {
            throw ContenderError("introspection: \(transport.calls) calls and \(introspector.cachedCount) cached answers for \(count) tokens")
        }
    }

    /// The number of introspection calls so far (one per token: the rest are cache hits).
    public var calls: Int { transport.calls }

    @inline(never)
    public func validate(_ index: Int) async throws -> String? {
        try await introspector.verify(tokens[index % tokens.count], requiredScopes: [AccessTokenFixture.requiredScope]).subject
    }
}

/// Answers every introspection call with an active token (and counts the calls).
final class AnsweringTransport: HTTPTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var calls: Int { lock.withLock { count } }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        lock.withLock { count += 1 }
        let exp = Int(Date().timeIntervalSince1970) + 86_400
        let answer = #"{"active":true,"sub":"user-1","client_id":"client-1","scope":"read write","exp":\#(exp),"iss":"https://as.example","aud":"https://api.example"}"#
        return (HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]), Data(answer.utf8))
    }
}

/// A contender that could not be set up.
public struct ContenderError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
