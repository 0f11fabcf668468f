import Foundation
import HTTPTypes
import OAuth2

/// A provider stand-in on a real socket: it answers every request from a closure and
/// records them all. The tests' provider stubs are made of it — one per provider preset in
/// the conformance tests, the token and device endpoints of the sign-in front ends' tests.
/// (For a whole OpenID provider with sign-in, use `OAuth2Testing`'s `TestProvider`.)
public final class RecordingProvider: @unchecked Sendable {
    /// Answers a request, given the provider's base URL (discovery documents name it).
    public typealias Respond = @Sendable (LocalHTTPServer.Request, URL) async -> LocalHTTPServer.Reply

    // (NSLock, not the library's lock: this module is shared with the benchmarks package,
    // which cannot see the library's package-level declarations.)
    private let lock = NSLock()
    private var received: [LocalHTTPServer.Request] = []  // guarded by lock
    private var base: URL?  // guarded by lock

    private init() {}

    /// Every request received, in order.
    public var requests: [LocalHTTPServer.Request] { lock.withLock { received } }
    /// The requests received at `path`.
    public func requests(to path: String) -> [LocalHTTPServer.Request] { requests.filter { $0.path == path } }
    /// The forms of the requests received at `path`, in order.
    public func forms(to path: String) -> [[String: String]] { requests(to: path).map(\.form) }
    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { lock.withLock { base! } }

    /// Runs `body` with a provider answering through `respond`, then shuts its server down.
    public static func with<T>(_ respond: @escaping Respond, _ body: (RecordingProvider) async throws -> T) async throws -> T {
        let provider = RecordingProvider()
        return try await LocalHTTPServer.with(handler: { [provider] request in
            provider.lock.withLock { provider.received.append(request) }
            return await respond(request, provider.baseURL)
        }) { server in
            provider.lock.withLock { provider.base = server.baseURL }
            return try await body(provider)
        }
    }
}
