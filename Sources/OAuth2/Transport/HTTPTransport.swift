import Foundation
import HTTPTypes

/// The one thing the library needs from an HTTP stack: send a request with an optional
/// body and hand back the response and its body.
///
/// Two adapters ship with the library: ``URLSessionTransport`` (in `OAuth2`, with the package's `URLSession` trait, on by default) and
/// `AsyncHTTPClientTransport` (in `OAuth2AsyncHTTPClient`). A transport must not follow
/// redirects (an OAuth endpoint that redirects is an error, and following one could carry
/// credentials elsewhere), must bound the size of the body it reads, must stop and throw when
/// its task is cancelled (that is how an exchange ends at ``HTTPEnvironment/requestDeadline``:
/// the library cancels the transport's work, so a transport needs no time limit of its own
/// but for connecting), and should throw ``OAuth2Error`` with source
/// ``OAuth2Error/Source/transport`` and code ``OAuth2Error/Code/network``,
/// ``OAuth2Error/Code/timeout`` or ``OAuth2Error/Code/tls``.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response and its full body.
    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data)
}

/// A hook around every request the client sends: change the request (add a header, a
/// parameter, sign it) before it leaves, and observe each response.
///
/// Both methods have default implementations, so an interceptor implements only what it
/// needs. Interceptors run in the order they are given to the client; ``willSend(_:body:kind:)``
/// may throw to stop the request.
public protocol HTTPInterceptor: Sendable {
    /// Called before a request is sent; may modify it.
    func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws
    /// Called after a response arrives, before the library reads it.
    func didReceive(_ response: HTTPResponse, body: Data, for request: HTTPRequest, kind: RequestKind) async
}

extension HTTPInterceptor {
    /// Does nothing.
    public func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws {}
    /// Does nothing.
    public func didReceive(_ response: HTTPResponse, body: Data, for request: HTTPRequest, kind: RequestKind) async {}
}

/// What the transport adapters bound on their own: the connection and the size of a
/// response.
///
/// How long a whole exchange may take is not here: that is
/// ``HTTPEnvironment/requestDeadline``, one limit for connection, head, body and retries,
/// which the library enforces by cancelling the transport's work.
public struct TransportOptions: Sendable {
    /// The longest the connection (TCP and TLS) may take, inside the request deadline.
    /// Default 10 s. `AsyncHTTPClientTransport` applies it; FoundationNetworking's
    /// `URLSession` has no limit for the connection alone, so ``URLSessionTransport``'s
    /// connections are bounded by the request deadline only.
    public var connectTimeout: Duration
    /// The largest response body accepted; a longer one is an error. Default 1 MiB, far
    /// above any real OAuth response.
    public var maximumResponseSize: Int

    /// Creates options.
    public init(connectTimeout: Duration = .seconds(10), maximumResponseSize: Int = 1 << 20) {
        self.connectTimeout = connectTimeout
        self.maximumResponseSize = maximumResponseSize
    }
}

extension Duration {
    var timeInterval: TimeInterval {
        let parts = components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }
}
