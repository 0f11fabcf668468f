import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE

/// A provider stand-in on a real socket: it answers every request from a closure and
/// records them all. The tests' provider stubs are made of it — one per provider preset in
/// the conformance tests, the token and device endpoints of the sign-in front ends' tests.
/// (For a whole OpenID provider with sign-in, use `OAuth2Testing`'s `TestProvider`.)
package final class RecordingProvider: Sendable {
    /// Answers a request, given the provider's base URL (discovery documents name it).
    package typealias Respond = @Sendable (LocalHTTPServer.Request, URL) async -> LocalHTTPServer.Reply

    private struct State {
        var requests: [LocalHTTPServer.Request] = []
        var baseURL: URL?
    }

    private let state = Locked(State())

    private init() {}

    /// Every request received, in order.
    package var requests: [LocalHTTPServer.Request] { state.withLock { $0.requests } }
    /// The requests received at `path`.
    package func requests(to path: String) -> [LocalHTTPServer.Request] { requests.filter { $0.path == path } }
    /// The forms of the requests received at `path`, in order.
    package func forms(to path: String) -> [[String: String]] { requests(to: path).map(\.form) }
    /// `http://127.0.0.1:<port>`.
    package var baseURL: URL { state.withLock { $0.baseURL! } }

    /// Runs `body` with a provider answering through `respond`, then shuts its server down.
    package static func with<T>(_ respond: @escaping Respond, _ body: (RecordingProvider) async throws -> T) async throws -> T {
        let provider = RecordingProvider()
        return try await LocalHTTPServer.with(handler: { [provider] request in
            provider.state.withLock { $0.requests.append(request) }
            return await respond(request, provider.baseURL)
        }) { server in
            provider.state.withLock { $0.baseURL = server.baseURL }
            return try await body(provider)
        }
    }
}
