import ArgumentParser
import Foundation
import OAuth2

/// How `oauth2 token` prints its token (`--format`).
enum TokenOutput: String, ExpressibleByArgument, CaseIterable {
    /// The bare access token and a newline (the default).
    case bare
    /// `Authorization: Bearer …`, or `Authorization: DPoP …` for a DPoP-bound token (whose
    /// requests also need a proof: `oauth2 request` makes them).
    case header
    /// `{"access_token", "token_type", "expires_at" (RFC 3339, UTC), "scope"}`; `null` for
    /// an expiry or scope the server did not give.
    case json
    /// `NAME='…'`: one line a POSIX shell reads back as it was (`eval`), quoted so that no
    /// character of the token is interpreted.
    case env

    /// The variable `--format env` and `exec` name by default.
    static let defaultVariable = "OAUTH2_ACCESS_TOKEN"

    /// What to print for `tokens` (`variable` is the `env` format's name).
    func render(_ tokens: TokenSet, variable: String = Self.defaultVariable) -> String {
        switch self {
        case .bare: return tokens.accessToken
        case .header: return "Authorization: \(tokens.tokenType.rawValue) \(tokens.accessToken)"
        case .json: return Output.pretty(Self.json(tokens))
        case .env: return "\(variable)=\(Self.shellQuoted(tokens.accessToken))"
        }
    }

    /// The `json` format's object.
    static func json(_ tokens: TokenSet) -> JSONValue {
        .object([
            "access_token": .string(tokens.accessToken),
            "token_type": .string(tokens.tokenType.rawValue),
            "expires_at": TokenSession.expiresAt(of: tokens).map { .string(rfc3339($0)) } ?? .null,
            "scope": tokens.scopes.map { .string($0.joined(separator: " ")) } ?? .null,
        ])
    }

    /// `date` as an RFC 3339 timestamp in UTC, to the second (`2026-11-28T13:40:05Z`).
    static func rfc3339(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(secondsFromGMT: 0)!))
    }

    /// `text` in single quotes, each `'` in it written `'\''`: a POSIX shell reads it back
    /// as it is, with no expansion.
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// `true` for a name a POSIX shell and `env` accept as an environment variable:
    /// letters, digits and `_`, not starting with a digit.
    static func isVariableName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0 == "_" || CharacterSet.alphanumerics.contains($0)) }
    }
}
