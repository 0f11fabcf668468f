import Crypto
import Foundation
import OAuth2Internals
import OAuth2JOSE

// The provider's own encodings. They are written here, not borrowed from the OAuth2 module,
// so that the provider's protocol decisions (what a form says, whether a PKCE verifier
// matches) never share code with the client they test.

/// base64url without padding (RFC 4648 §5, RFC 7515 §2).
enum Base64URL {
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// Random values: tokens, codes, session ids.
enum Random {
    /// `bytes` random bytes (from the system's CSPRNG), base64url-encoded.
    static func token(bytes: Int = 32) -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<bytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The user code alphabet of RFC 8628 §6.1: consonants only, no vowels, no look-alikes.
    static let userCodeAlphabet = Array("BCDFGHJKLMNPQRSTVWXZ")

    /// A user code `XXXX-XXXX` (20^8 ≈ 2^34.5 values).
    static func userCode() -> String {
        var generator = SystemRandomNumberGenerator()
        let letters = (0..<8).map { _ in userCodeAlphabet.randomElement(using: &generator)! }
        return String(letters[0..<4]) + "-" + String(letters[4..<8])
    }
}

/// application/x-www-form-urlencoded (the WHATWG URL standard's form serialization, which
/// RFC 6749 Appendix B refers to).
enum FormEncoding {
    /// The pairs of a form body or query string, in order; `nil` when a percent escape is
    /// malformed or decodes to invalid UTF-8.
    static func decode(_ text: Substring) -> [(String, String)]? {
        var pairs: [(String, String)] = []
        for part in text.split(separator: "&", omittingEmptySubsequences: true) {
            let halves = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecode(halves[0]) else { return nil }
            let value = halves.count > 1 ? percentDecode(halves[1]) : ""
            guard let value else { return nil }
            pairs.append((name, value))
        }
        return pairs
    }

    /// Decodes `+` as a space and `%XX` escapes.
    static func percentDecode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(bytes: bytes, encoding: .utf8)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Percent-encodes everything but the unreserved characters (RFC 3986 §2.3), for
    /// query strings the provider builds.
    static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }

    /// `name=value&…`, each part percent-encoded.
    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }

    /// `url` with `pairs` added to its query (after any query it already has).
    static func appending(_ pairs: [(String, String)], to url: String) -> String {
        guard !pairs.isEmpty else { return url }
        let (base, fragment) = url.firstIndex(of: "#").map { (String(url[..<$0]), String(url[$0...])) } ?? (url, "")
        let separator = base.contains("?") ? (base.hasSuffix("?") || base.hasSuffix("&") ? "" : "&") : "?"
        return base + separator + encode(pairs) + fragment
    }
}

/// Security checks the provider makes itself.
enum Check {
    /// Equality that takes the same time wherever the strings differ: both sides are hashed
    /// first, so neither their contents nor their lengths leak through timing.
    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let left = Array(SHA256.hash(data: Data(a.utf8)))
        let right = Array(SHA256.hash(data: Data(b.utf8)))
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }

    /// RFC 7636 §4.1: 43 to 128 characters of `[A-Z a-z 0-9 - . _ ~]`.
    static func isValidCodeVerifier(_ verifier: String) -> Bool {
        (43...128).contains(verifier.utf8.count) && verifier.utf8.allSatisfy(isUnreserved)
    }

    /// An S256 challenge is the base64url SHA-256 of a verifier: exactly 43 characters.
    static func isValidS256Challenge(_ challenge: String) -> Bool {
        challenge.utf8.count == 43
            && challenge.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    /// RFC 7636 §4.6: `BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge`.
    static func verifierMatchesS256Challenge(_ verifier: String, _ challenge: String) -> Bool {
        constantTimeEquals(Base64URL.encode(SHA256.hash(data: Data(verifier.utf8))), challenge)
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~")
    }
}

/// The provider's few HTML pages.
extension HTML {
    static func page(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title></head>
        <body><h1>\(escape(title))</h1>\(body)</body></html>

        """
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// Whole seconds, rounded up, at least 0 (for `expires_in` and `interval`).
    var wholeSeconds: Int64 {
        let (seconds, attoseconds) = components
        return max(0, attoseconds > 0 ? seconds + 1 : seconds)
    }
}
