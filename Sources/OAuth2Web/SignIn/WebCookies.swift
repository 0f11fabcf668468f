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
    ///
    /// This runs for every request the sign-in sees: a field of ASCII text (what browsers
    /// send) is read in place, and a string is made only for a value that is kept; any other
    /// field is read as ``values(named:in:)`` reads it (Unicode trimming, `String` equality).
    package static func ids(named name: String, in fields: HTTPFields, limit: Int) -> [String] {
        var found: [String] = []
        guard limit > 0 else { return found }
        /// Keeps `value` once; whether to read on.
        func keep(_ value: String) -> Bool {
            if !found.contains(value) { found.append(value) }
            return found.count < limit
        }
        var nameText = name
        nameText.withUTF8 { nameBytes in
            // A non-ASCII name could equal an ASCII one as a `String` (canonical equivalence):
            // only an ASCII name is compared byte for byte.
            let asciiName = nameBytes.allSatisfy { $0 < 0x80 }
            for field in fields where field.name == .cookie {
                var text = field.value
                let readOn = text.withUTF8 { bytes -> Bool in
                    guard bytes.count <= maximumHeaderLength else { return true }
                    if asciiName, bytes.allSatisfy({ $0 < 0x80 }) {
                        return forEachASCIIPair(in: bytes) { key, value in
                            guard key.elementsEqual(nameBytes), isWellFormedID(value) else { return true }
                            return keep(String(decoding: value, as: UTF8.self))
                        }
                    }
                    return forEachPair(inField: field.value) { key, value in
                        guard key == name, isWellFormedID(value) else { return true }
                        return keep(value)
                    }
                }
                guard readOn else { return }
            }
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
            guard forEachPair(inField: field, body) else { return }
        }
    }

    /// ``forEachPair(in:_:)`` for one field; `false` when `body` stopped it.
    private static func forEachPair(inField field: String, _ body: (String, String) -> Bool) -> Bool {
        for pair in field.split(separator: ";") {
            let trimmed = pair.drop { $0 == " " || $0 == "\t" }
            guard let equals = trimmed.firstIndex(of: "=") else { continue }
            let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
            var value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard body(key, value) else { return false }
        }
        return true
    }

    /// ``forEachPair(inField:_:)`` for a field of ASCII bytes, in place: the same pairs (in
    /// ASCII, `Character`s are bytes — a field holds no CR LF — and the whitespace
    /// `trimmingCharacters(in: .whitespaces)` trims is space and tab).
    private static func forEachASCIIPair(
        in bytes: UnsafeBufferPointer<UInt8>, _ body: (_ key: Slice<UnsafeBufferPointer<UInt8>>, _ value: Slice<UnsafeBufferPointer<UInt8>>) -> Bool
    ) -> Bool {
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            defer { start = end + 1 }
            var low = start
            while low < end, isBlank(bytes[low]) { low += 1 }
            guard let equals = bytes[low..<end].firstIndex(of: UInt8(ascii: "=")) else { continue }
            var keyEnd = equals
            while keyEnd > low, isBlank(bytes[keyEnd - 1]) { keyEnd -= 1 }
            var valueStart = equals + 1, valueEnd = end
            while valueStart < valueEnd, isBlank(bytes[valueStart]) { valueStart += 1 }
            while valueEnd > valueStart, isBlank(bytes[valueEnd - 1]) { valueEnd -= 1 }
            if valueEnd - valueStart >= 2, bytes[valueStart] == UInt8(ascii: "\""), bytes[valueEnd - 1] == UInt8(ascii: "\"") {
                valueStart += 1
                valueEnd -= 1
            }
            guard body(bytes[low..<keyEnd], bytes[valueStart..<valueEnd]) else { return false }
        }
        return true
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
        isWellFormedID(value.utf8)
    }

    /// ``isWellFormedID(_:)`` over UTF-8 bytes.
    static func isWellFormedID(_ value: some Collection<UInt8>) -> Bool {
        value.count == 43 && value.allSatisfy { byte in
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
