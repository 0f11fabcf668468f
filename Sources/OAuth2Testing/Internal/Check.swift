import Crypto
import Foundation

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
