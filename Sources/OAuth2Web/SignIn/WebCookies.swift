import Foundation
import HTTPTypes

/// Reading the `Cookie` header fields of a request, and writing `Set-Cookie`.
package enum WebCookies {
    /// The longest cookie header read; longer ones are ignored whole (a browser sends at
    /// most ~4 KB per cookie and a few hundred cookies).
    package static let maximumHeaderLength = 16 * 1024

    /// Every value of the cookie `name` in the request, in order (a browser may send the
    /// same name twice: one for each path or domain it was set for).
    package static func values(named name: String, in fields: HTTPFields) -> [String] {
        var found: [String] = []
        forEachPair(in: fields) { key, value in
            if key == name { found.append(value) }
            return true
        }
        return found
    }

    /// The first `limit` distinct values of the cookie `name` that could be ids the app made
    /// (``isWellFormedID(_:)``), in order. A request may carry hundreds; each costs a store
    /// lookup, so only a few are read: a browser sends its own cookie first (RFC 6265
    /// §5.4: longer paths first, then older), and at most one per path and domain.
    package static func ids(named name: String, in fields: HTTPFields, limit: Int) -> [String] {
        var found: [String] = []
        forEachPair(in: fields) { key, value in
            if key == name, isWellFormedID(value), !found.contains(value) { found.append(value) }
            return found.count < limit
        }
        return found
    }

    /// The names of the request's cookies that start with `prefix`, each once, in order.
    package static func names(startingWith prefix: String, in fields: HTTPFields) -> [String] {
        var found: [String] = []
        var seen: Set<String> = []
        forEachPair(in: fields) { key, _ in
            if key.hasPrefix(prefix), seen.insert(key).inserted { found.append(key) }
            return true
        }
        return found
    }

    /// Calls `body` with each name and value of the request's cookies, in order, until it
    /// returns `false`.
    private static func forEachPair(in fields: HTTPFields, _ body: (String, String) -> Bool) {
        for field in fields[values: .cookie] where field.utf8.count <= maximumHeaderLength {
            for pair in field.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " || $0 == "\t" }
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
                var value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
                guard body(key, value) else { return }
            }
        }
    }

    /// A `Set-Cookie` value: `HttpOnly`, `SameSite=Lax`, `Path=/`, `Secure` when `secure`;
    /// `maxAge` 0 deletes the cookie.
    package static func setCookie(name: String, value: String, maxAge: Int, secure: Bool) -> String {
        var cookie = "\(name)=\(value); Path=/; Max-Age=\(max(0, maxAge)); HttpOnly; SameSite=Lax"
        if secure { cookie += "; Secure" }
        return cookie
    }

    /// Whether `value` could be a cookie value the app made: 43 base64url characters.
    package static func isWellFormedID(_ value: String) -> Bool {
        value.utf8.count == 43 && value.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x5F
        }
    }
}

/// Where the browser may be sent after a sign-in: a path of the app, or a URL of an allowed
/// origin. Anything else becomes `/` (no open redirect).
package enum ReturnTo {
    /// `candidate` if it may be followed, else `nil`.
    package static func checked(_ candidate: String?, configuration: WebSignInConfiguration) -> String? {
        guard let candidate, !candidate.isEmpty, candidate.utf8.count <= 2048 else { return nil }
        // No control characters or backslashes: browsers read `/\evil.example` as `//evil.example`.
        guard !candidate.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "\\" }) else { return nil }
        if candidate.hasPrefix("/") {
            // A path of this app; `//host` is a scheme-relative URL to another host.
            guard !candidate.hasPrefix("//"), URL(string: candidate) != nil else { return nil }
            return candidate
        }
        guard let url = URL(string: candidate), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            url.user == nil, url.password == nil
        else { return nil }
        let allowed = [configuration.publicBaseURL] + configuration.allowedReturnOrigins
        return allowed.contains { origin($0) == origin(url) } ? candidate : nil
    }

    static func origin(_ url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }
}
