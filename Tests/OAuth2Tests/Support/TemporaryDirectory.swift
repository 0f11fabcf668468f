import Foundation
import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh directory under the system's temporary directory, removed (with everything in
/// it) after `body`.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async rethrows -> T {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("oauth2-tests-\(UUID().uuidString)", isDirectory: true)
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url)
}

/// The permission bits of the file at `url`.
func permissions(_ url: URL) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// The names in `directory`, sorted.
func fileNames(_ directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
}

/// The JSON object in the file at `url`.
func jsonObject(_ url: URL) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url))
    guard let dictionary = object as? [String: Any] else { throw CocoaError(.fileReadCorruptFile) }
    return dictionary
}

/// A session with whole-second dates (documents keep seconds since 1970 as numbers).
func sampleSession(
    _ key: TokenSessionKey = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "alice"),
    accessToken: String = "access-1",
    additionalFields: [String: JSONValue] = [:]
) -> StoredTokenSession {
    StoredTokenSession(
        key: key,
        tokens: TokenSet(
            accessToken: accessToken, tokenType: .dpop, refreshToken: "refresh-1", idToken: "id.token.sig",
            expiresAt: Date(timeIntervalSince1970: 1_767_225_600), scopes: ["openid", "profile"],
            issuedAt: Date(timeIntervalSince1970: 1_767_222_000), additionalFields: ["refresh_expires_in": .integer(86400)]),
        subject: "248289761001",
        updatedAt: Date(timeIntervalSince1970: 1_767_222_001),
        // A program's own secret beside the tokens (the `oauth2` tool keeps its client secret so).
        additionalFields: additionalFields.merging(["client_secret": "s3cret"]) { given, _ in given })
}
