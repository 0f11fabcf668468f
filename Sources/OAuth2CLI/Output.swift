import ArgumentParser
import Foundation
import OAuth2

/// Where output goes: results on stdout, everything else on stderr.
enum Output {
    /// A result line on stdout.
    static func result(_ text: String) {
        FileHandle.standardOutput.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
    }

    /// Raw bytes on stdout (a response body).
    static func raw(_ data: Data) { FileHandle.standardOutput.write(data) }

    /// Progress, steps and prompts on stderr.
    static func step(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }

    /// An error on stderr.
    static func error(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }

    /// A JSON document on stdout, keys sorted.
    static func json(_ value: JSONValue) { result(pretty(value)) }

    static func pretty(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? value.description
    }
}
