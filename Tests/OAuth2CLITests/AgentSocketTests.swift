import Foundation
import Testing

@testable import OAuth2CLI

#if canImport(Glibc)
import Glibc
#endif

/// Where the agent listens, and who may have put the socket there: the agent refuses to
/// listen, and the client to connect, where another user could have made or could replace
/// the socket. A stale socket is replaced; a live agent's is not taken over.
@Suite struct AgentSocketTests {
    /// The user `nobody`, to own things that are not ours (as root).
    static let nobody: uid_t = 65534

    func expectRefusal(_ words: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("not refused (expected \"\(words)\")", sourceLocation: sourceLocation)
        } catch let error as CLIError {
            #expect(error.status == .refused, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(words), "\(error.message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func theDefaultPathIsTheRuntimeDirectoryElseAPrivateOneUnderTmp() {
        #expect(AgentSocketPath.agentDefault(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], uid: 1000).path == "/run/user/1000/oauth2/agent.sock")
        #expect(AgentSocketPath.agentDefault(environment: [:], uid: 1000).path == "/tmp/oauth2-1000/agent.sock")
        #expect(AgentSocketPath.agentDefault(environment: ["OAUTH2_AGENT_SOCK": "/run/oauth2/agent.sock"], uid: 1000).path == "/run/oauth2/agent.sock")
        #expect(AgentSocketPath.isDefaultDirectory(AgentSocketPath("/tmp/oauth2-1000/agent.sock"), environment: [:], uid: 1000))
        #expect(!AgentSocketPath.isDefaultDirectory(AgentSocketPath("/home/me/agent.sock"), environment: [:], uid: 1000))
    }

    @Test func theAgentMakesItsSocketPrivateAndRemovesItOnShutdown() async throws {
        try await AgentFixture.with { fixture in
            let server = try await fixture.startAgent()
            var info = stat()
            #expect(lstat(fixture.socket.path, &info) == 0)
            #expect(info.st_mode & S_IFMT == S_IFSOCK)
            #expect(info.st_mode & 0o777 == 0o600)
            await server.shutdown()
            #expect(lstat(fixture.socket.path, &info) != 0 && errno == ENOENT)
        }
    }

    @Test func aDirectoryOthersCanWriteToIsRefusedByTheAgentAndTheClient() async throws {
        try await AgentFixture.with { fixture in
            try await fixture.signIn("work")
            let server = try await fixture.startAgent()
            // A live agent, but its directory opened to everyone: the client does not connect.
            chmod(fixture.directory, 0o777)
            await expectRefusal("can be written by others") {
                _ = try AgentClient.accessToken(profile: "work", socket: fixture.socket)
            }
            #expect(fixture.log.lines.filter { $0.contains("profile work") }.isEmpty, "the client connected")
            await server.shutdown()
            await expectRefusal("can be written by others") { _ = try await fixture.startAgent() }
            chmod(fixture.directory, 0o700)
        }
    }

    @Test func aDirectoryOfAnotherUserIsRefusedByTheAgentAndTheClient() async throws {
        try await AgentFixture.with { fixture in
            // As root: a directory given to nobody. Otherwise: the root directory, root's.
            let directory = getuid() == 0 ? fixture.directory + "/theirs" : "/"
            if getuid() == 0 {
                #expect(mkdir(directory, 0o700) == 0)
                #expect(chown(directory, Self.nobody, gid_t(Self.nobody)) == 0)
            }
            let socket = AgentSocketPath(directory + "/agent.sock")
            await expectRefusal("belongs to another user") {
                _ = try await AgentServer.start(AgentServer.Configuration(socket: socket), logger: fixture.log.logger()) { _ in
                    .failure(AgentProtocol.Failure(status: .refused, message: "unused"))
                }
            }
            await expectRefusal("belongs to another user") { _ = try AgentClient.accessToken(profile: "work", socket: socket) }
        }
    }

    @Test func aSocketOfAnotherUserOrOpenToOthersIsRefusedByTheClient() async throws {
        try await AgentFixture.with { fixture in
            let server = try await fixture.startAgent()
            chmod(fixture.socket.path, 0o666)
            await expectRefusal("can be used by others") { _ = try AgentClient.accessToken(profile: "work", socket: fixture.socket) }
            chmod(fixture.socket.path, 0o600)
            if getuid() == 0 {
                #expect(chown(fixture.socket.path, Self.nobody, gid_t(Self.nobody)) == 0)
                await expectRefusal("belongs to another user") { _ = try AgentClient.accessToken(profile: "work", socket: fixture.socket) }
            }
            await server.shutdown()
        }
    }

    @Test func whatIsNotASocketIsNeitherReplacedNorUsed() async throws {
        try await AgentFixture.with { fixture in
            _ = FileManager.default.createFile(atPath: fixture.socket.path, contents: Data("keep me".utf8))
            await expectRefusal("is not a socket") { _ = try await fixture.startAgent() }
            await expectRefusal("is not a socket") { _ = try AgentClient.accessToken(profile: "work", socket: fixture.socket) }
            #expect(FileManager.default.contents(atPath: fixture.socket.path) == Data("keep me".utf8))
            unlink(fixture.socket.path)
            // A symbolic link to a socket is not the socket.
            let real = AgentSocketPath(fixture.directory + "/real.sock")
            try RawAgentClient.makeStaleSocket(real)
            #expect(symlink(real.path, fixture.socket.path) == 0)
            await expectRefusal("is not a socket") { _ = try await fixture.startAgent() }
        }
    }

    @Test func aStaleSocketIsReplacedAndALiveOneIsNotTakenOver() async throws {
        try await AgentFixture.with { fixture in
            let token = try await fixture.signIn("work")
            try RawAgentClient.makeStaleSocket(fixture.socket)
            let first = try await fixture.startAgent()
            #expect(fixture.log.lines.contains { $0.contains("replaced the stale socket") })
            await expectRefusal("already listening") { _ = try await fixture.startAgent() }
            // The first agent still answers, on the socket it made.
            let answer = try await onThread { try AgentClient.accessToken(profile: "work", socket: fixture.socket) }
            #expect(answer.accessToken == token.accessToken)

            // An agent that finds its socket replaced (by a newer agent) leaves that one alone.
            unlink(fixture.socket.path)
            let second = try await fixture.startAgent()
            await first.shutdown()
            #expect(fixture.socket.identity() != nil)
            await second.shutdown()
            #expect(fixture.socket.identity() == nil)
        }
    }

    @Test func noAgentIsATransientFailureThatSaysWhatToDo() async throws {
        try await AgentFixture.with { fixture in
            do {
                _ = try AgentClient.accessToken(profile: "work", socket: fixture.socket)
                Issue.record("an answer without an agent")
            } catch let error as CLIError {
                #expect(error.status == .transient)
                #expect(error.hint?.contains("oauth2 agent") == true)
            }
            try RawAgentClient.makeStaleSocket(fixture.socket)
            do {
                _ = try AgentClient.accessToken(profile: "work", socket: fixture.socket)
                Issue.record("an answer from a stale socket")
            } catch let error as CLIError {
                #expect(error.status == .transient)
                #expect(error.message.contains("Cannot reach the agent"))
            }
        }
    }
}
