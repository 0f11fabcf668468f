import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct FileTokenStoreEncryptionTests {
    let alice = SessionKey(issuer: "https://id.example.com", clientID: "cli", account: "alice")

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

    @Test func plainDocumentsLoadAndAreEncryptedOnceLoaded() async throws {
        try await withTemporaryDirectory { directory in
            try await FileTokenStore(directory: directory).save(sampleSession(alice))
            let store = try FileTokenStore(directory: directory, encryption: .key(Data(repeating: 3, count: 32)))
            #expect(try await store.load(alice) == sampleSession(alice))
            #expect(try jsonObject(store.fileURL(for: alice))["encrypted"] != nil)
            #expect(try await store.load(alice) == sampleSession(alice))
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
