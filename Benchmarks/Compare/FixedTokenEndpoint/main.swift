// The fixed-answer token endpoint of scripts/bench-compare: SwiftNIO HTTP/1.1 on 127.0.0.1,
// one event-loop thread, keep-alive, that answers every POST with the same small token
// response (a Bearer token, expires_in 3600) and anything else with 404. It reads no
// form and checks no credentials, so that a grant costs the server almost nothing and
// the client's own cost shows.
//
//   fixed-token-endpoint PORT      (prints "ready" once listening; 0 picks a free port and prints it)
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private let answer = #"{"access_token":"2YotnFZFEjr1zCsicMWpAA.fixed-answer-access-token","token_type":"Bearer","expires_in":3600,"scope":"read"}"#

final class FixedAnswer: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var head: HTTPRequestHead?
    private let body: ByteBuffer = ByteBuffer(string: answer)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request): head = request
        case .body: break
        case .end:
            guard let request = head else { return }
            head = nil
            let found = request.method == .POST
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Cache-Control", value: "no-store")
            headers.add(name: "Content-Length", value: found ? String(body.readableBytes) : "0")
            if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: found ? .ok : .notFound, headers: headers))), promise: nil)
            if found { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
            let keepAlive = request.isKeepAlive, channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
    }
}

let port = Int(CommandLine.arguments.dropFirst().first ?? "0") ?? 0
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 512)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(FixedAnswer())
        }
    }
    .bind(host: "127.0.0.1", port: port).wait()
// Unbuffered, so that a script reading a pipe sees it at once.
let ready = "ready \(channel.localAddress?.port ?? port)\n"
_ = ready.withCString { write(1, $0, strlen($0)) }
try channel.closeFuture.wait()
