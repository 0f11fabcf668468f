import Foundation
import OAuth2Internals

/// How ID tokens are validated, beyond what OIDC Core fixes.
public struct IDTokenValidationOptions: Sendable, Hashable {
    /// The algorithms an ID token may be signed with. `nil` takes the provider's
    /// `id_token_signing_alg_values_supported` (its asymmetric members), else `RS256`.
    /// HMAC algorithms (keyed by the client secret) are accepted only when listed here;
    /// `none` never is.
    public var allowedAlgorithms: [JWSAlgorithm]?
    /// The clock tolerance for `exp`, `iat` and `auth_time`, in seconds.
    public var leeway: TimeInterval
    /// Audiences besides the client that an ID token may also name. Any other extra
    /// audience is refused.
    public var trustedAudiences: Set<String>
    /// Require `auth_time` in every ID token (the `require_auth_time` registration
    /// parameter); it is always required when `max_age` was asked for.
    public var requireAuthTime: Bool
    /// How long the provider's JWK set is cached, and how often it may be refetched.
    public var keySetPolicy: JWKSCache.Policy

    /// Creates options: the provider's algorithms, 60 s of leeway, no extra audience.
    public init(
        allowedAlgorithms: [JWSAlgorithm]? = nil,
        leeway: TimeInterval = 60,
        trustedAudiences: Set<String> = [],
        requireAuthTime: Bool = false,
        keySetPolicy: JWKSCache.Policy = JWKSCache.Policy()
    ) {
        self.allowedAlgorithms = allowedAlgorithms
        self.leeway = leeway
        self.trustedAudiences = trustedAudiences
        self.requireAuthTime = requireAuthTime
        self.keySetPolicy = keySetPolicy
    }
}

/// The rules of OIDC Core §3.1.3.7 and RFC 8725 for one client of one issuer.
///
/// Checks, in order: the algorithm is allowed (never `none`; HMAC only when configured, and
/// keyed by the client secret, never by a public key); the signature verifies with a key of
/// the JWK set (the `kid`'s key, or each key that fits when there is no `kid`); then `iss`,
/// `aud` (and `azp` with several audiences; an untrusted extra audience is refused), `exp`,
/// `iat`, `sub`, `nonce`, `auth_time`, `at_hash`, `c_hash`, and on refresh the same `iss`
/// and `sub` as the first ID token (OIDC Core §12.2).
///
/// It is a pure value: fetching and refreshing the JWK set is ``OAuth2Client``'s job.
public struct IDTokenValidator: Sendable {
    /// The issuer every ID token must name exactly.
    public let issuer: String
    /// The client id every ID token must be addressed to.
    public let clientID: String
    /// The allowed signature algorithms.
    public let allowedAlgorithms: [JWSAlgorithm]
    /// Leeway, trusted audiences, `auth_time`.
    public let options: IDTokenValidationOptions
    private let clientSecret: String?

    /// What a particular ID token must match.
    public struct Expectations: Sendable {
        /// The nonce sent in the authorization request; required in the ID token when set.
        public var nonce: String?
        /// The `max_age` asked for; makes `auth_time` required and bounds it.
        public var maxAge: Int?
        /// The access token issued with the ID token, for `at_hash`.
        public var accessToken: String?
        /// The authorization code, for `c_hash`.
        public var authorizationCode: String?
        /// The claims of the session's first ID token, when this one comes from a refresh.
        public var previous: IDTokenClaims?
        /// Require `at_hash` (and that it matches ``accessToken``): an ID token issued with
        /// an access token from the authorization endpoint (the implicit `id_token token`
        /// response, OIDC Core §3.2.2.10) must have one.
        public var requiresAccessTokenHash: Bool
        /// The `auth_req_id` of a CIBA request (OpenID Connect CIBA Core §7.3): an ID token
        /// naming one (`urn:openid:params:jwt:claim:auth_req_id`) must name this one.
        public var authenticationRequestID: String?
        /// The refresh token issued with the ID token: an ID token carrying
        /// `urn:openid:params:jwt:claim:rt_hash` (CIBA Core §10.3.1) must hash it.
        public var refreshToken: String?
        /// The subject the ID token must name: the `sub` of the `id_token_hint` a CIBA request
        /// identified the user with (CIBA Core §7.1).
        public var subject: String?

        /// Creates expectations.
        public init(
            nonce: String? = nil, maxAge: Int? = nil, accessToken: String? = nil, authorizationCode: String? = nil,
            previous: IDTokenClaims? = nil, requiresAccessTokenHash: Bool = false
        ) {
            self.nonce = nonce
            self.maxAge = maxAge
            self.accessToken = accessToken
            self.authorizationCode = authorizationCode
            self.previous = previous
            self.requiresAccessTokenHash = requiresAccessTokenHash
        }
    }

