import Foundation
import HTTPTypes
import OAuth2Internals

/// A body that passes through the app without being held whole: the bytes of a request a
/// browser sends to a proxied API, or of the API's answer. One pass only.
///
/// A framework adapter wraps its own streaming body (Hummingbird's `RequestBody`, Vapor's
/// `Request.Body`, AsyncHTTPClient's response body) with ``init(_:transform:)``.
public struct WebStreamBody: AsyncSequence, Sendable {
    /// A chunk of the body.
    public typealias Element = [UInt8]

    private let makeNext: @Sendable () -> (@Sendable () async throws -> [UInt8]?)

    /// The chunks of `base`, each made into bytes by `transform`.
    public init<Base: AsyncSequence & Sendable>(_ base: Base, transform: @escaping @Sendable (Base.Element) -> [UInt8]) {
        makeNext = {
            let box = IteratorBox(base.makeAsyncIterator())
            return { try await box.next().map(transform) }
        }
    }

    /// A body of `bytes`, in one chunk (none when empty).
    public init(_ bytes: [UInt8]) {
        makeNext = {
            let read = Locked(bytes.isEmpty)
            return {
                read.withLock { read in
                    defer { read = true }
                    return read ? nil : bytes
                }
            }
        }
    }

    /// An empty body.
    public static var empty: WebStreamBody { WebStreamBody([]) }

    /// Reads the chunks in order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let nextChunk: @Sendable () async throws -> [UInt8]?

        /// The next chunk; `nil` at the end.
        public mutating func next() async throws -> [UInt8]? { try await nextChunk() }
    }

    /// An iterator over the chunks (the body is read once).
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(nextChunk: makeNext()) }

    /// At most `limit` bytes of the body, then stops reading (the rest is dropped).
    func prefix(bytes limit: Int) async throws -> [UInt8] {
        var collected: [UInt8] = []
        for try await chunk in self {
            collected += chunk.prefix(limit - collected.count)
            if collected.count >= limit { break }
        }
        return collected
    }
}

/// The iterator of a base sequence, behind a lock-free box that only one reader uses at a time
/// (an async iterator is read by one task, in turn).
private final class IteratorBox<Base: AsyncIteratorProtocol>: @unchecked Sendable {
    private var base: Base
    init(_ base: Base) { self.base = base }
    func next() async throws -> Base.Element? { try await base.next() }
}

/// A response whose body is streamed: what ``SinglePageAppBackend`` answers, for a framework
/// adapter to send.
public struct WebStreamResponse: Sendable {
    /// The status and header fields.
    public var head: HTTPResponse
    /// The body, streamed as it arrives.
    public var body: WebStreamBody
    /// The number of bytes of ``body`` when known (the API's `Content-Length`).
    public var contentLength: Int?

    /// Creates a response.
    public init(head: HTTPResponse, body: WebStreamBody, contentLength: Int? = nil) {
        self.head = head
        self.body = body
        self.contentLength = contentLength
    }

    /// A whole response as a streamed one.
    init(_ answer: WebResponse) {
        self.init(head: answer.response, body: WebStreamBody(answer.body), contentLength: answer.body.count)
    }
}

/// How a ``SinglePageAppBackend`` reaches the APIs it proxies: one request with a streamed
/// body, its answer with a streamed body. `OAuth2AsyncHTTPClient`'s
/// `AsyncHTTPClientProxyTransport` is one (without decompression and without following
/// redirects, as a proxy must).
public protocol WebProxyTransport: Sendable {
    /// Sends `request` (an absolute URL) with `body` and returns the answer's head and body
    /// once the head has arrived. The whole exchange, body included, ends by `deadline`.
    ///
    /// - Parameters:
    ///   - request: the request's head, header fields as they must go.
    ///   - body: the request's body; `nil`: none.
    ///   - contentLength: the body's length when known (`Content-Length`), else `nil`.
    ///   - deadline: how long the whole exchange may last.
    /// - Throws: a transport error (the backend answers 502, or 504 for a deadline).
    func send(_ request: HTTPRequest, body: WebStreamBody?, contentLength: Int?, deadline: Duration) async throws -> (HTTPResponse, WebStreamBody)
}
