import Foundation
import HTTPTypes

/// The first challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1): its scheme
/// (`Bearer`, `DPoP`) and parameters (`error`, `error_description`, `realm`, `scope`…).
public struct WWWAuthenticate: Sendable, Hashable {
    /// The auth scheme, as sent.
    public let scheme: String
    /// The auth parameters, names lowercased.
    public let parameters: [String: String]

    /// Parses the first challenge of a header value; `nil` when there is none.
    public init?(_ value: String) {
        var scanner = Substring(value)
        func skipSpaces() { scanner = scanner.drop(while: { $0 == " " || $0 == "\t" }) }
        skipSpaces()
        let scheme = scanner.prefix(while: { $0 != " " && $0 != "," && $0 != "\t" })
        guard !scheme.isEmpty else { return nil }
        scanner = scanner.dropFirst(scheme.count)
        var parameters: [String: String] = [:]
        while true {
            scanner = scanner.drop(while: { $0 == " " || $0 == "," || $0 == "\t" })
            let name = scanner.prefix(while: { $0 != "=" && $0 != " " && $0 != "," })
            guard !name.isEmpty else { break }
            var rest = scanner.dropFirst(name.count).drop(while: { $0 == " " })
            // `Bearer, DPoP …`: the next challenge starts; only the first is read.
            guard rest.first == "=" else { break }
            rest = rest.dropFirst().drop(while: { $0 == " " })
            var parsed = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                while let character = rest.first, character != "\"" {
                    if character == "\\" { rest = rest.dropFirst() }
                    if let next = rest.first { parsed.append(next) }
                    rest = rest.dropFirst()
                }
                rest = rest.dropFirst()
            } else {
                let token = rest.prefix(while: { $0 != "," && $0 != " " })
                parsed = String(token)
                rest = rest.dropFirst(token.count)
            }
            parameters[name.lowercased()] = parsed
            scanner = rest
        }
        self.scheme = String(scheme)
        self.parameters = parameters
    }
}
