import Foundation
import Logging
import NIOCore
import NIOPosix
import OAuth2Internals

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The listening half of `oauth2 agent`: a Unix socket served with SwiftNIO, one request
/// and one answer per connection (``AgentProtocol``).
///
/// - The socket is made 0600 in a directory the user owns that no one else can write to
///   (``AgentSocketPath``); a socket left by an agent that died is replaced, a live one is not.
/// - Each connection's peer is checked with `SO_PEERCRED`: a process of another user (unless
///   allowed) is closed without an answer, and a log line says who it was.
/// - A request is read within ``Configuration/readTimeout`` and ``AgentProtocol/maximumLineSize``
///   bytes; a client that sends nothing, garbage or too much, or goes away, loses its own
///   connection only. Connections are served concurrently.
/// - ``shutdown()`` stops listening, closes every connection and removes the socket (if it is
///   still the one this server made).
///
/// SwiftNIO (rather than a hand-written accept loop) because the tool already links it, and
/// it gives non-blocking reads with a per-connection deadline and many clients at once on
/// one event loop.
final class AgentServer: Sendable {
    /// What the server needs to know.
    struct Configuration: Sendable {
        /// Where to listen.
        var socket: AgentSocketPath
        /// The users whose programs get answers: the agent's own by default (and those of
        /// `--allow-uid`).
        var allowedUIDs: Set<UInt32> = [UInt32(getuid())]
        /// How long a client has to send its request, from the moment it connects.
        var readTimeout: TimeAmount = .seconds(10)
        /// Make the socket's directory (0700) when it is missing.
        var createsDirectory = false
    }

    /// Answers one request (never throws: failures are answers too).
    typealias Handler = @Sendable (AgentProtocol.Request) async -> AgentProtocol.Answer

    let configuration: Configuration
    private let serverChannel: any Channel
    private let serving: Task<Void, Never>
    private let socketIdentity: AgentSocketPath.FileIdentity?
    /// Requests read and not yet answered (tests wait on it as a gate).
    let requestsInProgress: Locked<Int>

    private init(
        configuration: Configuration, serverChannel: any Channel, serving: Task<Void, Never>, socketIdentity: AgentSocketPath.FileIdentity?,
        requestsInProgress: Locked<Int>
    ) {
        self.configuration = configuration
        self.serverChannel = serverChannel
        self.serving = serving
        self.socketIdentity = socketIdentity
        self.requestsInProgress = requestsInProgress
    }

    /// Checks the socket's place, binds it and starts serving.
    ///
    /// - Throws: ``CLIError``: the directory or an existing socket is refused
    ///   (``AgentSocketPath``), another agent is listening there, or the socket cannot be made.
    static func start(_ configuration: Configuration, logger: Logger, handler: @escaping Handler) async throws -> AgentServer {
        let socket = configuration.socket
        try socket.checkLength()
        try socket.prepareDirectory(create: configuration.createsDirectory)
        if try socket.checkSocket() == .socket {
            guard !socket.isLive() else {
                throw CLIError(.refused, "An agent is already listening on \(socket.path)", hint: "stop it first, or choose another path with --socket")
            }
            // A socket left behind by an agent that is gone.
            unlink(socket.path)
            logger.info("replaced the stale socket \(socket.path)")
        }

        let allowed = configuration.allowedUIDs
        let readTimeout = configuration.readTimeout
        let inProgress = Locked(0)
        let listener: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
        // The socket is made with the process's umask, then made 0600: until then the
        // directory (the user's, writable by no one else) and the umask keep others out. (The
        // umask is not narrowed around the bind: it is the whole process's.)
        let descriptor: Int32
        switch socket.bindListening(backlog: 128) {
        case .success(let bound): descriptor = bound
        case .failure(let error): throw CLIError(.refused, "Cannot listen on \(socket.path) (\(error.description))")
        }
        do {
            listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelOption(.maxMessagesPerRead, value: 1)
                .bind(descriptor) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            unlink(socket.path)
            throw CLIError(.refused, "Cannot listen on \(socket.path): \(ErrorReport.reason(error))")
        }
        chmod(socket.path, 0o600)
        let identity = socket.identity()
        let serving = Task {
            await withDiscardingTaskGroup { connections in
                try? await listener.executeThenClose { inbound in
                    for try await connection in inbound {
                        connections.addTask {
                            await serve(connection, allowed: allowed, readTimeout: readTimeout, inProgress: inProgress, logger: logger, handler: handler)
                        }
                    }
                }
                connections.cancelAll()
            }
        }
        logger.info("listening on \(socket.path)")
        return AgentServer(
            configuration: configuration, serverChannel: listener.channel, serving: serving, socketIdentity: identity,
            requestsInProgress: inProgress)
    }

