import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Asks `oauth2 agent` for a profile's access token over its Unix socket
/// (``AgentProtocol``): the way every command that only needs an access token gets one
/// when `OAUTH2_AGENT_SOCK` is set — no store opened, no refresh token read, no thread or
/// event loop started (plain blocking calls, bounded by a deadline).
///
/// ```swift
/// if let socket = AgentClient.configuredSocket {
///     let token = try AgentClient.accessToken(profile: global.profileName, minimumTTL: 60, socket: socket)
///     Output.result(token.accessToken)
/// }
/// ```
enum AgentClient {
    /// The socket `OAUTH2_AGENT_SOCK` names, when it is set and not empty.
    static var configuredSocket: AgentSocketPath? {
        guard let path = ProcessInfo.processInfo.environment[AgentSocketPath.environmentVariable], !path.isEmpty else { return nil }
        return AgentSocketPath(path)
    }

    /// How long the agent may take to answer (it may be renewing the token, with its own
    /// deadlines on each exchange).
    static let answerDeadline: Duration = .seconds(120)

    /// The profile's access token from the agent at `socket` (by default
    /// ``configuredSocket``), valid for at least `minimumTTL` more seconds when the
    /// provider's token lifetime allows it.
    ///
    /// Before connecting, the socket and its directory are checked (``AgentSocketPath``): a
    /// socket another user could have made or could replace is refused.
    ///
    /// - Throws: ``CLIError`` with the status and the sentence a command prints: the agent's
    ///   own failures as it answered them (`sign_in_again` → exit 5…); `transient` when no
    ///   agent listens or it does not answer in time; `refused` for a socket that fails the
    ///   checks, a connection closed without an answer (the agent refuses other users'
    ///   programs), or an answer this build cannot read; `cancelled` when the calling task
    ///   is cancelled while waiting.
    static func accessToken(profile: String, minimumTTL: Int = 0, socket: AgentSocketPath? = nil) throws -> AgentProtocol.Token {
        guard let socket = socket ?? configuredSocket else {
            throw CLIError.usage("No agent socket is named", hint: "set \(AgentSocketPath.environmentVariable) to the path `oauth2 agent` listens on")
        }
        try ProfileStore.validate(name: profile)
        try socket.checkLength()
        try socket.checkDirectory()
        guard try socket.checkSocket() == .socket else {
            throw CLIError(.transient, "No agent socket at \(socket.path)", hint: noAgentHint)
        }
        let fd: Int32
        switch socket.connect() {
        case .success(let connected): fd = connected
        case .failure(let error):
            throw CLIError(.transient, "Cannot reach the agent at \(socket.path) (\(error.description))", hint: noAgentHint)
        }
        defer { close(fd) }
        let request = AgentProtocol.encode(AgentProtocol.Request(profile: profile, minimumTTL: minimumTTL))
        try write(request, to: fd, socket: socket)
        let line = try readLine(from: fd, socket: socket, deadline: ContinuousClock.now + answerDeadline)
        switch AgentProtocol.decodeAnswer(line) {
        case .token(let token): return token
        case .failure(let failure): throw CLIError(failure.status, failure.message, hint: failure.hint)
        }
    }

    /// The agent closed the connection before answering: what it does to other users' programs.
    private static func closedWithoutAnswer(_ socket: AgentSocketPath) -> CLIError {
        CLIError(
            .refused, "The agent at \(socket.path) closed the connection without an answer",
            hint: "it answers only its own user's programs: run the agent as this user, or start it with --allow-uid \(getuid())")
    }

    private static let noAgentHint = "start one with `oauth2 agent`, or unset \(AgentSocketPath.environmentVariable)"

    private static func write(_ data: Data, to fd: Int32, socket: AgentSocketPath) throws {
        var sent = 0
        while sent < data.count {
            let count = data.withUnsafeBytes { bytes in
                #if os(Linux)
                send(fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                #else
                send(fd, bytes.baseAddress! + sent, bytes.count - sent, 0)
                #endif
            }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE || errno == ECONNRESET { throw closedWithoutAnswer(socket) }
                throw CLIError(.transient, "Writing to the agent at \(socket.path) failed (\(String(cString: strerror(errno))))", hint: noAgentHint)
            }
            sent += count
        }
    }

    /// Reads the answer line, polling in short slices so that a cancelled task (Ctrl-C)
    /// stops waiting.
    private static func readLine(from fd: Int32, socket: AgentSocketPath, deadline: ContinuousClock.Instant) throws -> Data {
        var line = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if Task.isCancelled { throw CLIError(.cancelled, "Cancelled while waiting for the agent") }
            guard ContinuousClock.now < deadline else {
                throw CLIError(.transient, "The agent at \(socket.path) did not answer within \(answerDeadline.components.seconds) seconds", hint: "try again")
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready < 0, errno != EINTR {
                throw CLIError(.transient, "Reading from the agent at \(socket.path) failed (\(String(cString: strerror(errno))))")
            }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                if errno == ECONNRESET, line.isEmpty { throw closedWithoutAnswer(socket) }
                throw CLIError(.transient, "Reading from the agent at \(socket.path) failed (\(String(cString: strerror(errno))))")
            }
            if count == 0 {
                guard line.isEmpty else { return line }  // no final newline: let the decoder judge
                throw closedWithoutAnswer(socket)
            }
            if let newline = buffer[..<count].firstIndex(of: UInt8(ascii: "\n")) {
                line.append(contentsOf: buffer[..<newline])
                return line
            }
            line.append(contentsOf: buffer[..<count])
            if line.count > AgentProtocol.maximumLineSize { return line }  // decodeAnswer refuses it
        }
    }
}
