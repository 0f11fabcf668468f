import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE
import OAuth2Web

/// The one DPoP test of a web-framework adapter: an API route behind the adapter's
/// resource-server middleware, with a ``resourceServer(publicBaseURL:)`` that accepts
/// DPoP-bound JWT access tokens and requires server nonces, is sent real requests — proofs
/// made by the client side of this library (`DPoPKey`) — and must pass what RFC 9449 asks of
/// a resource server, through the framework's request and response types:
///
/// ```swift
/// let failures = try await DPoPAPIConformance.run(url: route, send: { url, fields in … })
/// #expect(failures.isEmpty, "\(failures)")
/// ```
///
/// It reports failures as strings, like `StoreConformance`, so that each adapter's test
/// states its own expectation.
///
/// Time stands still at ``now``: tokens and proofs are issued then, and the verifiers of
/// ``resourceServer(publicBaseURL:)`` check them (and make nonces) at that instant, so the
/// outcome depends neither on the wall clock nor on how fast the machine runs.
public enum DPoPAPIConformance {
    /// What the route answered: its status, header fields and body.
    public struct Answer: Sendable {
        public var status: Int
        public var headerFields: HTTPFields
        public var body: String

        public init(status: Int, headerFields: HTTPFields, body: String) {
            self.status = status
            self.headerFields = headerFields
            self.body = body
        }
    }

    static let issuer = "https://id.example.com"
    static let audience = "https://api.example.com"
    static let signingKey = Result { try JWSSigningKey.generate(.es256, keyID: "dpop-api-1") }
    /// The suite's only instant: when its tokens and proofs are made and checked.
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The resource server of the route under test: DPoP-bound (and bearer) JWT access tokens
    /// of this suite's issuer, DPoP proofs for `publicBaseURL` with server nonces; both
    /// verifiers read the time from ``now``.
    public static func resourceServer(publicBaseURL: URL) throws -> ResourceServer {
        let key = try signingKey.get()
        guard let publicKey = key.publicKey else { throw JOSEError(.invalidKey, "The signing key has no public key.") }
        var verifier = AccessTokenVerifier(issuers: [
            TrustedIssuer(issuer: issuer, audiences: [audience], keys: .fixed(JSONWebKeySet(keys: [publicKey])))
        ])
        verifier.now = { now }
        var dpop = DPoPProofVerifier(publicBaseURL: publicBaseURL, nonces: DPoPServerNonces())
        dpop.now = { now }
        return ResourceServer(accessTokens: verifier, dpop: dpop)
    }

    /// An RFC 9068 access token of the suite's issuer for user-1, bound to `key` (`cnf.jkt`),
    /// issued at ``now`` for ten minutes.
    static func token(boundTo key: DPoPKey?) throws -> String {
        let issuedAt = Int64(now.timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": "user-1", "client_id": "client-1", "scope": "orders:read",
            "iat": .integer(issuedAt), "exp": .integer(issuedAt + 600), "jti": .string(UUID().uuidString),
        ]
        if let key { claims["cnf"] = .object(["jkt": .string(key.thumbprint)]) }
        return try signingKey.get().sign(claims: claims, header: ["typ": "at+jwt"])
    }

    /// Runs the checks against the route at `url` (a GET route that answers 200 with the
    /// token's subject in its body); `send` sends a GET with the given header fields.
    /// Returns what failed, one line each.
    public static func run(url: URL, send: (URL, HTTPFields) async throws -> Answer) async throws -> [String] {
        var failures: [String] = []
        func check(_ condition: Bool, _ what: String) { if !condition { failures.append(what) } }
        let key = try DPoPKey.generate()
        let token = try token(boundTo: key)

        // No nonce yet: the challenge names the DPoP scheme and hands one out.
        let first = try await send(url, try key.headers(method: .get, url: url, accessToken: token, issuedAt: now))
        let challenge = first.headerFields[.wwwAuthenticate] ?? ""
        check(first.status == 401, "a proof without the server's nonce gets 401 (got \(first.status))")
        check(challenge.contains("DPoP") && challenge.contains(#"error="use_dpop_nonce""#), "its challenge is DPoP use_dpop_nonce: \(challenge)")
        guard let nonce = first.headerFields[.dpopNonce] else { return failures + ["the 401 carries no DPoP-Nonce"] }

        // With the nonce: the route runs and sees the token.
        let proof = try key.proof(method: .get, url: url, accessToken: token, nonce: nonce, issuedAt: now)
        let accepted = try await send(url, [.authorization: "DPoP " + token, .dpop: proof])
        check(accepted.status == 200, "a good proof with the nonce is accepted (got \(accepted.status): \(accepted.body))")
        check(accepted.body.contains("user-1"), "the route sees the token's subject")

        // The same proof again: a replay.
        let replay = try await send(url, [.authorization: "DPoP " + token, .dpop: proof])
        check(replay.status == 401, "a replayed proof is refused (got \(replay.status))")
        check(replay.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_dpop_proof""#) == true, "as invalid_dpop_proof")

        // A proof for another URL, or another method.
        var elsewhere = URLComponents(url: url, resolvingAgainstBaseURL: false)
        elsewhere?.path += "-elsewhere"
        if let elsewhere = elsewhere?.url {
            let other = try await send(url, [.authorization: "DPoP " + token, .dpop: try key.proof(method: .get, url: elsewhere, accessToken: token, nonce: nonce, issuedAt: now)])
            check(other.status == 401, "a proof for another URL is refused (got \(other.status))")
        }
        let post = try await send(url, [.authorization: "DPoP " + token, .dpop: try key.proof(method: .post, url: url, accessToken: token, nonce: nonce, issuedAt: now)])
        check(post.status == 401, "a proof for another method is refused (got \(post.status))")

        // The bound token as a bearer token; a proof signed by another key.
        let bearer = try await send(url, [.authorization: "Bearer " + token])
        check(bearer.status == 401, "a DPoP-bound token sent as a bearer token is refused (got \(bearer.status))")
        let thief = try DPoPKey.generate()
        let stolen = try await send(url, [.authorization: "DPoP " + token, .dpop: try thief.proof(method: .get, url: url, accessToken: token, nonce: nonce, issuedAt: now)])
        check(stolen.status == 401, "a proof by another key than the token's is refused (got \(stolen.status))")
        check(stolen.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true, "as invalid_token")

        // A plain bearer token still passes (the API accepts both schemes).
        let plain = try await send(url, [.authorization: "Bearer " + (try Self.token(boundTo: nil))])
        check(plain.status == 200, "an unbound bearer token is accepted (got \(plain.status))")

        for answer in [first, accepted, replay, bearer, stolen] {
            check(!answer.body.contains(token) && !(answer.headerFields[.wwwAuthenticate] ?? "").contains(token), "no answer repeats the token")
        }
        return failures
    }
}
