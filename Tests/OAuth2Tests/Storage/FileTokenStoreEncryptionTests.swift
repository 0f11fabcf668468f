import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct FileTokenStoreEncryptionTests {
    let alice = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "alice")

    @Test func createsAPrivateKeyFileAndEncryptsWithIt() async throws {
        try await withTemporaryDirectory { directory in
            let keyFile = directory.appendingPathComponent("keys/store.key")
            let store = try FileTokenStore(directory: directory.appendingPathComponent("tokens"), encryption: .keyFile(keyFile))
            #expect(store.isEncrypted)
            #expect(try Data(contentsOf: keyFile).count == 32)
            #expect(try permissions(keyFile) == 0o600)
            #expect(try permissions(keyFile.deletingLastPathComponent()) == 0o700)

            let session = sampleSession(alice)
            try await store.save(session)
            let raw = try Data(contentsOf: store.fileURL(for: alice))
            let text = String(decoding: raw, as: UTF8.self)
            for secret in ["access-1", "refresh-1", "s3cret", "alice", "id.example.com"] {
                #expect(!text.contains(secret), "\(secret) is in the clear")
            }
            let json = try jsonObject(store.fileURL(for: alice))
            #expect(json["version"] as? Int == 2)
            let encrypted = try #require(json["encrypted"] as? [String: String])
            #expect(encrypted["alg"] == "A256GCM")

            #expect(try await store.load(alice) == session)
            let reopened = try FileTokenStore(directory: directory.appendingPathComponent("tokens"), encryption: .keyFile(keyFile))
            #expect(try await reopened.load(alice) == session, "the key file is reused, not replaced")
            #expect(try await reopened.list() == [alice])
        }
    }

    @Test func aSuppliedKeyWorksLikeAKeyFile() async throws {
        try await withTemporaryDirectory { directory in
            let key = Data((0..<32).map { UInt8($0) })
            let store = try FileTokenStore(directory: directory, encryption: .key(key))
            try await store.save(sampleSession(alice))
            #expect(try await FileTokenStore(directory: directory, encryption: .key(key)).load(alice) == sampleSession(alice))
        }
    }

    @Test func anotherKeyIsWrongKeyAndNeverOverwrites() async throws {
        try await withTemporaryDirectory { directory in
            let first = try FileTokenStore(directory: directory, encryption: .key(Data(repeating: 1, count: 32)))
            try await first.save(sampleSession(alice))
            let url = first.fileURL(for: alice)
            let before = try Data(contentsOf: url)

            let second = try FileTokenStore(directory: directory, encryption: .key(Data(repeating: 2, count: 32)))
            let loadError = try await #require(throws: TokenStoreError.self) { try await second.load(alice) }
            #expect(loadError.code == .wrongKey)
            let saveError = try await #require(throws: TokenStoreError.self) { try await second.save(sampleSession(alice)) }
            #expect(saveError.code == .wrongKey)

            let plain = try FileTokenStore(directory: directory)
            let plainError = try await #require(throws: TokenStoreError.self) { try await plain.load(alice) }
            #expect(plainError.code == .wrongKey, "no silent downgrade to plain text")
            _ = try await #require(throws: TokenStoreError.self) { try await plain.save(sampleSession(alice)) }

            #expect(try Data(contentsOf: url) == before, "nothing was moved or overwritten")
            #expect(try await first.load(alice) == sampleSession(alice))
        }
    }

    @Test func anAlteredCiphertextIsCorruptAndKeptAside() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory, encryption: .key(Data(repeating: 7, count: 32)))
            try await store.save(sampleSession(alice))
            let url = store.fileURL(for: alice)
            var json = try jsonObject(url)
            var encrypted = try #require(json["encrypted"] as? [String: String])
            let text = try #require(encrypted["data"])
            var sealed = try #require(Data(base64Encoded: text))
            sealed[sealed.count / 2] ^= 0x01
            encrypted["data"] = sealed.base64EncodedString()
            json["encrypted"] = encrypted
            try JSONSerialization.data(withJSONObject: json).write(to: url)

            let error = try await #require(throws: TokenStoreError.self) { try await store.load(alice) }
            #expect(error.code == .corrupt)
            #expect(error.preservedPath != nil)
        }
    }

    @Test func aPlainDocumentPlantedInAnEncryptedStoreIsRefusedAndLeftUntouched() async throws {
        try await withTemporaryDirectory { directory in
            // Someone with write access to the directory plants tokens of their own.
            try await FileTokenStore(directory: directory).save(sampleSession(alice, accessToken: "planted"))
            let store = try FileTokenStore(directory: directory, encryption: .key(Data(repeating: 3, count: 32)))
            let url = store.fileURL(for: alice)
            let before = try Data(contentsOf: url)
            let loadError = try await #require(throws: TokenStoreError.self) { try await store.load(alice) }
            #expect(loadError.code == .unencrypted)
            #expect(loadError.path == url.path)
            let saveError = try await #require(throws: TokenStoreError.self) { try await store.save(sampleSession(alice)) }
            #expect(saveError.code == .unencrypted)
            _ = try await #require(throws: TokenStoreError.self) { try await store.list() }
            #expect(try Data(contentsOf: url) == before, "neither adopted, re-encrypted, moved nor overwritten")
            #expect(try fileNames(directory).filter { !$0.hasPrefix(".") } == [url.lastPathComponent])
        }
    }

    @Test func plainDocumentsAreEncryptedOnlyWhenAskedTo() async throws {
        try await withTemporaryDirectory { directory in
            let bob = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "bob")
            let plain = try FileTokenStore(directory: directory)
            try await plain.save(sampleSession(alice))
            try await plain.save(sampleSession(bob))
            let store = try FileTokenStore(directory: directory, encryption: .key(Data(repeating: 3, count: 32)))
            #expect(try await store.encryptPlainDocuments() == 2)
            #expect(try await store.encryptPlainDocuments() == 0, "done once")
            #expect(try jsonObject(store.fileURL(for: alice))["encrypted"] != nil)
            #expect(try await store.load(alice) == sampleSession(alice))
            #expect(try await store.list() == [alice, bob])
        }
    }

    @Test func aCiphertextCopiedFromAnotherRecordDoesNotOpen() async throws {
        try await withTemporaryDirectory { directory in
            let mallory = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "mallory")
            let store = try FileTokenStore(directory: directory, encryption: .key(Data(repeating: 5, count: 32)))
            try await store.save(sampleSession(alice, accessToken: "alice-token"))
            try await store.save(sampleSession(mallory, accessToken: "mallory-token"))
            // Mallory's record, copied over Alice's: same key, same store, another record.
            try Data(contentsOf: store.fileURL(for: mallory)).write(to: store.fileURL(for: alice))
            let error = try await #require(throws: TokenStoreError.self) { try await store.load(alice) }
            #expect(error.code == .corrupt)
            #expect(error.preservedPath != nil, "kept aside for a person to look at")
            #expect(try await store.load(alice) == nil)
            #expect(try await store.load(mallory)?.tokens.accessToken == "mallory-token")
        }
    }

    /// A document written by the encrypted store of 0.x before ciphertexts were bound to
    /// their record (key bytes 100…131): it loads, and is rewritten bound.
    static let unboundDocument = #"{"encrypted":{"alg":"A256GCM","data":"n1VKkqt0yaGWgtq4ezq95JmbmRlYx0OFJHEze7np1zK7COs5aKeMvR1MKWjkfflntzkVx467K3tstIAm5FGRPDcAbX0PFz/zHTBpj+2BrzHF69qsxr0gyvKmrl45n7FkqXZ/iVhJrnCShr6XHvEYQZFU98W330zQN8Pfq4bHCIsBAJJJpXpNNbQourazNJo4sJQ/QmlbztiwW1r1wgAKBGSHlURaVpm9cbQraQKINNb0ZoLRdU0yUzo8iKrb9+yHKxJwt7UtZBAz5oieLVp2OiBbP6RBNaKrV0YnVgBBGi4aaBw/SEkJFITSpw9c8hhgw4nHyd+eo2QdCu8H0NgUl1FguyQrs9jwY7tWyRZcxLX8ShqpsUEpH4FlEgD0Ahq34qToNWgJ+o72642/vHEGtu8wgjkAnu2R42XuSz+mrHXsrkOcHPxWGkpfm1pJkctVpUfbvRjc41hAeDHSubc5tnD5OpaEjR3RAeAzOPi7zCA3W0VAgA+Omx5ygkZFS/2qKxpw6v4XTHGqxaYRRZdycyxWm5kjjufo6uhhuIAzGzbGCWo=","kid":"db39c31d92697bf3"},"version":2}"#
    static let unboundName = "alice-id.example.com-cli-efa09987eb6cae4b.json"

    @Test func documentsSealedBeforeBindingLoadAndAreRewrittenBound() async throws {
        try await withTemporaryDirectory { directory in
            let key = Data((0..<32).map { UInt8($0 + 100) })
            let store = try FileTokenStore(directory: directory, encryption: .key(key))
            #expect(store.fileURL(for: alice).lastPathComponent == Self.unboundName)
            try Data(Self.unboundDocument.utf8).write(to: store.fileURL(for: alice))
            #expect(try await store.load(alice) == sampleSession(alice))
            let rewritten = try #require(try jsonObject(store.fileURL(for: alice))["encrypted"] as? [String: String])
            #expect(rewritten["binding"] == "record")
            #expect(try await FileTokenStore(directory: directory, encryption: .key(key)).load(alice) == sampleSession(alice))
        }
    }

    @Test func refusesUnusableKeys() async throws {
        try await withTemporaryDirectory { directory in
            let short = try #require(throws: TokenStoreError.self) {
                try FileTokenStore(directory: directory, encryption: .key(Data(repeating: 1, count: 16)))
            }
            #expect(short.code == .invalidEncryptionKey)

            let open = directory.appendingPathComponent("open.key")
            try Data(repeating: 1, count: 32).write(to: open)
            chmod(open.path, 0o644)
            let exposed = try #require(throws: TokenStoreError.self) {
                try FileTokenStore(directory: directory, encryption: .keyFile(open))
            }
            #expect(exposed.code == .invalidEncryptionKey)
            #expect(exposed.path == open.path)

            let truncated = directory.appendingPathComponent("short.key")
            try Data(repeating: 1, count: 31).write(to: truncated)
            chmod(truncated.path, 0o600)
            let wrongSize = try #require(throws: TokenStoreError.self) {
                try FileTokenStore(directory: directory, encryption: .keyFile(truncated))
            }
            #expect(wrongSize.code == .invalidEncryptionKey)
        }
    }

    @Test func concurrentCreatorsOfAKeyFileAgreeOnOneKey() async throws {
        try await withTemporaryDirectory { directory in
            let keyFile = directory.appendingPathComponent("shared.key")
            let keys = try await withThrowingTaskGroup(of: Data.self) { group in
                for _ in 0..<8 {
                    group.addTask { try DocumentCipher.loadOrCreateKeyFile(keyFile.path) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(keys).count == 1)
            #expect(try Data(contentsOf: keyFile) == keys[0])
            #expect(try fileNames(directory) == ["shared.key"], "no temporary file left")
        }
    }
}
