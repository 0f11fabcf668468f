import Foundation

/// One message of git's credential-helper protocol (git-credential(1), "INPUT/OUTPUT
/// FORMAT"): `key=value` lines, each ended by a newline, the message ended by a blank line
/// or the end of the input.
///
/// - The key is everything before the first `=`, the value everything after it (it may hold
///   `=`); neither may hold a newline or a NUL.
/// - A key ending in `[]` (`wwwauth[]`, `capability[]`) may repeat; an empty value clears
///   what came before it.
/// - Keys this tool does not know are kept and ignored, as the protocol asks ("future
///   extensions").
/// - A line without `=`, or with a NUL, makes the whole message malformed.
///
/// The helper reads at most ``maximumSize`` bytes: git's requests are a few hundred.
struct GitCredentialMessage: Equatable, Sendable {
    /// The most bytes read before the blank line: 64 KiB.
    static let maximumSize = 64 * 1024

    /// The single-valued keys, the last occurrence winning.
    private(set) var values: [String: String] = [:]
    /// The multi-valued (`…[]`) keys, in order.
    private(set) var lists: [String: [String]] = [:]

    /// Why a request cannot be read.
    struct ReadError: Error, Equatable {
        /// What was wrong, for the one line on stderr (never the line's text: it may hold a
        /// password).
        var reason: String
    }

    init() {}

    /// `protocol`: `https`, `http`…
    var `protocol`: String? { values["protocol"] }
    /// `host`, with `:port` when the URL has one.
    var host: String? { values["host"] }
    /// `path`, when git sends it (`credential.useHttpPath`).
    var path: String? { values["path"] }
    /// `username`, when the URL or a previous helper gave one.
    var username: String? { values["username"] }
    /// `password`: in `store` and `erase`, the credential git used.
    var password: String? { values["password"] }

    /// The value of a single-valued key.
    subscript(key: String) -> String? { values[key] }

    /// Sets a single-valued key (`nil` removes it).
    mutating func set(_ key: String, _ value: String?) { values[key] = value }

    /// Reads a message from the bytes of a request: up to the first blank line, or all of
    /// them when there is none.
    ///
    /// - Throws: ``ReadError`` for a malformed line, a NUL, text that is not UTF-8, or more
    ///   than ``maximumSize`` bytes before the blank line.
    static func parse(_ bytes: some Collection<UInt8>) throws -> GitCredentialMessage {
        var message = GitCredentialMessage()
        var read = 0
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            read += line.count + 1
            guard read <= maximumSize + 1 else { throw ReadError(reason: "the request is larger than \(maximumSize / 1024) KiB") }
            var line = Array(line)
            // A CRLF line end (a git for Windows build writing through a text-mode pipe).
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            if line.isEmpty { break }
            guard !line.contains(0) else { throw ReadError(reason: "a line holds a NUL byte") }
            guard let text = String(validating: line, as: UTF8.self) else { throw ReadError(reason: "a line is not UTF-8") }
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw ReadError(reason: "a line is not key=value")
            }
            let key = String(text[..<equals])
            let value = String(text[text.index(after: equals)...])
            if key.hasSuffix("[]") {
                if value.isEmpty { message.lists[key] = [] } else { message.lists[key, default: []].append(value) }
            } else {
                message.values[key] = value
            }
        }
        return message
    }

    /// The values of a multi-valued key (`capability[]`), in order.
    func list(_ key: String) -> [String] { lists[key] ?? [] }

    /// An answer: `key=value` lines in the given order, each ended by a newline.
    ///
    /// - Throws: ``ReadError`` when a value holds a newline or a NUL (it would add lines of
    ///   its own to the answer) or a key is empty or holds `=`.
    static func encode(_ pairs: [(key: String, value: String)]) throws -> String {
        var text = ""
        for (key, value) in pairs {
            guard !key.isEmpty, !key.contains(where: { $0 == "=" || $0 == "\n" || $0 == "\0" }) else {
                throw ReadError(reason: "the answer's key \"\(key)\" cannot be written")
            }
            guard !value.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\0" }) else {
                throw ReadError(reason: "the answer's \(key) holds a line break or a NUL")
            }
            text += "\(key)=\(value)\n"
        }
        return text
    }
}
