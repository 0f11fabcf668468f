import Crypto
import Foundation
@_spi(Tooling) import OAuth2

/// Discovered server metadata kept on disk between commands, so that a command answered
/// from the token store (`oauth2 token` with a valid token) sends nothing at all: each
/// command is a new process, and without it every one would fetch the discovery document
/// again before looking at its tokens.
///
/// One file per issuer in `<config-dir>/metadata/` (directory 0700, files 0600), named by a
/// hash of the issuer, holding the document and when it was fetched. An entry older than
/// ``timeToLive`` (the library's ``MetadataCache`` default, one hour), naming another
/// issuer, or unreadable is fetched again; a write that fails costs only the next fetch.
struct MetadataFileCache {
    let directory: URL
    var timeToLive: TimeInterval = 3600

    init(configDirectory: URL) {
        directory = configDirectory.appendingPathComponent("metadata")
    }

    private struct Entry: Codable {
        var issuer: String
        var fetchedAt: Date
        var metadata: ServerMetadata
    }

    func file(for issuer: URL) -> URL {
        let digest = SHA256.hash(data: Data(issuer.absoluteString.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
        return directory.appendingPathComponent(digest + ".json")
    }

    /// The stored metadata of `issuer` when fetched less than ``timeToLive`` before `now`.
    func metadata(for issuer: URL, now: Date = Date()) -> ServerMetadata? {
        guard let data = FileManager.default.contents(atPath: file(for: issuer).path),
            let entry = try? JSONDecoder().decode(Entry.self, from: data),
            entry.issuer == issuer.absoluteString, entry.metadata.issuer == issuer.absoluteString,
            entry.fetchedAt <= now, now.timeIntervalSince(entry.fetchedAt) < timeToLive
        else { return nil }
        return entry.metadata
    }

    /// Keeps `metadata` as fetched now; failures are ignored (the next command fetches again).
    func save(_ metadata: ServerMetadata, for issuer: URL, now: Date = Date()) {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            try PrivateFile.write(
                try encoder.encode(Entry(issuer: issuer.absoluteString, fetchedAt: now, metadata: metadata)), to: file(for: issuer))
        } catch {}
    }
}
