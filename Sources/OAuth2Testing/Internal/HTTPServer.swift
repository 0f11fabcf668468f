import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A request as the provider's endpoints see it.
struct HTTPServerRequest: Sendable {
    var method: HTTPMethod
    /// The request target as sent (path and query).
    var uri: String
    var headers: HTTPHeaders
    var body: [UInt8]

    /// The path, without the query.
    var path: String { String(uri.prefix { $0 != "?" }) }
    /// The raw query, without the `?`.
    var query: Substring? {
        guard let mark = uri.firstIndex(of: "?") else { return nil }
        return uri[uri.index(after: mark)...]
    }
}

/// What an endpoint answers.
enum HTTPServerReply: Sendable {
    /// A response.
    case response(HTTPResponseStatus, headers: [(String, String)], body: [UInt8])
    /// Close the connection without answering.
    case close
}

/// A small HTTP/1.1 server on a loopback address: each request, read whole (up to
/// ``maximumBodySize``), is answered by an async closure. Connections are kept alive as
/// the client asks; requests on one connection are answered in order. With a TLS context it
/// speaks HTTPS.
final class HTTPServer: Sendable {
    typealias Handler = @Sendable (HTTPServerRequest) async -> HTTPServerReply

    /// The largest request body read; a larger one is answered 413 and the connection closed.
    static let maximumBodySize = 1 << 20

    let group: MultiThreadedEventLoopGroup
    let port: Int
    private let serverChannel: any Channel
    private let serving: Task<Void, Never>

    init(host: String, port: Int, tls: NIOSSLContext? = nil, handler: @escaping Handler) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let listener: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
        do {
            listener = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .bind(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
        self.serverChannel = listener.channel
        self.port = listener.channel.localAddress?.port ?? port
        serving = Task {
            await withTaskGroup(of: Void.self) { connections in
                try? await listener.executeThenClose { inbound in
                    for try await connection in inbound {
                        connections.addTask { await Self.serve(connection, handler: handler) }
                    }
                }
                connections.cancelAll()
            }
        }
    }

    /// Stops listening, closes every connection and waits for the handlers to end.
    func shutdown() async {
        serving.cancel()
        try? await serverChannel.close()
        // Cancelling ends every connection's read loop, which closes its channel; only then
        // does the event loop go, so that no close is scheduled on a loop already shut down.
        await serving.value
        try? await group.shutdownGracefully()
    }

    private static func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, handler: Handler) async {
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body: [UInt8] = []
            var tooLarge = false
            for try await part in inbound {
                switch part {
                case .head(let newHead):
                    head = newHead
                    body = []
                    tooLarge = false
                case .body(let buffer):
                    if body.count + buffer.readableBytes > maximumBodySize {
                        tooLarge = true
                    } else {
                        body.append(contentsOf: buffer.readableBytesView)
                    }
                case .end:
                    guard let requestHead = head else { return }
                    head = nil
                    if tooLarge {
                        try await write(.payloadTooLarge, headers: [("Content-Type", "text/plain; charset=utf-8")],
                                        body: Array("Request body too large.\n".utf8), keepAlive: false, to: outbound)
                        return
                    }
                    let request = HTTPServerRequest(method: requestHead.method, uri: requestHead.uri, headers: requestHead.headers, body: body)
                    switch await handler(request) {
                    case .close:
                        return
                    case .response(let status, let headers, let responseBody):
                        let keepAlive = requestHead.isKeepAlive && !Task.isCancelled
                        try await write(status, headers: headers, body: responseBody, keepAlive: keepAlive, to: outbound)
                        if !keepAlive { return }
                    }
                }
            }
        }
    }

    private static func write(
        _ status: HTTPResponseStatus, headers: [(String, String)], body: [UInt8], keepAlive: Bool,
        to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        var fields = HTTPHeaders(headers)
        fields.replaceOrAdd(name: "Content-Length", value: String(body.count))
        fields.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: status, headers: fields)))
        if !body.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
        try await outbound.write(.end(nil))
    }
}

/// A reply is also what a failed step of an endpoint returns (`Result<_, HTTPServerReply>`):
/// the answer that refuses the request.
extension HTTPServerReply: Error {}