    /// Stops listening, ends every connection, waits for them, and removes the socket if it
    /// is still the one this server made.
    func shutdown() async {
        serving.cancel()
        try? await serverChannel.close()
        await serving.value
        // Not a socket another agent made since (after removing this one's): that one is
        // not the same file, or it answers.
        if let made = socketIdentity, configuration.socket.identity() == made, !configuration.socket.isLive() {
            unlink(configuration.socket.path)
        }
    }

    // MARK: - One connection

    private static func serve(
        _ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, allowed: Set<UInt32>, readTimeout: TimeAmount, inProgress: Locked<Int>,
        logger: Logger, handler: Handler
    ) async {
        let channel = connection.channel
        let credentials = await PeerCredentials.of(channel)
        if credentials == nil, !channel.isActive {
            logger.debug("a client went away before it could be identified")
            return
        }
        guard let peer = credentials, allowed.contains(peer.uid) else {
            let who = credentials.map { "uid \($0.uid), pid \($0.pid)" } ?? "a peer the system could not name"
            logger.warning("refused a connection from \(who): not this agent's user (see --allow-uid)")
            try? await channel.close()
            return
        }
        // A client that sends nothing (or too slowly) is closed after the read timeout.
        let deadline = channel.eventLoop.scheduleTask(in: readTimeout) { channel.close(promise: nil) }
        try? await connection.executeThenClose { inbound, outbound in
            let line: RequestLine
            do {
                line = try await readLine(inbound)
            } catch {
                deadline.cancel()
                logger.debug("dropped a connection (pid \(peer.pid)) before its request was read")
                return
            }
            deadline.cancel()
            let answer: AgentProtocol.Answer
            switch line {
            case .tooLarge:
                answer = .failure(AgentProtocol.RequestError.tooLarge.failure)
            case .ended:
                logger.debug("a client (pid \(peer.pid)) went away before its request ended")
                return
            case .complete(let bytes):
                do throws(AgentProtocol.RequestError) {
                    let request = try AgentProtocol.decodeRequest(bytes)
                    inProgress.withLock { $0 += 1 }
                    answer = await handler(request)
                    inProgress.withLock { $0 -= 1 }
                    if case .failure(let failure) = answer {
                        logger.info("profile \(request.profile): \(AgentProtocol.code(of: failure.status)) for pid \(peer.pid)")
                    } else {
                        logger.debug("profile \(request.profile): a token for pid \(peer.pid)")
                    }
                } catch {
                    answer = .failure(error.failure)
                    logger.info("a request that is not one (pid \(peer.pid)): \(error.failure.message)")
                }
            }
            try await outbound.write(ByteBuffer(bytes: AgentProtocol.encode(answer)))
        }
    }

    /// What a client sent before its newline, or why there is no such line.
    private enum RequestLine {
        case complete(Data)
        case tooLarge
        /// The client closed its end (or the connection was closed) before a newline.
        case ended
    }

    /// Reads up to the first newline, at most ``AgentProtocol/maximumLineSize`` bytes.
    private static func readLine(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>) async throws -> RequestLine {
        var bytes = Data()
        for try await buffer in inbound {
            let view = buffer.readableBytesView
            if let newline = view.firstIndex(of: UInt8(ascii: "\n")) {
                bytes.append(contentsOf: view[..<newline])
                return bytes.count + 1 <= AgentProtocol.maximumLineSize ? .complete(bytes) : .tooLarge
            }
            bytes.append(contentsOf: view)
            if bytes.count >= AgentProtocol.maximumLineSize { return .tooLarge }
        }
        return .ended
    }
}
