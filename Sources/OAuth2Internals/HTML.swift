import Foundation

/// Text for the few HTML pages our modules serve (the loopback listener's, the test
/// provider's).
package enum HTML {
    /// `text` with `&`, `<`, `>`, `"` and `'` escaped: safe in element content and in quoted
    /// attribute values.
    package static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
