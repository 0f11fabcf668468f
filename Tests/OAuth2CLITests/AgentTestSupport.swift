import ArgumentParser
import Foundation
import HTTPTypes
import NIOCore
import OAuth2
import OAuth2Internals
import OAuth2TestSupport
import OAuth2Testing

@testable import OAuth2CLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the agent's tests share: a private temporary directory (0700, short enough for a
/// socket path), profiles signed in at the embedded provider, a transport that holds token
/// requests at a gate, and blocking clients run on threads of their own (so that fifty of
/// them waiting do not take the cooperative pool the agent runs on).
final class AgentFixture: Sendable {
    let provider: TestProvider
    /// The config directory (profiles, file store, discovery cache).
    let directory: String
    /// Holds every token request until opened.
    let gate = Gate()
    let log = CapturedLog()

    private init(provider: TestProvider, directory: String) {
        self.provider = provider
        self.directory = directory
    }

    /// Starts a provider and makes the directory.
    static func start() async throws -> AgentFixture {
        AgentFixture(provider: try await TestProvider.start(), directory: try makePrivateDirectory())
    }

    /// Runs `body` with a new fixture, and cleans up after it.
    static func with(_ body: (AgentFixture) async throws -> Void) async throws {
        let fixture = try await start()
        do {
            try await body(fixture)
        } catch {
            await fixture.finish()
            throw error
        }
        await fixture.finish()
    }

    /// Shuts the provider down and removes the directory.
    func finish() async {
        await provider.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The socket path in the directory.
    var socket: AgentSocketPath { AgentSocketPath(directory + "/agent.sock") }

    /// The global options of the agent and of the sign-ins: this config directory, the file store.
    func global(profile: String? = nil) throws -> GlobalOptions {
        try GlobalOptions.parse(["--config-dir", directory + "/config", "--store", "file"] + (profile.map { ["--profile", $0] } ?? []))
    }

    /// Signs the demo user in (password grant, with a refresh token) as `profile`, and saves
    /// the tokens with their expiry changed by `adjust` (to make them due, say).
    @discardableResult
    func signIn(_ profile: String, adjust: (inout TokenSet) -> Void = { _ in }) async throws -> TokenSet {
        let context = Context(try global(profile: profile))
        let saved = Profile(
            issuer: provider.issuer.absoluteString, clientID: TestProvider.Demo.confidentialClientID, scopes: ["openid", "offline_access"],
            grant: "password", store: .file)
        let client = try await context.client(for: saved, secret: TestProvider.Demo.confidentialClientSecret)
        var tokens = try await client.password(
            username: TestProvider.Demo.username, password: TestProvider.Demo.password, scopes: ["openid", "offline_access"])
        adjust(&tokens)
        try await context.saveSignIn(profile: saved, client: client, tokens: tokens, secret: TestProvider.Demo.confidentialClientSecret)
        return tokens
    }

    /// The stored record of `profile`.
    func stored(_ profile: String) async throws -> StoredTokenSession? {
        let context = Context(try global(profile: profile))
        let saved = try context.requireProfile()
        return try await context.tokenStore(.file).load(context.sessionKey(for: saved))
    }

    /// Removes the stored tokens of `profile` (what `oauth2 logout` does to the store).
    func removeTokens(_ profile: String) async throws {
        let context = Context(try global(profile: profile))
        try await context.tokenStore(.file).remove(context.sessionKey(for: try context.requireProfile()))
    }

    /// Starts an agent on ``socket`` whose requests go through ``gate``.
    func startAgent(
        gated: Bool = false, allowedUIDs: Set<UInt32> = [UInt32(getuid())], readTimeout: TimeAmount = .seconds(60)
    ) async throws -> AgentServer {
        let transport: any HTTPTransport = gated ? GatedTransport(gate: gate) : Context.transport
        let tokens = AgentTokens(global: try global(), transport: transport)
        return try await AgentServer.start(
            AgentServer.Configuration(socket: socket, allowedUIDs: allowedUIDs, readTimeout: readTimeout), logger: log.logger(level: .debug)
        ) { request in await tokens.answer(request) }
    }

    /// Makes a directory 0700 under /tmp (short: a socket path holds 107 bytes).
    static func makePrivateDirectory() throws -> String {
        var template = Array("/tmp/oauth2-agent-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw AgentTestError("mkdtemp failed") }
        return String(cString: made)
    }
}

struct AgentTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A gate that tasks wait at until it opens (once, for good).
final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// The tool's transport, but a request to a token endpoint waits for the gate first.
struct GatedTransport: HTTPTransport {
    let gate: Gate

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        if request.url?.path.hasSuffix("/token") == true { await gate.wait() }
        return try await Context.transport.send(request, body: body)
    }
}

/// Runs blocking work on a thread of its own.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Waits (yielding) until `condition` holds: the gate-keeping of tests whose steps happen
/// on other threads. Never a fixed delay; the test's own time limit ends a wait that never does.
func eventually(_ condition: () -> Bool) async throws {
    while !condition() {
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// A raw client of the agent's socket, for what the real client never does.
enum RawAgentClient {
    /// Connects, sends `bytes`, then (unless `hangUp`) reads to the end: the answer, or
    /// nothing when the agent closes without one.
    static func exchange(_ socket: AgentSocketPath, send bytes: Data, hangUp: Bool = false) throws -> Data {
        guard case .success(let fd) = socket.connect() else { throw AgentTestError("cannot connect to \(socket.path)") }
        defer { close(fd) }
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { break }  // the agent may close first (an oversized request)
            sent += count
        }
        if hangUp { return Data() }
        var answer = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            guard count > 0 else { return answer }
            answer.append(contentsOf: buffer[..<count])
        }
    }

    /// A socket file that nothing listens on: what an agent that died leaves.
    static func makeStaleSocket(_ socket: AgentSocketPath) throws {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socket.path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: path)
            buffer[path.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw AgentTestError("bind failed: \(errno)") }
        chmod(socket.path, 0o600)
    }
}
