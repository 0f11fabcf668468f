#if MCP
import Foundation
import MCP
import OAuth2
import OAuth2MCP
import OAuth2TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The MCP Swift SDK's `Client` and `HTTPClientTransport` with ``TokenSessionAuthorizer``,
/// against the example MCP server and its embedded provider (real processes, real sockets).
@Suite(.serialized) struct TokenSessionAuthorizerJourneyTests {
    /// The SDK's client through the adapter (and the relay that reads SSE for it on Linux).
    static func connect(_ authorizer: TokenSessionAuthorizer, to relay: SSEUnwrappingRelay) async throws -> Client {
        let transport = HTTPClientTransport(
            endpoint: relay.endpoint, streaming: false, authorizer: authorizer, requestModifier: authorizer.requestModifier)
        let client = Client(name: "oauth2-mcp-tests", version: "1.0.0")
        _ = try await withinHangBound("initialize") { try await client.connect(transport: transport) }
        return client
    }

    static func text(_ content: [Tool.Content]) -> String? {
        guard case .text(let text, _, _)? = content.first else { return nil }
        return text
    }

    @Test func listsAndCallsToolsAndStepsUpForWriteNote() async throws {
        try await ExampleMCPServer.with { server in
            let (client, found) = try await server.client()
            let steps = Recorder<[String]>()
            let options = TokenSession.Options(stepUp: { client, scopes in
                steps.append(scopes)
                return try await ExampleMCPServer.signIn(client, scopes: scopes)
            })
            let session = try await TokenSession(
                client: client, tokens: try await ExampleMCPServer.signIn(client), account: found.account, options: options)
            #expect(session.tokens?.scopes?.contains("mcp:write") == false)
            let authorizer = TokenSessionAuthorizer(session: session)
            try await SSEUnwrappingRelay.with(to: server.resource) { relay in
                let mcp = try await Self.connect(authorizer, to: relay)
                let tools = try await withinHangBound("tools/list") { try await mcp.listTools().tools }
                #expect(Set(tools.map(\.name)) == ["echo", "list_notes", "write_note"])
                let echoed: ToolResult = try await withinHangBound("echo") { try await mcp.callTool(name: "echo", arguments: ["text": "hello"]) }
                #expect(Self.text(echoed.content) == "hello")
                #expect(steps.values.isEmpty)

                // write_note needs mcp:write: 403 insufficient_scope, one step-up, the call again.
                let noted: ToolResult = try await withinHangBound("write_note") { try await mcp.callTool(name: "write_note", arguments: ["text": "first"]) }
                #expect(Self.text(noted.content) == "Noted (1 notes).")
                #expect(steps.values.count == 1)
                #expect(steps.values.first.map { Set($0).isSuperset(of: ["mcp:read", "mcp:write"]) } == true)
                #expect(session.tokens?.scopes?.contains("mcp:write") == true)
                // The wider token is kept: the next call needs no step-up.
                let again: ToolResult = try await withinHangBound("write_note again") { try await mcp.callTool(name: "write_note", arguments: ["text": "second"]) }
                #expect(Self.text(again.content) == "Noted (2 notes).")
                #expect(steps.values.count == 1)
                await mcp.disconnect()
            }
        }
    }

    @Test func aRefusedTokenIsRefreshedOnceAndTheRotatedRefreshTokenStored() async throws {
        try await ExampleMCPServer.with { server in
            let (client, found) = try await server.client()
            let directory = try TemporaryFolder()
            let store = try FileTokenStore(directory: directory.url)
            var tokens = try await ExampleMCPServer.signIn(client)
            let signedInRefreshToken = try #require(tokens.refreshToken)
            // A token the server does not know (as after a revocation): 401 invalid_token.
            tokens.accessToken = "unknown-to-the-server"
            let session = try await TokenSession(client: client, tokens: tokens, store: store, account: found.account)
            let authorizer = TokenSessionAuthorizer(session: session)
            try await SSEUnwrappingRelay.with(to: server.resource) { relay in
                let mcp = try await Self.connect(authorizer, to: relay)
                let tools = try await withinHangBound("tools/list") { try await mcp.listTools().tools }
                #expect(tools.count == 3)
                await mcp.disconnect()
            }
            let renewed = try #require(session.tokens)
            #expect(renewed.accessToken != "unknown-to-the-server")
            // The provider rotates refresh tokens: the new one is the one in the store.
            #expect(renewed.refreshToken != signedInRefreshToken)
            let stored = try await store.load(session.key)
            #expect(stored?.tokens.refreshToken == renewed.refreshToken)
            #expect(authorizer.authorizationHeader(for: server.resource) == "Bearer \(renewed.accessToken)")
        }
    }

