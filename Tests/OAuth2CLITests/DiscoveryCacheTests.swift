import Foundation
import OAuth2
import Testing

@testable import OAuth2CLI

@Suite struct MetadataFileCacheTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-discovery-\(UUID().uuidString)")
    let issuer = URL(string: "https://id.example.com")!
    let fetched = Date(timeIntervalSince1970: 1_800_000_000)

    func metadata(issuer: String = "https://id.example.com") throws -> ServerMetadata {
        try ServerMetadata(fields: [
            "issuer": .string(issuer),
            "token_endpoint": .string(issuer + "/token"),
            "jwks_uri": .string(issuer + "/jwks"),
        ])
    }

    @Test func aFreshEntryIsReadBackUntilItsHourIsOver() throws {
        let cache = MetadataFileCache(configDirectory: directory)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(cache.metadata(for: issuer, now: fetched) == nil)
        cache.save(try metadata(), for: issuer, now: fetched)
        #expect(cache.metadata(for: issuer, now: fetched.addingTimeInterval(3599)) == (try metadata()))
        #expect(cache.metadata(for: issuer, now: fetched.addingTimeInterval(3600)) == nil, "expired")
        #expect(cache.metadata(for: issuer, now: fetched.addingTimeInterval(-1)) == nil, "fetched in the future: the clock moved back")
    }

    @Test func anEntryIsKeptForItsIssuerOnly() throws {
        let cache = MetadataFileCache(configDirectory: directory)
        defer { try? FileManager.default.removeItem(at: directory) }
        cache.save(try metadata(), for: issuer, now: fetched)
        let other = URL(string: "https://id.example.com/tenant")!
        #expect(cache.metadata(for: other, now: fetched) == nil)
        // A file naming another issuer than the one it is filed under is not trusted.
        try FileManager.default.copyItem(at: cache.file(for: issuer), to: cache.file(for: other))
        #expect(cache.metadata(for: other, now: fetched) == nil)
        cache.save(try metadata(issuer: "https://evil.example.com"), for: issuer, now: fetched)
        #expect(cache.metadata(for: issuer, now: fetched) == nil, "the document names another issuer")
    }

    @Test func filesArePrivateAndAnUnreadableOneIsFetchedAgain() throws {
        let cache = MetadataFileCache(configDirectory: directory)
        defer { try? FileManager.default.removeItem(at: directory) }
        cache.save(try metadata(), for: issuer, now: fetched)
        let file = cache.file(for: issuer)
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let directoryAttributes = try FileManager.default.attributesOfItem(atPath: cache.directory.path)
        #expect((directoryAttributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        try Data("{not json".utf8).write(to: file)
        #expect(cache.metadata(for: issuer, now: fetched) == nil)
    }
}
