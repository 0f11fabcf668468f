import Crypto
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// Checks DPoP proofs (RFC 9449 §4.3, §7) at a resource server.
///
/// A proof is accepted when: it is one compact JWS of at most ``maximumProofSize`` bytes;
/// its `typ` is `dpop+jwt`; its `alg` is in ``allowedAlgorithms`` (asymmetric only); its
/// `jwk` header is a public key (no private member, not symmetric) that verifies the
/// signature; `htm` is the request's method; `htu` equals, after normalisation, the URL made
/// of ``publicBaseURL`` and the request's path — **never** the request's `Host` header or
/// `:authority`, which the client controls; `iat` is no older than ``maximumAge`` and no
/// further ahead than ``leeway``; `ath` is the hash of the access token; with
/// ``nonces``, `nonce` is a nonce the server issued and has not expired; the access
/// token's `cnf.jkt` is the key's thumbprint; and its `jti` has not been seen with that key
/// (``replayStore``).
public struct DPoPProofVerifier: Sendable {
    /// The URL clients use to reach this API (scheme, host, port and any path prefix a
    /// reverse proxy strips), e.g. `https://api.example.com`. `htu` is checked against it.
    public let publicBaseURL: URL
    /// The proof algorithms accepted (`none` and HMAC are removed). Sent as `algs` in
    /// DPoP challenges.
    public let allowedAlgorithms: [JWSAlgorithm]
    /// The oldest `iat` accepted, in seconds before now (60 by default).
    public let maximumAge: TimeInterval
    /// How far in the future `iat` may be, in seconds (5 by default).
    public let leeway: TimeInterval
    /// Server nonces, when the API requires them (`nil`: no nonce).
    public let nonces: DPoPServerNonces?
    /// Where the `jti`s seen are recorded.
    public let replayStore: any ReplayStore
    /// The time `iat` and nonces are checked against (tests inject one).
    package var now: @Sendable () -> Date = { Date() }

