import Foundation
import OAuth2
import OAuth2SecretService
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The private gnome-keyring that `scripts/test-servers/keyring.sh` starts on a D-Bus bus
/// of its own; `up.sh` exports its address as `OAUTH2_TEST_KEYRING_BUS`. Run by hand:
/// `scripts/test-servers/keyring.sh start`, then
/// `OAUTH2_TEST_KEYRING_BUS=$(scripts/test-servers/keyring.sh address) swift test --filter Keyring`.
/// Without that variable the tests use the session's own bus (`DBUS_SESSION_BUS_ADDRESS`);
/// with neither, or when no keyring answers, they fail: like the server tests, they never skip.
enum KeyringEnvironment {
    /// The bus address. libsecret (GLib) connects to `DBUS_SESSION_BUS_ADDRESS` on first
    /// use and keeps that connection: `scripts/test` exports it equal to
    /// `OAUTH2_TEST_KEYRING_BUS`; when only the latter is set (a run by hand), it is copied
    /// over here, before any keyring call.
    static let bus: String? = {
        let environment = ProcessInfo.processInfo.environment
        let session = environment["DBUS_SESSION_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
        guard let address = environment["OAUTH2_TEST_KEYRING_BUS"].flatMap({ $0.isEmpty ? nil : $0 }) else {
            return session
        }
        if address != session { setenv("DBUS_SESSION_BUS_ADDRESS", address, 1) }
        return address
    }()

    /// The bus address, or a failed requirement that says how to start the keyring.
    static func requireBus() throws -> String {
        try #require(bus != nil, "no keyring: run scripts/test-servers/keyring.sh start and export OAUTH2_TEST_KEYRING_BUS")
        return bus!
    }

    /// A key no other run uses, so that runs never see each other's items.
    static func uniqueKey(_ label: String) -> SessionKey {
        SessionKey(issuer: "https://keyring-test.example", clientID: "swift-oauth2-tests", account: "\(label)-\(UUID().uuidString)")
    }
}

extension Integration {
    @Suite struct Keyring {
        @Test func theKeyringIsAvailable() async throws {
            _ = try KeyringEnvironment.requireBus()
            try await SecretServiceTokenStore().checkAvailability()
            #expect(await SecretServiceTokenStore.isAvailable())
            IntegrationLog.record("keyring")
        }

        @Test func roundTripsASession() async throws {
            _ = try KeyringEnvironment.requireBus()
            let store = SecretServiceTokenStore()
            let key = KeyringEnvironment.uniqueKey("round-trip")
            defer { Task { try? await store.remove(key) } }
            #expect(try await store.load(key) == nil)

            let session = StoredSession(
                key: key,
                tokens: TokenSet(
                    accessToken: "keyring-access", tokenType: .dpop, refreshToken: "keyring-refresh", idToken: "a.b.c",
                    expiresAt: Date(timeIntervalSince1970: 1_767_225_600), scopes: ["openid", "offline_access"],
                    issuedAt: Date(timeIntervalSince1970: 1_767_222_000), additionalFields: ["refresh_expires_in": .integer(600)]),
                subject: "sub-1", clientSecret: "keyring-secret", updatedAt: Date(timeIntervalSince1970: 1_767_222_001),
                additionalFields: ["dpop_key": .object(["kty": .string("EC")])])
            try await store.save(session)
            #expect(try await store.load(key) == session)
            #expect(try await store.list().contains(key))

            var refreshed = session
            refreshed.tokens.accessToken = "keyring-access-2"
            try await store.save(refreshed)
            #expect(try await store.load(key) == refreshed, "saving replaces the item")
            #expect(try await store.list().filter { $0 == key }.count == 1, "one item per key")

            try await store.remove(key)
            #expect(try await store.load(key) == nil)
            #expect(try await !store.list().contains(key))
            try await store.remove(key)  // a missing item is not an error
            IntegrationLog.record("keyring")
        }

        @Test func anotherProcessReadsWhatOneWrote() async throws {
            let bus = try KeyringEnvironment.requireBus()
            let key = KeyringEnvironment.uniqueKey("cross-process")
            let store = SecretServiceTokenStore()
            defer { Task { try? await store.remove(key) } }
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SESSION_BUS_ADDRESS"] = bus
            let result = try await WorkerProcess.run(
                ["keyring-save", key.issuer, key.clientID, key.account, "written-by-a-child"], environment: environment)
            #expect(result.status == 0, "\(result.output)")
            #expect(try await store.load(key)?.tokens.accessToken == "written-by-a-child")
            IntegrationLog.record("keyring")
        }

        @Test func suppliesAStableEncryptionKeyForTheFileStore() async throws {
            _ = try KeyringEnvironment.requireBus()
            let store = SecretServiceTokenStore()
            let name = "test-\(UUID().uuidString)"
            let key = try await store.encryptionKey(named: name)
            #expect(key.count == 32)
            #expect(try await store.encryptionKey(named: name) == key, "created once, then read back")
            #expect(try await store.encryptionKey(named: name + "-other") != key)

            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keyring-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let session = StoredSession(key: KeyringEnvironment.uniqueKey("file"), tokens: TokenSet(accessToken: "sealed"))
            try await FileTokenStore(directory: directory, encryption: .key(key)).save(session)
            let reopened = try FileTokenStore(directory: directory, encryption: .key(try await store.encryptionKey(named: name)))
            #expect(try await reopened.load(session.key)?.tokens.accessToken == "sealed")
            IntegrationLog.record("keyring")
        }

        @Test func exclusiveAccessRunsOneBodyAtATime() async throws {
            _ = try KeyringEnvironment.requireBus()
            let lockDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("keyring-locks-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: lockDirectory) }
            let store = SecretServiceTokenStore(lockDirectory: lockDirectory)
            let key = KeyringEnvironment.uniqueKey("lock")
            defer { Task { try? await store.remove(key) } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<5 {
                    group.addTask {
                        for _ in 0..<4 {
                            try await store.withExclusiveAccess(to: key) {
                                let count = try await store.load(key)?.additionalFields["count"]?.integerValue ?? 0
                                try await store.save(
                                    StoredSession(key: key, tokens: TokenSet(accessToken: "c"), additionalFields: ["count": .integer(count + 1)]))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.load(key)?.additionalFields["count"]?.integerValue == 20)
            IntegrationLog.record("keyring")
        }
    }
}

/// The `OAuth2TestWorker` executable beside the test bundle.
enum WorkerProcess {
    static func run(_ arguments: [String], environment: [String: String]) async throws -> (status: Int32, output: String) {
        var directory = Bundle.main.bundleURL
        while !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("OAuth2TestWorker").path),
            directory.pathComponents.count > 1
        {
            directory.deleteLastPathComponent()
        }
        let process = Process()
        process.executableURL = directory.appendingPathComponent("OAuth2TestWorker")
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try? output.fileHandleForWriting.close()
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: (process.terminationStatus, String(decoding: data, as: UTF8.self)))
            }.start()
        }
    }
}
