import Foundation
import HTTPTypes

/// The latest DPoP nonce (RFC 9449 §8, §9) each server gave, by origin, in the client's
/// ``DPoPNonceStore``: shared by the copies of an ``OAuth2Client`` (and the ``TokenSession``s
/// using them) — and by a fleet's replicas, with a shared store — so that a nonce learnt by
/// one request goes into the next proof for the same server.
///
/// A nonce is remembered from any response that carries a `DPoP-Nonce` header — an error
/// asking for it (`use_dpop_nonce`) or a success announcing the next one. What reaches the
/// store is checked first: an invalid nonce is ignored.
package struct DPoPNonceCache: Sendable {
    /// Where the nonces are kept.
    package let store: any DPoPNonceStore

    /// The longest nonce accepted.
    package static let maximumLength = 1024

    /// A cache over `store` (by default, one of its own in memory).
    package init(store: any DPoPNonceStore = MemoryDPoPNonceStore()) {
        self.store = store
    }

    /// The latest nonce of the server at `url`'s origin, if it gave one.
    package func nonce(for url: URL) async -> String? {
        let nonce = await store.nonce(forOrigin: Self.origin(of: url))
        return nonce.flatMap { Self.isValid($0) ? $0 : nil }
    }

    /// Remembers `nonce` for the server at `url`'s origin. A value that is not a valid
    /// nonce (RFC 9449 §8.1: 1 to 1024 printable ASCII characters, without `"` and `\`) is
    /// ignored.
    package func remember(_ nonce: String, for url: URL) async {
        guard Self.isValid(nonce) else { return }
        await store.remember(nonce, forOrigin: Self.origin(of: url))
    }

    /// Remembers the `DPoP-Nonce` of `response` to a request for `url`, and returns it.
    @discardableResult
    func remember(from response: HTTPResponse, for url: URL) async -> String? {
        guard let nonce = response.headerFields[.dpopNonce]?.trimmingCharacters(in: .whitespaces), Self.isValid(nonce) else {
            return nil
        }
        await remember(nonce, for: url)
        return nonce
    }

    /// `scheme://host:port`, in lower case with the default port made explicit.
    package static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : 0)
        return "\(scheme)://\((url.host ?? "").lowercased()):\(port)"
    }

    /// NQCHAR = %x21 / %x23-5B / %x5D-7E (RFC 6749 Appendix A).
    package static func isValid(_ nonce: String) -> Bool {
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
    /// Where the client keeps the servers' DPoP nonces: `nil` (the default) for a
    /// ``MemoryDPoPNonceStore`` of the client's own; a store shared by a fleet's replicas
    /// (`PostgresDPoPNonceStore`, OAuth2Postgres) so that a nonce one replica learnt spares the
    /// others their refused first request.
    public var nonceStore: (any DPoPNonceStore)?

    /// Creates options for `key`.
    ///
    /// - Parameters:
    ///   - key: the key every proof is signed with.
    ///   - allowsBearerTokens: accept a `Bearer` token in answer to a request with a proof.
    ///   - bindsAuthorizationCode: send `dpop_jkt` with authorization requests.
    ///   - nonceStore: where the servers' nonces are kept; `nil` for the client's own memory.
    public init(
        key: DPoPKey, allowsBearerTokens: Bool = false, bindsAuthorizationCode: Bool = true, nonceStore: (any DPoPNonceStore)? = nil
    ) {
        self.key = key
        self.allowsBearerTokens = allowsBearerTokens
        self.bindsAuthorizationCode = bindsAuthorizationCode
        self.nonceStore = nonceStore
    }
}