    /// Creates a validator.
    ///
    /// - Parameters:
    ///   - issuer: the issuer every ID token must name exactly.
    ///   - clientID: the client id every ID token must be addressed to.
    ///   - allowedAlgorithms: the algorithms to accept; `none` is removed, and HMAC
    ///     algorithms stay only when a client secret is given.
    ///   - clientSecret: the HMAC key, for HS256/384/512.
    ///   - options: leeway, trusted audiences, `auth_time`.
    public init(issuer: String, clientID: String, allowedAlgorithms: [JWSAlgorithm], clientSecret: String? = nil, options: IDTokenValidationOptions = IDTokenValidationOptions()) {
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.options = options
        self.allowedAlgorithms = allowedAlgorithms.filter { $0.isSupported && (!$0.isHMAC || !(clientSecret ?? "").isEmpty) }
    }

    /// The algorithms a client accepts: the configured ones, else the provider's
    /// asymmetric ones, else RS256.
    public static func allowedAlgorithms(configured: [JWSAlgorithm]?, advertised: [String]?) -> [JWSAlgorithm] {
        if let configured { return configured }
        let advertised = (advertised ?? []).map(JWSAlgorithm.init(rawValue:)).filter { JWSAlgorithm.asymmetric.contains($0) }
        return advertised.isEmpty ? [.rs256] : advertised
    }

    /// Parses, verifies and validates a compact ID token.
    ///
    /// - Parameters:
    ///   - compact: the ID token in compact serialization.
    ///   - keys: the provider's JWK set (`nil` if it has none; then only an
    ///     HMAC-signed token can verify).
    ///   - expectations: what this token must match (nonce, previous ID token…).
    ///   - now: the time `exp`, `iat` and `auth_time` are checked against.
    /// - Throws: `JOSEError`; `JOSEError.Reason.keyNotFound` tells the caller a fresher
    ///   JWK set might help.
    public func validate(_ compact: String, keys: JSONWebKeySet?, expecting expectations: Expectations, now: Date = Date()) throws(JOSEError) -> IDToken {
        try validate(JWS(compact: compact), compact: compact, keys: keys, expecting: expectations, now: now)
    }

    /// Verifies and validates an already parsed ID token.
    ///
    /// - Throws: `JOSEError`.
    public func validate(_ jws: JWS, compact: String, keys: JSONWebKeySet?, expecting expectations: Expectations, now: Date = Date()) throws(JOSEError) -> IDToken {
        try verifySignature(jws, keys: keys)
        let claims = try IDTokenClaims(payload: jws.payloadBytes)
        try check(claims, algorithm: jws.algorithm, expecting: expectations, now: now)
        return IDToken(compact: compact, jws: jws, claims: claims)
    }

    /// Checks `alg` against the allow-list and the signature against the keys.
    ///
    /// - Throws: `JOSEError.Reason.algorithmNotAllowed`, `JOSEError.Reason.keyNotFound`
    ///   or `JOSEError.Reason.signatureInvalid`.
    public func verifySignature(_ jws: JWS, keys: JSONWebKeySet?) throws(JOSEError) {
        if let failure = signatureFailure(jws, keys: keys) { throw failure }
    }

    /// Why the signature check fails, or `nil` when it passes.
    func signatureFailure(_ jws: JWS, keys: JSONWebKeySet?) -> JOSEError? {
        let algorithm = jws.algorithm
        guard algorithm != .none, allowedAlgorithms.contains(algorithm) else {
            return JOSEError(.algorithmNotAllowed, "The token is signed with \(Redactor.sanitizeServerText(algorithm.rawValue, limit: 20)), which this client does not accept.")
        }
        if algorithm.isHMAC {
            guard let clientSecret, jws.isSigned(bySecret: clientSecret) else {
                return JOSEError(.signatureInvalid, "The token's \(algorithm) signature does not verify with the client secret.")
            }
            return nil
        }
        // The keys of `JSONWebKeySet.candidates(for:keyID:)`, tried in place (no array).
        var sawCandidate = false
        for key in keys?.keys ?? [] where JSONWebKeySet.isCandidate(key, for: algorithm, keyID: jws.keyID) {
            sawCandidate = true
            if jws.isSigned(by: key) { return nil }
        }
        guard sawCandidate else {
            return JOSEError(.keyNotFound, jws.keyID == nil ? "No key of the provider fits \(algorithm)." : "The provider has no \(algorithm) key with the token's kid.")
        }
        return JOSEError(.signatureInvalid, "The token's \(algorithm) signature does not verify.")
    }

