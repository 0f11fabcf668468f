import Foundation
import OAuth2

/// `--authorization-details FILE`: Rich Authorization Requests (RFC 9396) read from a JSON
/// file (`-` reads standard input): an array of objects, each with a string `type`, or one
/// such object.
enum AuthorizationDetailsArgument {
    /// The most a file may hold (64 KiB): details travel in the authorization URL.
    static let maximumSize = 64 * 1024

    /// The details in the file at `path`.
    ///
    /// - Throws: ``CLIError`` (usage) for a file that cannot be read, is too large, or does
    ///   not hold objects with a string `type`.
    static func load(_ path: String) throws -> [AuthorizationDetail] {
        let data: Data
        do {
            data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CLIError.usage("--authorization-details: \(path) cannot be read.")
        }
        return try parse(data, path: path)
    }

    /// The details in `data` (a JSON array of objects with a string `type`, or one object).
    static func parse(_ data: Data, path: String) throws -> [AuthorizationDetail] {
        guard data.count <= maximumSize else {
            throw CLIError.usage("--authorization-details: \(path) is larger than \(maximumSize / 1024) KiB.")
        }
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw CLIError.usage("--authorization-details: \(path) is not JSON.", hint: #"write an array such as [{"type":"payment_initiation","actions":["initiate"]}]"#)
        }
        let entries = value.arrayValue ?? [value]
        var details: [AuthorizationDetail] = []
        for (index, entry) in entries.enumerated() {
            guard let detail = AuthorizationDetail(json: entry) else {
                throw CLIError.usage("--authorization-details: entry \(index + 1) of \(path) is not an object with a string type.")
            }
            details.append(detail)
        }
        guard !details.isEmpty else { throw CLIError.usage("--authorization-details: \(path) holds no entry.") }
        return details
    }
}
