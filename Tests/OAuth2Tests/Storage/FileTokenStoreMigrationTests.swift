import Foundation
import Testing
@testable import OAuth2

/// A store written in schema version 1 (the flat layout of the 0.0.x snapshots) loads, and
/// is rewritten in version 2 only after a successful load.
@Suite struct FileTokenStoreMigrationTests {
    let alice = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "alice")

    static func version1(account: String, accessToken: String = "old-access") -> String {
        """
        {"issuer": "https://id.example.com", "client_id": "cli", "account": "\(account)",
         "access_token": "\(accessToken)", "token_type": "bearer", "refresh_token": "old-refresh",
         "expires_at": 1767225600, "scope": "openid offline_access", "obtained_at": 1767222000,
         "sub": "248289761001", "session_state": "abc"}
        """
    }

    @Test func aVersion1StoreLoadsAndIsRewrittenAsVersion2AfterTheLoad() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            let url = store.fileURL(for: alice)
            let original = Data(Self.version1(account: "alice").utf8)
            try original.write(to: url)

            #expect(try await store.list() == [alice])
            #expect(try Data(contentsOf: url) == original, "listing does not rewrite")

            let session = try #require(try await store.load(alice))
            #expect(session.tokens.accessToken == "old-access")
            #expect(session.tokens.refreshToken == "old-refresh")
            #expect(session.tokens.scopes == ["openid", "offline_access"])
            #expect(session.tokens.expiresAt == Date(timeIntervalSince1970: 1_767_225_600))
            #expect(session.subject == "248289761001")
            #expect(session.tokens.additionalFields["session_state"] == .string("abc"))

            let json = try jsonObject(url)
            #expect(json["version"] as? Int == 2, "rewritten once it loaded")
            #expect(json["access_token"] == nil, "no flat members left")
            let tokens = try #require((json["session"] as? [String: Any])?["tokens"] as? [String: Any])
            #expect(tokens["session_state"] as? String == "abc", "an unknown member survives the migration")
            #expect(try await store.load(alice) == session, "the rewritten document holds the same session")
        }
    }

    @Test func aBrokenVersion1DocumentIsKeptAndNeverRewritten() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            let url = store.fileURL(for: alice)
            let broken = Data(#"{"issuer": "https://id.example.com", "client_id": "cli", "account": "alice", "refresh_token": "r"}"#.utf8)
            try broken.write(to: url)

            let error = try await #require(throws: TokenStoreError.self) { try await store.load(alice) }
            #expect(error.code == .corrupt)
            let kept = try #require(error.preservedPath)
            #expect(try Data(contentsOf: URL(fileURLWithPath: kept)) == broken)
            #expect(!FileManager.default.fileExists(atPath: url.path), "no version-2 document was made from it")
        }
    }

    @Test func aVersion1DocumentMigratesIntoAnEncryptedStoreWhenAskedTo() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory, encryption: .key(Data(repeating: 9, count: 32)))
            try Data(Self.version1(account: "alice").utf8).write(to: store.fileURL(for: alice))
            // Plain, so possibly planted: refused until adopted on purpose.
            let refused = try await #require(throws: TokenStoreError.self) { try await store.load(alice) }
            #expect(refused.code == .unencrypted)
            #expect(try await store.encryptPlainDocuments() == 1)
            let session = try #require(try await store.load(alice))
            let json = try jsonObject(store.fileURL(for: alice))
            #expect(json["encrypted"] != nil)
            #expect(json["access_token"] == nil)
            #expect(try await store.load(alice) == session)
        }
    }

    @Test func savingOverAVersion1DocumentWritesVersion2() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            try Data(Self.version1(account: "alice").utf8).write(to: store.fileURL(for: alice))
            try await store.save(sampleSession(alice))
            #expect(try jsonObject(store.fileURL(for: alice))["version"] as? Int == 2)
            #expect(try await store.load(alice) == sampleSession(alice))
        }
    }
}