    /// The claim checks of OIDC Core §3.1.3.7 (and §12.2 on refresh).
    ///
    /// - Throws: `JOSEError` naming the first failed check.
    public func check(_ claims: IDTokenClaims, algorithm: JWSAlgorithm, expecting expectations: Expectations, now: Date = Date()) throws(JOSEError) {
        let leeway = options.leeway
        guard !issuer.isEmpty else {
            throw JOSEError(.issuerMismatch, "The provider's issuer is unknown, so its ID tokens cannot be verified (configure the issuer; for Microsoft Entra ID, name the tenant by its ID).")
        }
        guard claims.issuer == issuer else { throw JOSEError(.issuerMismatch, "The ID token's iss is not the issuer.") }
        guard claims.audience.contains(clientID) else {
            throw JOSEError(.audienceMismatch, "The ID token is not addressed to this client.")
        }
        if claims.audience.count > 1 {
            guard let azp = claims.authorizedParty else {
                throw JOSEError(.authorizedPartyMismatch, "The ID token has several audiences but no azp.")
            }
            guard azp == clientID else { throw JOSEError(.authorizedPartyMismatch, "The ID token's azp is not this client.") }
            if claims.audience.contains(where: { $0 != clientID && !options.trustedAudiences.contains($0) }) {
                throw JOSEError(.untrustedAudience, "The ID token names an audience this client does not trust.")
            }
        } else if let azp = claims.authorizedParty, azp != clientID {
            throw JOSEError(.authorizedPartyMismatch, "The ID token's azp is not this client.")
        }
        guard claims.expiresAt.timeIntervalSince(now) > -leeway else { throw JOSEError(.expired, "The ID token has expired.") }
        guard claims.issuedAt.timeIntervalSince(now) <= leeway else {
            throw JOSEError(.issuedAtInvalid, "The ID token's iat is in the future.")
        }
        if let expected = expectations.nonce {
            guard let nonce = claims.nonce, constantTimeEquals(nonce, expected) else {
                throw JOSEError(.nonceMismatch, claims.nonce == nil ? "The ID token has no nonce." : "The ID token's nonce is not the one sent.")
            }
        }
        if let maxAge = expectations.maxAge {
            guard let authTime = claims.authTime else {
                throw JOSEError(.authTimeInvalid, "max_age was requested but the ID token has no auth_time.")
            }
            guard now.timeIntervalSince(authTime) <= TimeInterval(maxAge) + leeway else {
                throw JOSEError(.authTimeInvalid, "The authentication is older than max_age.")
            }
        } else if options.requireAuthTime, claims.authTime == nil {
            throw JOSEError(.authTimeInvalid, "The ID token has no auth_time.")
        }
        if expectations.requiresAccessTokenHash, claims.accessTokenHash == nil || expectations.accessToken == nil {
            throw JOSEError(.accessTokenHashMismatch, "The ID token has no at_hash, which an ID token issued with an access token at the authorization endpoint must have.")
        }
        if let hash = claims.accessTokenHash, let accessToken = expectations.accessToken {
            guard algorithm.halfHashMatches(hash, of: accessToken) == true else {
                throw JOSEError(.accessTokenHashMismatch, "The ID token's at_hash does not match the access token.")
            }
        }
        if let hash = claims.codeHash, let code = expectations.authorizationCode {
            guard algorithm.halfHashMatches(hash, of: code) == true else {
                throw JOSEError(.codeHashMismatch, "The ID token's c_hash does not match the authorization code.")
            }
        }
        try checkBackchannelClaims(claims, algorithm: algorithm, expecting: expectations)
        if let previous = expectations.previous {
            guard claims.issuer == previous.issuer else { throw JOSEError(.issuerMismatch, "The refreshed ID token names another issuer.") }
            guard claims.subject == previous.subject else { throw JOSEError(.subjectMismatch, "The refreshed ID token names another subject.") }
            if let nonce = claims.nonce, nonce != previous.nonce {
                throw JOSEError(.nonceMismatch, "The refreshed ID token's nonce differs from the first one's.")
            }
        }
    }
}

extension IDTokenValidator {
    /// The CIBA claim of the `auth_req_id` an ID token answers (CIBA Core §7.3, §10.3.1).
    public static let authenticationRequestIDClaim = "urn:openid:params:jwt:claim:auth_req_id"
    /// The CIBA claim of the refresh token's hash (CIBA Core §10.3.1), computed as `at_hash` is.
    public static let refreshTokenHashClaim = "urn:openid:params:jwt:claim:rt_hash"

    /// The rules CIBA adds (CIBA Core §7.1, §10.3.1): the `sub` of the `id_token_hint`, an
    /// `auth_req_id` claim equal to the request's, an `rt_hash` claim that hashes the refresh token.
    func checkBackchannelClaims(_ claims: IDTokenClaims, algorithm: JWSAlgorithm, expecting expectations: Expectations) throws(JOSEError) {
        if let subject = expectations.subject, claims.subject != subject {
            throw JOSEError(.subjectMismatch, "The ID token names another subject than the id_token_hint of the request.")
        }
        if let value = claims.claims[Self.authenticationRequestIDClaim] {
            guard let expected = expectations.authenticationRequestID, let named = value.stringValue,
                constantTimeEquals(named, expected)
            else {
                throw JOSEError(.invalidClaim, "The ID token's auth_req_id claim is not the one of the request.")
            }
        }
        if let value = claims.claims[Self.refreshTokenHashClaim] {
            guard let hash = value.stringValue, let refreshToken = expectations.refreshToken,
                algorithm.halfHashMatches(hash, of: refreshToken) == true
            else {
                throw JOSEError(.invalidClaim, "The ID token's rt_hash claim does not match the refresh token.")
            }
        }
    }
}
