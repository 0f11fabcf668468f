import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOSSL
import OAuth2
import OAuth2Web

/// OAuth2Web's `WebProxyTransport` on AsyncHTTPClient: how a `SinglePageAppBackend` reaches
/// the APIs it proxies, both bodies streamed (never held whole).
///
/// Unlike ``AsyncHTTPClientTransport`` it leaves the answer as the API sent it: no
/// decompression (the `Content-Encoding` and `Content-Length` go on to the browser as
/// they came) and no redirect followed (the browser gets the API's redirect).
///
/// ```swift
/// let transport = AsyncHTTPClientProxyTransport()
/// let backend = SinglePageAppBackend(signIn: signIn, configuration: configuration, transport: transport)
/// // …
/// try await transport.shutdown()
/// ```
public final class AsyncHTTPClientProxyTransport: WebProxyTransport {
    private let client: HTTPClient
    private let ownsClient: Bool

    /// A transport with an `HTTPClient` of its own: TLS 1.2 or later, the system's trust
    /// roots or `tls.caBundlePath`, a connect timeout of `connectTimeout`. Shut it down
    /// (``shutdown()``) when done.
    public init(tls: AsyncHTTPClientTransport.TLSOptions = AsyncHTTPClientTransport.TLSOptions(), connectTimeout: Duration = .seconds(10)) {
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        tlsConfiguration.minimumTLSVersion = tls.minimumTLSVersion
        if let path = tls.caBundlePath { tlsConfiguration.trustRoots = .file(path) }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tlsConfiguration, redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(Int64(connectTimeout.components.seconds) * 1_000_000_000 + connectTimeout.components.attoseconds / 1_000_000_000)),
            decompression: .disabled)
        configuration.httpVersion = .automatic
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        ownsClient = true
    }

    /// A transport over `client` (which must not decompress nor follow redirects); the
    /// caller shuts it down.
    public init(client: HTTPClient) {
        self.client = client
        ownsClient = false
    }

    /// Shuts down the `HTTPClient` this transport created (no-op for a wrapped one).
    public func shutdown() async throws {
        guard ownsClient else { return }
        try await client.shutdown()
    }

    /// Sends `request` with `body` streamed, and returns the head and the streamed body of
    /// the answer; the whole exchange ends by `deadline`.
    ///
    /// - Throws: `OAuth2Error` with source `.transport` (`.timeout` past
    ///   the deadline).
    public func send(_ request: HTTPRequest, body: WebStreamBody?, contentLength: Int?, deadline: Duration) async throws -> (HTTPResponse, WebStreamBody) {
        guard let url = request.url else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The request has no valid URL.")
        }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headerFields where field.name != .contentLength {
            outgoing.headers.add(name: field.name.rawName, value: field.value)
        }
        if let body {
            outgoing.body = .stream(ByteBuffers(body: body), length: contentLength.map { .known(Int64($0)) } ?? .unknown)
        }
        do {
            let response = try await client.execute(outgoing, deadline: .now() + .nanoseconds(Int64(deadline.components.seconds) * 1_000_000_000 + deadline.components.attoseconds / 1_000_000_000))
            var fields = HTTPFields()
            for header in response.headers {
                if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
            }
            let status = HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase)
            return (HTTPResponse(status: status, headerFields: fields), WebStreamBody(response.body) { Array(buffer: $0) })
        } catch {
            throw AsyncHTTPClientTransport.map(error)
        }
    }

    /// A `WebStreamBody` as the `ByteBuffer`s AsyncHTTPClient streams.
    private struct ByteBuffers: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let body: WebStreamBody
        struct AsyncIterator: AsyncIteratorProtocol {
            var base: WebStreamBody.AsyncIterator
            mutating func next() async throws -> ByteBuffer? { try await base.next().map { ByteBuffer(bytes: $0) } }
        }
        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: body.makeAsyncIterator()) }
    }
}
