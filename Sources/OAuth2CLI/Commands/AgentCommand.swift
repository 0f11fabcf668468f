import ArgumentParser
import Foundation
import Logging

struct AgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Hand out access tokens over a Unix socket: the programs served never read a refresh token or the store.",
        discussion: """
            Listens on --socket (default: $OAUTH2_AGENT_SOCK, else $XDG_RUNTIME_DIR/oauth2/agent.sock, else \
            /tmp/oauth2-UID/agent.sock), a socket only your user can use (0600, in a directory of yours that no one else \
            can write to; each client's user is checked). With OAUTH2_AGENT_SOCK set to that path, `oauth2 token` asks \
            the agent instead of reading the store; a container gets tokens through the mounted directory.

            The agent stays in the foreground and logs to stderr (-v: each request, and the library's exchanges, tokens \
            redacted); run it under systemd --user or with `&`. SIGTERM or Ctrl-C stops it and removes the socket.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("The socket to listen on.", valueName: "path")) var socket: String?
    @Option(
        name: .customLong("allow-uid"),
        help: ArgumentHelp("Also answer the programs of this user id (repeatable): a container's user, say.", valueName: "uid"))
    var allowUIDs: [UInt32] = []

    func run() async throws {
        var logger = Logger(label: "oauth2-agent") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = global.verbosity > 0 ? .debug : .info
        let path = socket.map(AgentSocketPath.init) ?? AgentSocketPath.agentDefault()
        let configuration = AgentServer.Configuration(
            socket: path, allowedUIDs: Set(allowUIDs).union([UInt32(getuid())]), createsDirectory: socket == nil && AgentSocketPath.isDefaultDirectory(path))
        let tokens = AgentTokens(global: global)
        let server = try await AgentServer.start(configuration, logger: logger) { request in await tokens.answer(request) }

        // Until SIGTERM, or Ctrl-C (which cancels this command's task).
        let (stopped, stop) = AsyncStream.makeStream(of: Void.self)
        let terminate = SignalWatch(SIGTERM) { stop.finish() }
        await withTaskCancellationHandler {
            for await _ in stopped {}
        } onCancel: {
            stop.finish()
        }
        terminate.cancel()
        await server.shutdown()
        logger.info("stopped; removed \(path.path)")
    }
}

/// Runs a handler when the process gets a signal (instead of the signal's default action)
/// until cancelled.
final class SignalWatch: @unchecked Sendable {
    private let source: any DispatchSourceSignal
    private let number: Int32

    init(_ number: Int32, _ handler: @escaping @Sendable () -> Void) {
        self.number = number
        signal(number, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler(handler: handler)
        source.resume()
    }

    func cancel() {
        source.cancel()
        signal(number, SIG_DFL)
    }
}
