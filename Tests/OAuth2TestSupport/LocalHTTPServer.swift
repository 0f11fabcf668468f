import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A real HTTP/1.1 server on 127.0.0.1 for tests that need a peer on a socket: a
/// misbehaving provider, a resource server that counts requests, a server that resets or
/// hangs. Each request is answered by an async closure.
public final class LocalHTTPServer: Sendable {
    /// What the handler sees of a request.
    public struct Request: Sendable {
        /// Method, path (with query) and header fields.
        public var head: HTTPRequest
        /// The body (empty when none).
        public var body: Data
        /// The request path without the query.
        public var path: String { String((head.path ?? "/").split(separator: "?", maxSplits: 1).first ?? "/") }
        /// The query items of the path.
        public var query: [String: String] {
            guard let components = URLComponents(string: head.path ?? "/") else { return [:] }
            return Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        }
        /// The body as form parameters (application/x-www-form-urlencoded).
        public var form: [String: String] {
            var components = URLComponents()
            components.percentEncodedQuery = String(decoding: body, as: UTF8.self).replacingOccurrences(of: "+", with: "%20")
            return Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        }
    }

    /// How to answer.
    public enum Reply: Sendable {
        /// Send this response.
        case response(HTTPResponse, Data)
        /// Close the connection without answering (a reset, as far as the client knows).
        case close
        /// Never answer (the client's timeout has to end it).
        case hang
        /// Send the head (with the body's length) at once, then the body one byte every
        /// `interval` — a server that is slow on purpose, or a network that drips.
        case drip(HTTPResponse, Data, every: Duration)
        /// Send the head declaring `declaredLength` bytes, then `data` (fewer), then close.
        case truncated(HTTPResponse, Data, declaredLength: Int)
        /// Reset the connection (TCP RST) without answering.
        case reset
        /// Send the head (with the body's full length) and the first `after` bytes of the
        /// body, then reset the connection.
        case resetMidBody(HTTPResponse, Data, after: Int)
        /// Send the head with `Transfer-Encoding: chunked` and one chunk of `data`, then close
        /// without the last chunk.
        case truncatedChunked(HTTPResponse, Data)

        /// A JSON answer.
        public static func json(_ status: Int = 200, _ body: String, headers: HTTPFields = [:]) -> Reply {
            var fields = headers
            fields[.contentType] = "application/json"
            return .response(HTTPResponse(status: .init(code: status), headerFields: fields), Data(body.utf8))
        }

        /// A plain answer with a content type.
        public static func body(_ status: Int = 200, _ body: Data, contentType: String?, headers: HTTPFields = [:]) -> Reply {
            var fields = headers
            if let contentType { fields[.contentType] = contentType }
            return .response(HTTPResponse(status: .init(code: status), headerFields: fields), body)
        }
    }

    public typealias Handler = @Sendable (Request) async -> Reply

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    /// The port the server listens on.
    public let port: Int
    private let connections: ConnectionCounter
    /// Connections the server has accepted so far.
    public var acceptedConnections: Int { connections.counts.accepted }
    /// Connections closed so far, by either side.
    public var closedConnections: Int { connections.counts.closed }
    private let scheme: String
    /// `http://127.0.0.1:<port>` (`https` with TLS).
    public var baseURL: URL { URL(string: "\(scheme)://127.0.0.1:\(port)")! }

    /// Starts a server on an ephemeral port; with `tls`, it speaks HTTPS (see ``TestTLS``).
    public init(threads: Int = 2, tls: NIOSSLContext? = nil, handler: @escaping Handler) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let connections = ConnectionCounter()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                connections.accepted()
                channel.closeFuture.whenComplete { _ in connections.closed() }
                return channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                }.flatMap {
                    channel.pipeline.configureHTTPServerPipeline()
                }.flatMap {
                    channel.pipeline.addHandler(RequestHandler(handler: handler))
                }
            }
        do {
            channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
        self.scheme = tls == nil ? "http" : "https"
        self.connections = connections
        self.port = channel.localAddress?.port ?? 0
    }

    /// Stops listening and closes every connection.
    public func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    /// Runs `body` with a server, and shuts it down afterwards.
    public static func with<T>(
        tls: NIOSSLContext? = nil, handler: @escaping Handler, _ body: (LocalHTTPServer) async throws -> T
    ) async throws -> T {
        let server = try await LocalHTTPServer(tls: tls, handler: handler)
        do {
            let value = try await body(server)
            await server.shutdown()
            return value
        } catch {
            await server.shutdown()
            throw error
        }
    }
}