    /// The largest proof accepted, in bytes.
    public static let maximumProofSize = 8 * 1024
    /// The longest `jti` accepted.
    public static let maximumIDLength = 256
    /// The JWK members that only a private or symmetric key has.
    static let privateMembers: Set<String> = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]

    /// Creates a verifier.
    ///
    /// - Parameters:
    ///   - publicBaseURL: the API's public URL (scheme, host, port, path prefix).
    ///   - replayStore: where `jti`s are recorded (this process's memory by default; share
    ///     one between replicas).
    ///   - nonces: server nonces to require, if any.
    ///   - allowedAlgorithms: the proof algorithms to accept.
    ///   - maximumAge: the oldest `iat`, in seconds.
    ///   - leeway: how far ahead `iat` may be, in seconds.
    public init(
        publicBaseURL: URL, replayStore: any ReplayStore = MemoryReplayStore(), nonces: DPoPServerNonces? = nil,
        allowedAlgorithms: [JWSAlgorithm] = DPoPKey.supportedAlgorithms, maximumAge: TimeInterval = 60, leeway: TimeInterval = 5
    ) {
        self.publicBaseURL = publicBaseURL
        self.replayStore = replayStore
        self.nonces = nonces
        self.allowedAlgorithms = allowedAlgorithms.filter { JWSAlgorithm.asymmetric.contains($0) }
        self.maximumAge = maximumAge
        self.leeway = leeway
    }

    /// A proof that passed every check.
    public struct VerifiedProof: Sendable, Hashable {
        /// The RFC 7638 thumbprint of the proof's key.
        public let thumbprint: String
        /// `iat`.
        public let issuedAt: Date
        /// The nonce to send back in a `DPoP-Nonce` header with the response: the current
        /// one, when the proof used an older one that is still accepted.
        public let nextNonce: String?
    }

    /// The normalised `htu` a proof for a request with this path must have: the public
    /// base URL's origin and path prefix, then the path without query and fragment.
    ///
    /// - Returns: `nil` when `path` is not an origin-form path (`/…`).
    public func targetURI(forPath path: String) -> String? {
        var path = Substring(path)
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        guard path.hasPrefix("/") else { return nil }
        var base = publicBaseURL.absoluteString
        if let end = base.firstIndex(where: { $0 == "?" || $0 == "#" }) { base = String(base[..<end]) }
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base + path) else { return nil }
        return DPoPProof.targetURI(for: url)
    }

    /// Checks a proof sent with a request to this API.
    ///
    /// - Parameters:
    ///   - proof: the `DPoP` header's value.
    ///   - method: the request's method.
    ///   - path: the request's path (with or without query).
    ///   - accessToken: the access token sent with the request (for `ath`).
    ///   - boundThumbprint: the token's `cnf.jkt`.
    /// - Throws: ``AccessTokenError``: ``AccessTokenError/Code/invalidDPoPProof`` for a
    ///   failed check, ``AccessTokenError/Code/useDPoPNonce`` (with the nonce to use) when
    ///   the proof lacks a valid server nonce, ``AccessTokenError/Code/invalidToken`` when
    ///   the token is bound to another key, ``AccessTokenError/Code/temporarilyUnavailable``
    ///   when the replay store fails.
    public func verify(
        _ proof: String, method: HTTPRequest.Method, path: String, accessToken: String, boundThumbprint: String
    ) async throws(AccessTokenError) -> VerifiedProof {
        let checked = try check(proof, method: method, path: path, accessToken: accessToken)
        guard constantTimeEquals(checked.thumbprint, boundThumbprint) else {
            throw .invalidToken(.confirmationMismatch, "The access token is bound to another key than the DPoP proof's.")
        }
        try await recordUse(checked)
        return VerifiedProof(thumbprint: checked.thumbprint, issuedAt: checked.issuedAt, nextNonce: checked.nextNonce)
    }

    /// What ``check(_:method:path:accessToken:)`` found.
    package struct CheckedProof {
        package var thumbprint: String
        package var issuedAt: Date
        package var id: String
        package var nextNonce: String?
    }

    /// Every check but the key binding and the replay.
    package func check(_ proof: String, method: HTTPRequest.Method, path: String, accessToken: String) throws(AccessTokenError) -> CheckedProof {
        guard proof.utf8.count <= Self.maximumProofSize else { throw .invalidProof(.init(.malformed), "The DPoP proof is too large.") }
        let jws: JWS
        do { jws = try JWS(compact: proof) } catch { throw .invalidProof(error) }
        guard jws.type?.lowercased() == DPoPProof.type else { throw .invalidProof(.typeMismatch, "The DPoP proof's typ is not dpop+jwt.") }
        let algorithm = jws.algorithm
        guard algorithm != .none, !algorithm.isHMAC, allowedAlgorithms.contains(algorithm) else {
            throw .invalidProof(.init(.algorithmNotAllowed), "The DPoP proof's algorithm is not accepted.")
        }
        guard let jwk = jws.header["jwk"]?.objectValue else { throw .invalidProof(.invalidProofKey, "The DPoP proof has no jwk header.") }
        guard !jwk.keys.contains(where: Self.privateMembers.contains), jwk["kty"]?.stringValue != "oct" else {
            throw .invalidProof(.invalidProofKey, "The DPoP proof's jwk is not a public key.")
        }
        let key: JSONWebKey
        do { key = try JSONWebKey(jwk) } catch { throw .invalidProof(.invalidProofKey, "The DPoP proof's jwk is not a usable public key.") }
        guard key.canVerify(algorithm) else { throw .invalidProof(.invalidProofKey, "The DPoP proof's jwk does not fit its algorithm.") }
        guard jws.isSigned(by: key) else { throw .invalidProof(.init(.signatureInvalid), "The DPoP proof's signature does not verify.") }

        let claims: [String: JSONValue]
        do { claims = try jws.claims() } catch { throw .invalidProof(error) }
        func string(_ name: String) throws(AccessTokenError) -> String {
            guard let value = claims[name] else { throw .invalidProof(.missingClaim, "The DPoP proof has no \(name).") }
            guard let string = value.stringValue, !string.isEmpty else { throw .invalidProof(.init(.invalidClaim), "The DPoP proof's \(name) is not a string.") }
            return string
        }
        let id = try string("jti")
        guard id.utf8.count <= Self.maximumIDLength else { throw .invalidProof(.init(.invalidClaim), "The DPoP proof's jti is too long.") }
        guard try string("htm") == method.rawValue else {
            throw .invalidProof(.methodMismatch, "The DPoP proof is for another HTTP method (htm).")
        }
        let htu = try string("htu")
        guard let expected = targetURI(forPath: path) else { throw AccessTokenError(.invalidRequest, reason: .urlMismatch, "The request's path is not an absolute path.") }
        guard let url = URL(string: htu), DPoPProof.targetURI(for: url) == expected else {
            throw .invalidProof(.urlMismatch, "The DPoP proof is for another URL (htu).")
        }
        guard let iat = claims["iat"] else { throw .invalidProof(.missingClaim, "The DPoP proof has no iat.") }
        guard let issuedAt = iat.numericDate else { throw .invalidProof(.init(.invalidClaim), "The DPoP proof's iat is not a number.") }
        let now = now()
        let age = now.timeIntervalSince(issuedAt)
        guard age <= maximumAge + leeway else { throw .invalidProof(.init(.issuedAtInvalid), "The DPoP proof is too old (iat).") }
        guard age >= -leeway else { throw .invalidProof(.init(.issuedAtInvalid), "The DPoP proof's iat is in the future.") }
        let ath = try string("ath")
        guard constantTimeEquals(ath, DPoPProof.accessTokenHash(accessToken)) else {
            throw .invalidProof(.accessTokenHashMismatch, "The DPoP proof is for another access token (ath).")
        }
        var nextNonce: String?
        if let nonces {
            let current = nonces.current(now: now)
            guard let nonce = claims["nonce"]?.stringValue else {
                throw AccessTokenError(.useDPoPNonce, reason: .nonceRequired, "The DPoP proof must carry the server's nonce.", dpopNonce: current)
            }
            switch nonces.validity(of: nonce, now: now) {
            case .current: break
            case .stale: nextNonce = current
            case .invalid:
                throw AccessTokenError(.useDPoPNonce, reason: .nonceRequired, "The DPoP proof's nonce has expired or is unknown.", dpopNonce: current)
            }
        }
        return CheckedProof(thumbprint: key.thumbprint, issuedAt: issuedAt, id: id, nextNonce: nextNonce)
    }

    /// Records the proof's `jti` for its key, or refuses a replay.
    func recordUse(_ proof: CheckedProof) async throws(AccessTokenError) {
        let key = "dpop:" + proof.thumbprint + ":" + Base64URL.encode(Array(SHA256.hash(data: Data(proof.id.utf8))))
        let now = now()
        let expiresAt = max(proof.issuedAt, now).addingTimeInterval(maximumAge + 2 * leeway)
        let inserted: Bool
        do { inserted = try await replayStore.insertIfAbsent(key, expiresAt: expiresAt, now: now) } catch {
            throw AccessTokenError(.temporarilyUnavailable, reason: .unavailable, "The DPoP proof cannot be checked for replay now.")
        }
        guard inserted else { throw .invalidProof(.replayed, "The DPoP proof was used before (jti).") }
    }
}
