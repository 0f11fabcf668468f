import Crypto
import Foundation
import OAuth2Internals

/// Proof Key for Code Exchange (RFC 7636), always with `S256`.
public struct PKCE: Sendable, Hashable, CustomStringConvertible {
    /// The secret verifier, sent only to the token endpoint.
    public let verifier: String
    /// `BASE64URL(SHA256(verifier))`, sent with the authorization request.
    public let challenge: String
    /// Always `S256`: `plain` offers no protection against a leaked authorization request.
    public var method: String { "S256" }

    /// A fresh verifier from the system CSPRNG.
    /// - Parameter length: the verifier's length, 43…128 characters (RFC 7636 §4.1).
    public init(length: Int = 64) throws(OAuth2Error) {
        guard (43...128).contains(length) else {
            throw .client(.invalidConfiguration, "A PKCE verifier has 43 to 128 characters, not \(length).")
        }
        // 3 random bytes give 4 characters; draw enough and cut to the exact length.
        let verifier = String(SecureRandom.token(byteCount: (length * 3 + 3) / 4).prefix(length))
        try self.init(verifier: verifier)
    }

    /// Wraps a verifier made elsewhere (for tests, or a request restored from storage).
    /// - Throws: when the verifier is not 43…128 characters of `[A-Za-z0-9-._~]`.
    public init(verifier: String) throws(OAuth2Error) {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        guard (43...128).contains(verifier.utf8.count), verifier.utf8.allSatisfy(allowed.contains) else {
            throw .client(.invalidConfiguration, "The PKCE verifier is not 43–128 unreserved characters.")
        }
        self.verifier = verifier
        self.challenge = Base64URL.encode(Array(SHA256.hash(data: Data(verifier.utf8))))
    }

    /// The challenge only; the verifier is a secret.
    public var description: String { "PKCE(S256, challenge: \(challenge))" }
}
