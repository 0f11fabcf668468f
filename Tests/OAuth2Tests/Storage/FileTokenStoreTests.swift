import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct FileTokenStoreTests {
    let alice = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "alice")
    let bob = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "bob")

    @Test func savesAndLoadsASession() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            #expect(try await store.load(alice) == nil)
            let session = sampleSession(alice)
            try await store.save(session)
            #expect(try await store.load(alice) == session)
            #expect(try await FileTokenStore(directory: directory).load(alice) == session, "another instance reads it")
            #expect(try await store.load(bob) == nil)
        }
    }

    @Test func createsAPrivateDirectoryAndPrivateFiles() async throws {
        try await withTemporaryDirectory { base in
            let directory = base.appendingPathComponent("a/b/tokens")
            let store = try FileTokenStore(directory: directory)
            try await store.save(sampleSession(alice))
            #expect(try permissions(directory) == 0o700)
            #expect(try permissions(store.fileURL(for: alice)) == 0o600)
            try await store.withExclusiveAccess(to: alice) {}
            for name in try fileNames(directory) {
                #expect(try permissions(directory.appendingPathComponent(name)) == 0o600, "\(name)")
            }
        }
    }

    @Test func namesFilesWithASlugAndAHashAndKeepsTheKeyInside() async throws {
        let name = FileTokenStore.fileName(for: alice)
        #expect(name.hasPrefix("alice-id.example.com-cli-"))
        #expect(name.hasSuffix(".json"))
        #expect(name.count == "alice-id.example.com-cli-".count + 16 + 5)
        #expect(FileTokenStore.fileName(for: TokenSessionKey(issuer: alice.issuer, clientID: "cli", account: "Alice")) != name)
        // Every byte of the key counts, and no separator makes two keys collide.
        #expect(
            FileTokenStore.fileName(for: TokenSessionKey(issuer: "a", clientID: "b-c", account: "d"))
                != FileTokenStore.fileName(for: TokenSessionKey(issuer: "a", clientID: "b", account: "c-d")))

        let hostile = TokenSessionKey(issuer: "../../x", clientID: "/etc/passwd", account: "../../../..")
        #expect(!FileTokenStore.fileName(for: hostile).contains("/"))
        #expect(!FileTokenStore.fileName(for: hostile).hasPrefix("."))
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            try await store.save(sampleSession(hostile))
            #expect(try fileNames(directory).contains(FileTokenStore.fileName(for: hostile)))
            #expect(try await store.load(hostile)?.key == hostile)
            let key = try #require(try jsonObject(store.fileURL(for: hostile))["key"] as? [String: String])
            #expect(key == ["issuer": "../../x", "client_id": "/etc/passwd", "account": "../../../.."])
        }
    }

    @Test func listsTheKeysOfItsDocumentsOnly() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            #expect(try await store.list() == [])
            let carol = TokenSessionKey(issuer: "https://other.example", clientID: "app")
            for key in [bob, carol, alice] { try await store.save(sampleSession(key)) }
            try await store.withExclusiveAccess(to: alice) {}  // a lock file
            try Data("not a document".utf8).write(to: directory.appendingPathComponent("notes.txt"))
            #expect(try await store.list() == [alice, bob, carol])
        }
    }

    @Test func removesASessionAndToleratesAMissingOne() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            try await store.save(sampleSession(alice))
            try await store.save(sampleSession(bob))
            try await store.remove(alice)
            #expect(try await store.load(alice) == nil)
            #expect(try await store.list() == [bob])
            try await store.remove(alice)
        }
    }

    @Test func savingKeepsMembersThatANewerVersionWrote() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            try await store.save(sampleSession(alice))
            let url = store.fileURL(for: alice)
            var json = try jsonObject(url)
            json["written_by"] = "oauth2 2.5"
            var session = try #require(json["session"] as? [String: Any])
            session["dpop_key"] = ["kty": "EC"]
            json["session"] = session
            try JSONSerialization.data(withJSONObject: json).write(to: url)

            var loaded = try #require(try await store.load(alice))
            #expect(loaded.additionalFields["dpop_key"] == .object(["kty": .string("EC")]))
            loaded.tokens.accessToken = "access-2"
            try await store.save(loaded)
            try await store.save(sampleSession(alice, accessToken: "access-3"))  // a session without the member

            let after = try jsonObject(url)
            #expect(after["written_by"] as? String == "oauth2 2.5", "a top-level member survives every save")
            let tokens = try #require((after["session"] as? [String: Any])?["tokens"] as? [String: Any])
            #expect(tokens["access_token"] as? String == "access-3")
        }
    }

    // MARK: - Corrupt files

    @Test(arguments: ["", "{\"version\": 2, \"key\": ", "garbage\u{0}\u{1}", "{\"version\": 2}"])
    func aCorruptFileIsMovedAsideWithATypedError(_ content: String) async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            let url = store.fileURL(for: alice)
            try Data(content.utf8).write(to: url)
            let error = try await #require(throws: TokenStoreError.self) { try await store.load(alice) }
            #expect(error.code == .corrupt)
            #expect(error.path == url.path)
            let kept = try #require(error.preservedPath)
            #expect(kept.hasPrefix(url.path + ".corrupt-"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: kept)) == Data(content.utf8), "kept byte for byte")
            #expect(!FileManager.default.fileExists(atPath: url.path))
            #expect(try await store.load(alice) == nil)
            #expect(try await store.list() == [], "a kept file is not a document")
        }
    }

    @Test func aHugeFileIsCorruptAndMovedAsideUnread() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            let url = store.fileURL(for: alice)
            let huge = Data(repeating: UInt8(ascii: " "), count: 9 << 20)
            try huge.write(to: url)
            let error = try await #require(throws: TokenStoreError.self) { try await store.load(alice) }
            #expect(error.code == .corrupt)
            let kept = try #require(error.preservedPath)
            #expect(try Data(contentsOf: URL(fileURLWithPath: kept)).count == huge.count)
            #expect(try await store.load(alice) == nil)
        }
    }

    @Test func savingOverACorruptFileKeepsItAside() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            try Data("{{{".utf8).write(to: store.fileURL(for: alice))
            try await store.save(sampleSession(alice))
            #expect(try await store.load(alice) == sampleSession(alice))
            let kept = try fileNames(directory).filter { $0.contains(".corrupt-") }
            #expect(kept.count == 1)
            #expect(try Data(contentsOf: directory.appendingPathComponent(kept[0])) == Data("{{{".utf8))
        }
    }

    @Test func listMovesACorruptFileAsideAndThenListsTheRest() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            try await store.save(sampleSession(alice))
            try Data("[1, 2".utf8).write(to: store.fileURL(for: bob))
            let error = try await #require(throws: TokenStoreError.self) { try await store.list() }
            #expect(error.code == .corrupt)
            #expect(error.preservedPath != nil)
            #expect(try await store.list() == [alice])
        }
    }

    @Test func aDocumentUnderAnotherKeysNameIsAConflict() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            try await store.save(sampleSession(alice))
            try FileManager.default.copyItem(at: store.fileURL(for: alice), to: store.fileURL(for: bob))
            let error = try await #require(throws: TokenStoreError.self) { try await store.load(bob) }
            #expect(error.code == .conflict)
            let saveError = try await #require(throws: TokenStoreError.self) { try await store.save(sampleSession(bob)) }
            #expect(saveError.code == .conflict)
            #expect(try await store.list() == [alice], "a document under a name not its own is not listed")
        }
    }

    // MARK: - Versions

    static let futureDocument = """
        {"version": 9, "key": {"issuer": "https://id.example.com", "client_id": "cli", "account": "alice"},
         "session": {"tokens_v9": {}}}
        """

    @Test func aDocumentFromANewerIncompatibleVersionIsNeverReplaced() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            let url = store.fileURL(for: alice)
            try Data(Self.futureDocument.utf8).write(to: url)
            let loadError = try await #require(throws: TokenStoreError.self) { try await store.load(alice) }
            #expect(loadError.code == .unsupportedVersion)
            #expect(loadError.version == 9)
            let saveError = try await #require(throws: TokenStoreError.self) { try await store.save(sampleSession(alice)) }
            #expect(saveError.code == .unsupportedVersion)
            #expect(try Data(contentsOf: url) == Data(Self.futureDocument.utf8), "left exactly as it was")
            try await store.remove(alice)  // removing is explicit, and allowed
            try await store.save(sampleSession(alice))
        }
    }

    @Test func aCompatibleNewerDocumentKeepsItsVersionAndMembers() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            try await store.save(sampleSession(alice))
            let url = store.fileURL(for: alice)
            var json = try jsonObject(url)
            json["version"] = 3
            json["compatible_version"] = 2
            json["devices"] = ["laptop"]
            try JSONSerialization.data(withJSONObject: json).write(to: url)

            #expect(try await store.load(alice) == sampleSession(alice))
            try await store.save(sampleSession(alice, accessToken: "access-2"))
            let after = try jsonObject(url)
            #expect(after["version"] as? Int == 3)
            #expect(after["compatible_version"] as? Int == 2)
            #expect(after["devices"] as? [String] == ["laptop"])
            #expect(try await store.load(alice)?.tokens.accessToken == "access-2")
        }
    }

    // MARK: - Temporary files

    @Test func opensByRemovingTemporaryFilesOfDeadWriters() async throws {
        try await withTemporaryDirectory { directory in
            let name = FileTokenStore.fileName(for: alice)
            // A pid that cannot exist (above pid_max), and this process's own.
            let dead = directory.appendingPathComponent(".\(name).tmp-99999999-1a2b")
            let alive = directory.appendingPathComponent(".\(name).tmp-\(getpid())-3c4d")
            try Data("half a docu".utf8).write(to: dead)
            try Data("being written".utf8).write(to: alive)
            _ = try FileTokenStore(directory: directory)
            #expect(!FileManager.default.fileExists(atPath: dead.path))
            #expect(FileManager.default.fileExists(atPath: alive.path), "a live writer's file stays")
        }
    }

    @Test func aDirectoryPathThatIsAFileGivesAnIOError() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("plain-file")
            try Data("x".utf8).write(to: file)
            let error = try #require(throws: TokenStoreError.self) { try FileTokenStore(directory: file) }
            #expect(error.code == .io)
            #expect(error.systemError == ENOTDIR)
        }
    }
}
