import Foundation

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