    @Test func aSecondSessionOnTheSameFileStoreNeedsNoSignIn() async throws {
        try await ExampleMCPServer.with { server in
            let (client, found) = try await server.client()
            let directory = try TemporaryFolder()
            let first = try await TokenSession(
                client: client, tokens: try await ExampleMCPServer.signIn(client), store: try FileTokenStore(directory: directory.url),
                account: found.account)
            try await SSEUnwrappingRelay.with(to: server.resource) { relay in
                let mcp = try await Self.connect(TokenSessionAuthorizer(session: first), to: relay)
                let _: ToolResult = try await withinHangBound("echo") { try await mcp.callTool(name: "echo", arguments: ["text": "one"]) }
                await mcp.disconnect()

                // As another process would: a store of its own on the same directory, a
                // session restored from it, a sign-in hook that must not be needed.
                let (laterClient, _) = try await server.client()
                let restored = try #require(
                    try await TokenSession.restore(client: laterClient, store: try FileTokenStore(directory: directory.url), account: found.account))
                let signIns = Counter()
                let authorizer = TokenSessionAuthorizer(session: restored, signIn: { client in
                    signIns.increment()
                    return try await ExampleMCPServer.signIn(client)
                })
                let second = try await Self.connect(authorizer, to: relay)
                let echoed: ToolResult = try await withinHangBound("echo") { try await second.callTool(name: "echo", arguments: ["text": "two"]) }
                #expect(Self.text(echoed.content) == "two")
                #expect(signIns.value == 0)
                #expect(restored.tokens?.accessToken == first.tokens?.accessToken)
                await second.disconnect()
            }
        }
    }

    @Test func twoSessionsSharingAFileStoreRefreshOnce() async throws {
        try await ExampleMCPServer.with { server in
            let (client, found) = try await server.client()
            let directory = try TemporaryFolder()
            var tokens = try await ExampleMCPServer.signIn(client)
            // Due for renewal (within the sessions' 60 s leeway, which applies in full to a
            // token that lived long).
            tokens.issuedAt = Date().addingTimeInterval(-3600)
            tokens.expiresAt = Date().addingTimeInterval(5)
            let one = try await TokenSession(client: client, tokens: tokens, store: try FileTokenStore(directory: directory.url), account: found.account)
            let two = try #require(try await TokenSession.restore(client: client, store: try FileTokenStore(directory: directory.url), account: found.account))
            let authorizers = [TokenSessionAuthorizer(session: one), TokenSessionAuthorizer(session: two)]
            // Both renew at once, as two processes would. With rotating refresh tokens a
            // second refresh would present a used refresh token and fail: both succeeding
            // with the same new token is one refresh.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for authorizer in authorizers {
                    group.addTask { try await authorizer.prepareAuthorization(for: server.resource, session: unusedSession) }
                }
                try await group.waitForAll()
            }
            let renewed = try #require(one.tokens)
            #expect(renewed.accessToken != tokens.accessToken)
            #expect(two.tokens?.accessToken == renewed.accessToken)
            #expect(authorizers[0].authorizationHeader(for: server.resource) == authorizers[1].authorizationHeader(for: server.resource))
            try await SSEUnwrappingRelay.with(to: server.resource) { relay in
                let mcp = try await Self.connect(authorizers[1], to: relay)
                #expect(try await withinHangBound("tools/list") { try await mcp.listTools().tools }.count == 3)
                await mcp.disconnect()
            }
        }
    }
}

/// What `Client.callTool(name:arguments:meta:)` answers.
typealias ToolResult = (content: [Tool.Content], isError: Bool?)

/// A temporary directory, removed when the value goes away.
final class TemporaryFolder: @unchecked Sendable {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-mcp-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
}
#endif
