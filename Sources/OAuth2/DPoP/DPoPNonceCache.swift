import Foundation
import HTTPTypes

/// The latest DPoP nonce (RFC 9449 §8, §9) each server gave, by origin: shared by the copies
/// of an ``OAuth2Client`` (and the ``TokenSession``s using them), so that a nonce learnt by one
/// request goes into the next proof for the same server.
///
/// A nonce is remembered from any response that carries a `DPoP-Nonce` header — an error
/// asking for it (`use_dpop_nonce`) or a success announcing the next one.
package actor DPoPNonceCache {
    private var nonces: [String: String] = [:]
    private var order: [String] = []

    /// The most servers remembered; the oldest is forgotten first.
    public static let capacity = 64
    /// The longest nonce accepted.
    public static let maximumLength = 1024

    /// Creates an empty cache.
    public init() {}

    /// The latest nonce of the server at `url`'s origin, if it gave one.
    public func nonce(for url: URL) -> String? {
        nonces[Self.origin(of: url)]
    }

    /// Remembers `nonce` for the server at `url`'s origin. A value that is not a valid
    /// nonce (RFC 9449 §8.1: 1 to 1024 printable ASCII characters, without `"` and `\`) is
    /// ignored.
    public func remember(_ nonce: String, for url: URL) {
        guard Self.isValid(nonce) else { return }
        let origin = Self.origin(of: url)
        if nonces.updateValue(nonce, forKey: origin) == nil {
            order.append(origin)
            if order.count > Self.capacity { nonces[order.removeFirst()] = nil }
        }
    }

    /// Remembers the `DPoP-Nonce` of `response` to a request for `url`, and returns it.
    @discardableResult
    func remember(from response: HTTPResponse, for url: URL) -> String? {
        guard let nonce = response.headerFields[.dpopNonce]?.trimmingCharacters(in: .whitespaces), Self.isValid(nonce) else {
            return nil
        }
        remember(nonce, for: url)
        return nonce
    }

    /// `scheme://host:port`, in lower case with the default port made explicit.
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : 0)
        return "\(scheme)://\((url.host ?? "").lowercased()):\(port)"
    }

    /// NQCHAR = %x21 / %x23-5B / %x5D-7E (RFC 6749 Appendix A).
    static func isValid(_ nonce: String) -> Bool {
        guard !nonce.isEmpty, nonce.utf8.count <= maximumLength else { return false }
        return nonce.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }
}

/// How a client uses DPoP (RFC 9449): the key its tokens are bound to, and how strict it is.
public struct DPoPOptions: Sendable {
    /// The key every proof is signed with; the session's tokens are bound to it.
    public var key: DPoPKey
    /// Accept a `Bearer` token in answer to a token request made with a proof. Off by
    /// default: a server that ignores the proof gives a token that anyone holding it can use,
    /// and the request fails with ``OAuth2Error/Code/unboundToken``.
    public var allowsBearerTokens: Bool
    /// Send `dpop_jkt` (the key's thumbprint) with authorization requests, binding the
    /// authorization code to the key (RFC 9449 §10). On by default.
    public var bindsAuthorizationCode: Bool

    /// Creates options for `key`.
    public init(key: DPoPKey, allowsBearerTokens: Bool = false, bindsAuthorizationCode: Bool = true) {
        self.key = key
        self.allowsBearerTokens = allowsBearerTokens
        self.bindsAuthorizationCode = bindsAuthorizationCode
    }
}
