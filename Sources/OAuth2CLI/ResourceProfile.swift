import Crypto
import Foundation
import OAuth2

/// The profiles of protected resources (`oauth2 request URL` without a profile, `oauth2 login
/// --resource URL`): how one is named after its resource, and how the one of a URL is found.
///
/// A resource profile keeps its resource identifier in its options
/// (``ProfileOption/resource``); its tokens are stored under its own name (the session's
/// account), and its client — configured, a Client ID Metadata Document, or registered for
/// it alone — is its own, so that nothing is shared between two resources, even of one
/// authorization server.
enum ResourceProfile {
    /// The longest name a profile may have (``ProfileStore/validate(name:)``).
    static let maximumLength = 64

    /// The resource identifier of `url` as compared (RFC 9728 §3.3, the library's rule):
    /// scheme and host lower-cased, a default port dropped, an empty path and `/` alike.
    ///
    /// - Throws: ``CLIError`` (usage) for a URL that cannot name a resource: not HTTPS (nor
    ///   HTTP on a loopback host), with a query, a fragment or user information.
    static func identifier(of url: URL) throws -> String {
        do {
            guard var components = try ResourceIdentifier.components(url), url.fragment == nil else {
                throw CLIError.usage("\(url.absoluteString) cannot name a protected resource (no fragment).")
            }
            if components.percentEncodedPath == "/" { components.percentEncodedPath = "" }
            return components.string ?? url.absoluteString
        } catch let error as OAuth2Error {
            throw CLIError.usage(
                "\(url.absoluteString) cannot name a protected resource: \(ErrorReport.reason(error))",
                hint: "give the resource's URL: https://, no query (or --profile NAME for a profile of your own)")
        }
    }

    /// The name of the profile of the resource `url`: its host, then its port when not the
    /// scheme's default, then each segment of its path, joined by `_`
    /// (`https://mcp.example.com/mcp` → `mcp.example.com_mcp`,
    /// `http://127.0.0.1:8090/mcp` → `127.0.0.1_8090_mcp`). Letters and digits, `.` and `-`
    /// stay (the host lower-cased); any other character becomes `-`. A name longer than 64
    /// characters is cut to 55 and ends with `-` and the first 8 hex digits of the SHA-256 of
    /// the resource identifier, so that two long URLs get two names.
    ///
    /// The scheme is not part of the name: `http://` and `https://` of one place (or two URLs
    /// that differ only in the characters replaced) would share it, and the second is refused
    /// (``ensureFree(_:for:profiles:)``) rather than given the first's tokens.
    static func name(for url: URL) throws -> String {
        let identifier = try identifier(of: url)
        guard let components = URLComponents(string: identifier), let host = components.host, !host.isEmpty else {
            throw CLIError.usage("\(url.absoluteString) has no host.")
        }
        var parts = [sanitized(host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")))]
        if let port = components.port { parts.append(String(port)) }
        let path = components.percentEncodedPath.removingPercentEncoding ?? components.percentEncodedPath
        parts += path.split(separator: "/").map { sanitized(String($0)) }
        var name = parts.joined(separator: "_")
        if name.hasPrefix(".") || name.hasPrefix("-") { name = "r" + name }
        if name.count > maximumLength {
            let digest = SHA256.hash(data: Data(identifier.utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
            name = String(name.prefix(maximumLength - 9)) + "-" + digest
        }
        return name
    }

    /// `text` with every character but ASCII letters, digits, `.` and `-` replaced by `-`.
    private static func sanitized(_ text: String) -> String {
        String(text.unicodeScalars.map { scalar -> Character in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", ".", "-": return Character(scalar)
            default: return "-"
            }
        })
    }

    /// The resource identifier a profile was made for, if it is a resource profile.
    static func resource(of profile: Profile) -> String? { profile.options[ProfileOption.resource] }

    /// The name of the profile made for the resource `url`: the one named after it
    /// (``name(for:)``) when it is that resource's, else any profile whose resource is
    /// `url`'s (one saved by `login --resource URL --profile NAME`); `nil` when none is.
    static func matching(_ url: URL, profiles: ProfileStore) throws -> String? {
        let identifier = try identifier(of: url)
        let named = try name(for: url)
        if let profile = try profiles.load(named), try resource(of: profile).map(normalized) == identifier { return named }
        for name in profiles.names() where name != named {
            guard let profile = try? profiles.load(name), let resource = resource(of: profile) else { continue }
            if (try? normalized(resource)) == identifier { return name }
        }
        return nil
    }

    /// Refuses to save the profile of `resource` as `name` when a profile of that name exists
    /// for anything else (another resource, or a profile made by `login --issuer`): its
    /// tokens and client must not be replaced or reused.
    static func ensureFree(_ name: String, for resource: String, profiles: ProfileStore) throws {
        guard let existing = try profiles.load(name) else { return }
        let theirs = self.resource(of: existing).flatMap { try? normalized($0) }
        guard theirs != (try normalized(resource)) else { return }
        let what = self.resource(of: existing).map { "the resource \($0)" } ?? "another server"
        throw CLIError.usage(
            "The profile \"\(name)\" is already the profile of \(what).", hint: "give another name with --profile NAME")
    }

    private static func normalized(_ text: String) throws -> String {
        guard let url = URL(string: text) else { throw CLIError.usage("\(text) is not a URL.") }
        return try identifier(of: url)
    }
}
