import Foundation
import OAuth2
import OAuth2SecretService
import OAuth2TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The private gnome-keyring that `scripts/test-servers/keyring.sh` starts on a D-Bus bus
/// of its own; `up.sh` exports its address as `OAUTH2_TEST_KEYRING_BUS`. Run by hand:
/// `scripts/test-servers/keyring.sh start`, then
/// `export OAUTH2_TEST_KEYRING_BUS=$(scripts/test-servers/keyring.sh address) DBUS_SESSION_BUS_ADDRESS=$OAUTH2_TEST_KEYRING_BUS`
/// and `swift test --filter Keyring`. Without `OAUTH2_TEST_KEYRING_BUS` the tests use the
/// session's own bus; with neither, or when no keyring answers, they fail: like the server
/// tests, they never skip.
enum KeyringEnvironment {
    /// The session bus, `DBUS_SESSION_BUS_ADDRESS`: libsecret (GLib) connects to it on
    /// first use. `scripts/test` exports it equal to `OAUTH2_TEST_KEYRING_BUS`. The tests
    /// never change the environment themselves: `setenv` while other threads read the
    /// environment (every child process started copies it) is a data race.
    static let bus: String? = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }

    /// The bus address, or a failed requirement that says how to start the keyring.
    static func requireBus() throws -> String {
        let keyring = ProcessInfo.processInfo.environment["OAUTH2_TEST_KEYRING_BUS"].flatMap { $0.isEmpty ? nil : $0 }
        let address = try #require(bus, "no keyring: run scripts/test-servers/keyring.sh start and export OAUTH2_TEST_KEYRING_BUS")
        try #require(
            keyring == nil || keyring == address,
            "OAUTH2_TEST_KEYRING_BUS is not the session bus: export DBUS_SESSION_BUS_ADDRESS=$OAUTH2_TEST_KEYRING_BUS")
        return address
    }

    /// A key no other run uses, so that runs never see each other's items.
    static func uniqueKey(_ label: String) -> TokenSessionKey {
        TokenSessionKey(issuer: "https://keyring-test.example", clientID: "swift-oauth2-tests", account: "\(label)-\(UUID().uuidString)")
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

        @Test func passesTheSharedStoreSuite() async throws {
            _ = try KeyringEnvironment.requireBus()
            let failures = await StoreConformance.run(SecretServiceTokenStore())
            #expect(failures.isEmpty, "\(failures)")
            IntegrationLog.record("keyring")
        }

        @Test func passesTheSharedRegistrationSuite() async throws {
            _ = try KeyringEnvironment.requireBus()
            // Registrations as items of their own schema; ones kept the old way (a session
            // item under the account `.registration`) moved on their first load.
            let failures = await RegistrationStoreConformance.run(SecretServiceTokenStore())
            #expect(failures.isEmpty, "\(failures)")
            IntegrationLog.record("keyring")
        }

        @Test func roundTripsASession() async throws {
            _ = try KeyringEnvironment.requireBus()
            let store = SecretServiceTokenStore()
            let key = KeyringEnvironment.uniqueKey("round-trip")
            defer { Task { try? await store.remove(key) } }
            #expect(try await store.load(key) == nil)

            let session = StoredTokenSession(
                key: key,
                tokens: TokenSet(
                    accessToken: "keyring-access", tokenType: .dpop, refreshToken: "keyring-refresh", idToken: "a.b.c",
                    expiresAt: Date(timeIntervalSince1970: 1_767_225_600), scopes: ["openid", "offline_access"],
                    issuedAt: Date(timeIntervalSince1970: 1_767_222_000), additionalFields: ["refresh_expires_in": .integer(600)]),
                subject: "sub-1", updatedAt: Date(timeIntervalSince1970: 1_767_222_001),
                additionalFields: ["dpop_key": .object(["kty": .string("EC")]), "client_secret": "keyring-secret"])
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
            let result = try await Worker.run(
                ["keyring-save", key.issuer, key.clientID, key.account, "written-by-a-child"], environment: environment,
                withErrors: true)
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
            let session = StoredTokenSession(key: KeyringEnvironment.uniqueKey("file"), tokens: TokenSet(accessToken: "sealed"))
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
                                    StoredTokenSession(key: key, tokens: TokenSet(accessToken: "c"), additionalFields: ["count": .integer(count + 1)]))
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

