import Foundation
import OAuth2
import Testing

@testable import OAuth2CLI

/// Profiles and cached discovery documents are private from their first byte: created
/// 0600 in a 0700 directory (never written wider and narrowed afterwards), replaced
/// atomically, no temporary file left behind.
@Suite struct PrivateFilesTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-private-\(UUID().uuidString)")

    func mode(_ url: URL) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int ?? -1) & 0o777
    }

    @Test func aProfileIsPrivateAndReplacedWhole() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let profiles = ProfileStore(configDirectory: directory)
        let profile = Profile(issuer: "https://id.example.com", clientID: "cli", scopes: ["openid"], grant: "authorization_code", store: .file)
        try profiles.save(profile, as: "work")
        let url = profiles.directory.appendingPathComponent("work.json")
        #expect(try mode(url) == 0o600)
        #expect(try mode(profiles.directory) == 0o700)
        // A profile someone made readable is replaced by a private file, not rewritten in place.
        chmod(url.path, 0o644)
        try profiles.save(profile, as: "work")
        #expect(try mode(url) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: profiles.directory.path) == ["work.json"])
        #expect(try profiles.load("work")?.clientID == "cli")
    }

    @Test func aCachedDiscoveryDocumentIsPrivate() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = MetadataFileCache(configDirectory: directory)
        let issuer = URL(string: "https://id.example.com")!
        cache.save(try ServerMetadata(fields: ["issuer": .string(issuer.absoluteString), "token_endpoint": .string("https://id.example.com/token")]), for: issuer)
        let file = cache.file(for: issuer)
        #expect(try mode(file) == 0o600)
        #expect(try mode(file.deletingLastPathComponent()) == 0o700)
        #expect(try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path).count == 1)
    }
}