/// Counts the server's connections as they open and close.
private final class ConnectionCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var state = (accepted: 0, closed: 0)
    var counts: (accepted: Int, closed: Int) { lock.withLock { state } }
    func accepted() { lock.withLock { state.accepted += 1 } }
    func closed() { lock.withLock { state.closed += 1 } }
}

private final class RequestHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let handler: LocalHTTPServer.Handler
    private var head: HTTPRequestHead?
    private var body = Data()

    init(handler: @escaping LocalHTTPServer.Handler) { self.handler = handler }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = Data()
        case .body(var buffer):
            body.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
        case .end:
            guard let head else { return }
            var fields = HTTPFields()
            for (name, value) in head.headers {
                if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
            }
            let request = LocalHTTPServer.Request(
                head: HTTPRequest(method: HTTPRequest.Method(head.method.rawValue) ?? .get, scheme: "http", authority: "127.0.0.1", path: head.uri, headerFields: fields),
                body: body)
            let keepAlive = head.isKeepAlive
            let handler = self.handler
            let loop = context.eventLoop
            let boxed = NIOLoopBound((self, context), eventLoop: loop)
            Task {
                let reply = await handler(request)
                loop.execute {
                    let (this, context) = boxed.value
                    this.write(reply, keepAlive: keepAlive, context: context)
                }
            }
        }
    }

    private func write(_ reply: LocalHTTPServer.Reply, keepAlive: Bool, context: ChannelHandlerContext) {
        switch reply {
        case .hang:
            return
        case .close:
            context.close(promise: nil)
        case .drip(let response, let data, let interval):
            writeHead(response, length: data.count, keepAlive: false, context: context)
            context.flush()
            drip(data[...], every: interval, channel: context.channel)
        case .truncated(let response, let data, let declaredLength):
            writeHead(response, length: declaredLength, keepAlive: false, context: context)
            var buffer = context.channel.allocator.buffer(capacity: data.count)
            buffer.writeBytes(data)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer)))).whenComplete { _ in channel.close(promise: nil) }
        case .reset:
            Self.reset(context.channel)
        case .resetMidBody(let response, let data, let after):
            writeHead(response, length: data.count, keepAlive: false, context: context)
            var buffer = context.channel.allocator.buffer(capacity: after)
            buffer.writeBytes(data.prefix(after))
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer)))).whenComplete { _ in Self.reset(channel) }
        case .truncatedChunked(let response, let data):
            var headers = HTTPHeaders()
            for field in response.headerFields { headers.add(name: field.name.rawName, value: field.value) }
            headers.replaceOrAdd(name: "Transfer-Encoding", value: "chunked")
            let head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: response.status.code), headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            var buffer = context.channel.allocator.buffer(capacity: data.count)
            buffer.writeBytes(data)
            let channel = context.channel
            // The encoder frames this chunk; the terminating chunk never comes.
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer)))).whenComplete { _ in channel.close(promise: nil) }
        case .response(let response, let data):
            writeHead(response, length: data.count, keepAlive: keepAlive, context: context)
            var buffer = context.channel.allocator.buffer(capacity: data.count)
            buffer.writeBytes(data)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !keepAlive {
                let channel = context.channel
                done.whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }

    /// Closes `channel` with a TCP RST (SO_LINGER 0) instead of a FIN.
    private static func reset(_ channel: any Channel) {
        guard let socket = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }

    private func writeHead(_ response: HTTPResponse, length: Int, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        for field in response.headerFields { headers.add(name: field.name.rawName, value: field.value) }
        headers.replaceOrAdd(name: "Content-Length", value: String(length))
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: response.status.code), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
    }

    /// Writes `rest` one byte per `interval` until it is sent or the peer goes away.
    private func drip(_ rest: Data.SubSequence, every interval: Duration, channel: any Channel) {
        guard let byte = rest.first, channel.isActive else {
            channel.close(promise: nil)
            return
        }
        let nanoseconds = interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000
        channel.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) {
            var buffer = channel.allocator.buffer(capacity: 1)
            buffer.writeInteger(byte)
            channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer))).whenComplete { result in
                guard case .success = result else { return }
                self.drip(rest.dropFirst(), every: interval, channel: channel)
            }
        }
    }
}
