import OAuth2Internals

extension SecureRandom {
    /// `byteCount` random bytes as base64url: 32 bytes give 43 characters (256 bits).
    package static func token(byteCount: Int = 32) -> String {
        Base64URL.encode(bytes(byteCount))
    }
}
