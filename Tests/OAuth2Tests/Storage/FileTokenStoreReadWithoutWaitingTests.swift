import Foundation
import Testing
@testable import OAuth2

/// `FileTokenStore.loadIfReadable(_:)`, the synchronous read the `oauth2` tool answers a
/// cached token with: what `load(_:)` returns for a document that reads as it is, and
/// `nil` — touching nothing — for every document `load(_:)` would repair, move aside or
/// refuse.
@Suite struct FileTokenStoreReadWithoutWaitingTests {
    let alice = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "alice")

    @Test func aCurrentDocumentReadsAsLoadReadsIt() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            #expect(store.loadIfReadable(alice) == nil, "no document")
            try await store.save(sampleSession(alice))
            #expect(store.loadIfReadable(alice) == (try await store.load(alice)))
            let sealed = try FileTokenStore(directory: directory.appendingPathComponent("sealed"), encryption: .key(Data(repeating: 7, count: 32)))
            try await sealed.save(sampleSession(alice))
            #expect(sealed.loadIfReadable(alice) == (try await sealed.load(alice)), "sealed with the store's key")
        }
    }

    @Test func whatLoadWouldRepairOrRefuseIsLeftToIt() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            let url = store.fileURL(for: alice)

            let corrupt = Data("{not json".utf8)
            try corrupt.write(to: url)
            #expect(store.loadIfReadable(alice) == nil)
            #expect(try Data(contentsOf: url) == corrupt, "not moved aside: load does that, and reports it")

            let legacy = Data(FileTokenStoreMigrationTests.version1(account: "alice").utf8)
            try legacy.write(to: url)
            #expect(store.loadIfReadable(alice) == nil)
            #expect(try Data(contentsOf: url) == legacy, "not rewritten: load does that")
            #expect(try await store.load(alice) != nil)

            let bob = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "bob")
            try await store.save(sampleSession(bob))
            try FileManager.default.removeItem(at: url)
            try FileManager.default.copyItem(at: store.fileURL(for: bob), to: url)
            #expect(store.loadIfReadable(alice) == nil, "a document that holds another key")

            let sealed = try FileTokenStore(directory: directory.appendingPathComponent("sealed"), encryption: .key(Data(repeating: 7, count: 32)))
            try await sealed.save(sampleSession(alice))
            let plain = try FileTokenStore(directory: directory.appendingPathComponent("sealed"))
            #expect(plain.loadIfReadable(alice) == nil, "encrypted, and this store has no key")
            let other = try FileTokenStore(directory: directory.appendingPathComponent("sealed"), encryption: .key(Data(repeating: 8, count: 32)))
            #expect(other.loadIfReadable(alice) == nil, "encrypted with another key")
        }
    }
}
