import Foundation
import OAuth2
import OAuth2SecretService
import OAuth2TestSupport
import Testing

/// Where libsecret or a Secret Service is missing, the keyring store says it is
/// unavailable — it never crashes or hangs — so that a program falls back to the file
/// store. (The keyring itself is tested in OAuth2IntegrationTests/KeyringTests.swift,
/// against a real gnome-keyring.)
@Suite struct SecretServiceAvailabilityTests {
    @Test func aMissingLibraryMakesTheStoreUnavailable() async throws {
        let store = SecretServiceTokenStore(library: "libsecret-that-does-not-exist.so.0")
        let error = try await #require(throws: TokenStoreError.self) { try await store.checkAvailability() }
        #expect(error.code == .unavailable)
        #expect(error.message.contains("libsecret-that-does-not-exist.so.0"))
        #expect(await store.isAvailable() == false)
        #expect(await SecretServiceTokenStore.isAvailable(library: "libsecret-that-does-not-exist.so.0") == false)

        let key = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli")
        let loadError = try await #require(throws: TokenStoreError.self) { try await store.load(key) }
        #expect(loadError.code == .unavailable)
        let listError = try await #require(throws: TokenStoreError.self) { try await store.list() }
        #expect(listError.code == .unavailable)
    }

    @Test func noSessionBusMakesTheStoreUnavailable() async throws {
        // In a child process: GLib keeps the first session-bus connection for the life of
        // a process, and this one must not touch the test process's.
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nonexistent/swift-oauth2-test-bus"
        environment["DISPLAY"] = nil
        let result = try await Worker.run(["keyring-availability"], environment: environment)
        #expect(result.status == 0)
        let lines = result.output.split(separator: "\n")
        #expect(lines.first == "unavailable unavailable", "\(result.output)")
        // With libsecret installed the bus is what is missing; without it, the library.
        let reason = lines.dropFirst().joined(separator: " ")
        #expect(reason.contains("libsecret-1.so.0") || reason.contains("asking the Secret Service"), "\(reason)")
    }
}
