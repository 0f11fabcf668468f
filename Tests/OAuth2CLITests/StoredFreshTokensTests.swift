import ArgumentParser
import Foundation
import OAuth2
import Testing

@testable import OAuth2CLI

/// `Context.storedFreshTokens()`: a cached token answered from the file store without a
/// session, and only where the session would have answered with it too.
@Suite struct StoredFreshTokensTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-stored-\(UUID().uuidString)")
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func context(_ arguments: [String] = []) throws -> Context {
        Context(try GlobalOptions.parse(["--config-dir", directory.path, "--profile", "work"] + arguments))
    }

    func profile(store: StoreKind = .file, grant: String = "authorization_code", options: [String: String] = [:]) -> Profile {
        Profile(issuer: "https://id.example.com", clientID: "cli", scopes: ["openid"], grant: grant, store: store, options: options)
    }

    /// Saves `profile` and, in the file store, `tokens` under the key its session uses.
    func save(_ profile: Profile, _ tokens: TokenSet?) async throws {
        let context = try context()
        try context.profiles.save(profile, as: "work")
        guard let tokens else { return }
        let store = try FileTokenStore(directory: directory.appendingPathComponent("tokens"))
        try await store.save(StoredTokenSession(key: context.sessionKey(for: profile), tokens: tokens))
    }

    func tokens(left: TimeInterval, lifetime: TimeInterval = 3600) -> TokenSet {
        TokenSet(accessToken: "at-1", refreshToken: "rt-1", expiresAt: now.addingTimeInterval(left), issuedAt: now.addingTimeInterval(left - lifetime))
    }

    @Test func aFreshTokenInTheFileStoreIsAnswered() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try await save(profile(), tokens(left: 600))
        #expect(try context().storedFreshTokens(now: now) == tokens(left: 600))
    }

    @Test func aTokenTheSessionWouldRenewIsNot() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try await save(profile(), tokens(left: 60))
        #expect(try context().storedFreshTokens(now: now) == nil, "in the leeway")
        try await save(profile(grant: "client_credentials"), tokens(left: -1))
        #expect(try context().storedFreshTokens(now: now) == nil, "expired")
    }

    @Test func otherStoresProfilesAndVerbosityGoTheSessionsWay() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try context().storedFreshTokens(now: now) == nil, "no profile")
        try await save(profile(), nil)
        #expect(try context().storedFreshTokens(now: now) == nil, "no stored tokens")
        try await save(profile(store: .keyring), tokens(left: 600))
        #expect(try context().storedFreshTokens(now: now) == nil, "the profile's store is the keyring")
        #expect(try context(["--store", "file"]).storedFreshTokens(now: now) == tokens(left: 600), "--store file")
        try await save(profile(), tokens(left: 600))
        #expect(try context(["--store", "memory"]).storedFreshTokens(now: now) == nil, "--store memory")
        #expect(try context(["-v"]).storedFreshTokens(now: now) == nil, "-v: the session's log")
        #expect(try Context(try GlobalOptions.parse(["--config-dir", directory.path, "--profile", "home"])).storedFreshTokens(now: now) == nil, "another profile")
    }

    @Test func aDPoPProfileWithoutItsKeyIsLeftToTheSession() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try await save(profile(options: [ProfileOption.dpop: "ES256"]), tokens(left: 600))
        #expect(try context().storedFreshTokens(now: now) == nil, "session() says: sign in again")
        let key = try DPoPKey.generate(.es256)
        let context = try context()
        let store = try FileTokenStore(directory: directory.appendingPathComponent("tokens"))
        var record = StoredTokenSession(key: context.sessionKey(for: profile()), tokens: tokens(left: 600))
        record.setDPoPKey(key)
        try await store.save(record)
        #expect(context.storedFreshTokens(now: now) == tokens(left: 600))
    }
}
