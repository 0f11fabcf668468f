import Foundation
import NIOCore
import NIOPosix

/// A TCP relay on 127.0.0.1 in front of a server, for fault tests: it passes bytes both ways
/// and, on request, holds back what the client of one connection sends — a path that stalls
/// one way, TLS or not — for as long as that connection lasts. Either side closing closes
/// the other; what was held back is dropped (it never reached the server).
public final class TCPRelay: Sendable {
    /// One client connection and its connection to the server.
    public final class Link: @unchecked Sendable {
        /// The relay's own port on its connection to the server: the server sees it as the
        /// client's port (PostgreSQL's `pg_stat_activity.client_port`).
        public let upstreamPort: Int
        private let lock = NSLock()
        private var holding = false
        private var closed = false

        init(upstreamPort: Int) {
            self.upstreamPort = upstreamPort
        }

        /// Whether the client's bytes are held back.
        var isHolding: Bool { lock.withLock { holding } }
        /// Whether either side has closed.
        public var isClosed: Bool { lock.withLock { closed } }

        func hold() { lock.withLock { holding = true } }
        func close() { lock.withLock { closed = true } }
    }

    private final class LinkList: @unchecked Sendable {
        let lock = NSLock()
        var links: [Link] = []
    }

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let list: LinkList
    /// The port the relay listens on.
    public let port: Int

    /// Starts relaying connections to 127.0.0.1:`serverPort` from an ephemeral port.
    public init(toPort serverPort: Int) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let list = LinkList()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                // The server side first; the client's channel reads once both are wired.
                ClientBootstrap(group: inbound.eventLoop).connect(host: "127.0.0.1", port: serverPort).flatMap { outbound in
                    let link = Link(upstreamPort: outbound.localAddress?.port ?? 0)
                    list.lock.withLock { list.links.append(link) }
                    do {
                        try inbound.pipeline.syncOperations.addHandler(Pump(link: link, peer: outbound, fromClient: true))
                        try outbound.pipeline.syncOperations.addHandler(Pump(link: link, peer: inbound, fromClient: false))
                        return inbound.eventLoop.makeSucceededVoidFuture()
                    } catch {
                        outbound.close(promise: nil)
                        return inbound.eventLoop.makeFailedFuture(error)
                    }
                }
            }
        do {
            channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
        self.list = list
        self.port = channel.localAddress?.port ?? 0
    }

    /// Every connection relayed so far, open or closed, in the order they came.
    public var links: [Link] { list.lock.withLock { list.links } }

    /// From now on, holds back what the client of the connection whose server-side port is
    /// `upstreamPort` sends; `false` when no such connection is open.
    @discardableResult
    public func hold(upstreamPort: Int) -> Bool {
        guard let link = links.first(where: { $0.upstreamPort == upstreamPort && !$0.isClosed }) else { return false }
        link.hold()
        return true
    }

    /// Stops listening and closes every connection.
    public func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    /// Passes what one side reads to the other (the client's bytes only while its link does
    /// not hold them back), and closes the other side when this one closes.
    private final class Pump: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let link: Link
        let peer: any Channel
        let fromClient: Bool

        init(link: Link, peer: any Channel, fromClient: Bool) {
            self.link = link
            self.peer = peer
            self.fromClient = fromClient
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !(fromClient && link.isHolding) else { return }
            peer.writeAndFlush(unwrapInboundIn(data), promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            link.close()
            peer.close(promise: nil)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
