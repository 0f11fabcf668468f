import Crypto
import Foundation
import OAuth2Internals
import OAuth2JOSE

/// Server-issued DPoP nonces (RFC 9449 §9): a value the client must put into its proofs,
/// which bounds how long ago a proof can have been made, whatever the client's clock says.
///
/// Nothing is stored: a nonce is the number of the current time window and an HMAC of it,
/// so every replica given the same ``init(secret:lifetime:)`` secret issues and accepts
/// the same nonces. A nonce is accepted during its own window and the next one (and the
/// previous one, for a replica whose clock runs a little behind); a response to a proof
/// that used an older, still accepted nonce carries the current one.
public struct DPoPServerNonces: Sendable {
    /// How a nonce stands.
    public enum Validity: Sendable, Hashable {
        /// The current window's nonce.
        case current
        /// Accepted, but not current: send the current one with the response.
        case stale
        /// Unknown, forged, malformed or too old: answer `use_dpop_nonce`.
        case invalid
    }

    /// The length of a window, in seconds.
    public let lifetime: TimeInterval
    private let secret: SymmetricKey

    /// Creates a nonce source.
    ///
    /// - Parameters:
    ///   - secret: the HMAC key. A random one by default (one process); give every
    ///     replica the same secret (at least 32 random bytes) so they accept each other's
    ///     nonces.
    ///   - lifetime: the length of a window in seconds (300 by default); a nonce lives for
    ///     one to two windows.
    public init(secret: SymmetricKey = SymmetricKey(size: .bits256), lifetime: TimeInterval = 300) {
        self.secret = secret
        self.lifetime = max(1, lifetime)
    }

    private func window(at now: Date) -> Int64 {
        Int64((now.timeIntervalSince1970 / lifetime).rounded(.down))
    }

    /// The nonce to hand out at `now`.
    public func current(now: Date = Date()) -> String {
        nonce(for: window(at: now))
    }

    private func nonce(for window: Int64) -> String {
        var bytes = withUnsafeBytes(of: window.bigEndian) { Array($0) }
        let mac = HMAC<SHA256>.authenticationCode(for: bytes, using: secret)
        bytes.append(contentsOf: Array(mac).prefix(16))
        return Base64URL.encode(bytes)
    }

    /// How `nonce` stands at `now`.
    public func validity(of nonce: String, now: Date = Date()) -> Validity {
        guard nonce.utf8.count == 32, let bytes = Base64URL.decode(nonce), bytes.count == 24 else { return .invalid }
        let window = bytes.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        guard constantTimeEquals(self.nonce(for: window), nonce) else { return .invalid }
        let current = self.window(at: now)
        switch current - window {
        case 0: return .current
        case 1, -1: return .stale
        default: return .invalid
        }
    }
}
