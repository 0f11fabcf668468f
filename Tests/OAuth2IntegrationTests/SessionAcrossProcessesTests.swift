import Foundation
@_spi(Tooling) import OAuth2
import OAuth2TestSupport
import Testing

extension Integration.Sessions {
    /// Eight processes share one FileTokenStore whose access token has expired, and are
    /// released together: between them they make one refresh at django-oauth-toolkit, which
    /// rotates refresh tokens — so a second refresh with the old one would fail, and a lost
    /// new one would end the session.
    @Test func eightProcessesSharingAFileStoreMakeOneRefresh() async throws {
        let server = Server.dot
        let client = try await server.client(server.passwordClient())
        let original = try await client.password(username: Server.username, password: Server.password)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("session-8-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try FileTokenStore(directory: directory.appendingPathComponent("store"))
        let key = TokenSession.key(for: client, account: "parallel")
        var expired = original
        expired.expiresAt = Date().addingTimeInterval(-60)
        try await store.save(StoredTokenSession(key: key, tokens: expired))
        let barrier = directory.appendingPathComponent("go")
        // The workers take the discovered metadata from a file: the server sees only their refreshes.
        let metadata = directory.appendingPathComponent("metadata.json")
        try JSONEncoder().encode(client.metadata).write(to: metadata)

        let workers = try (0..<8).map { _ in
            try RunningWorker.start(["session-refresh", store.directory.path, key.account, metadata.path, barrier.path])
        }
        defer { for worker in workers { worker.terminate() } }
        for worker in workers { try await worker.waitForLine("ready", timeout: .seconds(60)) }
        #expect(FileManager.default.createFile(atPath: barrier.path, contents: Data()))
        var refreshes: [Int] = []
        var tokens: Set<String> = []
        for worker in workers {
            let status = try await worker.waitForExit(timeout: .seconds(60))
            #expect(status == 0, "a worker failed: \(worker.errorOutput)")
            let lines = worker.lines
            refreshes += lines.compactMap { $0.hasPrefix("refreshes ") ? Int($0.dropFirst("refreshes ".count)) : nil }
            tokens.formUnion(lines.compactMap { $0.hasPrefix("token ") ? String($0.dropFirst("token ".count)) : nil })
        }
        #expect(refreshes.count == 8, "every worker reported")
        #expect(refreshes.reduce(0, +) == 1, "one refresh between the eight processes")
        #expect(tokens.count == 1, "all eight got the same access token")
        #expect(!tokens.contains(original.accessToken))

        let stored = try #require(try await store.load(key))
        #expect(tokens == [stored.tokens.accessToken])
        #expect(stored.tokens.refreshToken != original.refreshToken, "the rotated refresh token is saved")
        await #expect(throws: OAuth2Error.self, "the original refresh token is dead") { try await client.refresh(original) }
        let again = try await client.refresh(stored.tokens)
        #expect(!again.accessToken.isEmpty, "the stored refresh token works")
    }
}
