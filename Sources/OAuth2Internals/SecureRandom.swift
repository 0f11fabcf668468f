/// Random values from the system CSPRNG. As base64url text: `SecureRandom.token(byteCount:)`
/// in `OAuth2JOSE`, beside the encoding.
package enum SecureRandom {
    package static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
