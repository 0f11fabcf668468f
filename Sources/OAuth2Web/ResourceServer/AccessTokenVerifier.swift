import Foundation
import Logging
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// Verifies JWT access tokens (RFC 9068) for an API that trusts one or more authorization
/// servers.
///
/// A token is accepted when, in order:
/// 1. it is a compact JWS (strictly parsed) whose `typ` is `at+jwt` or `application/at+jwt`;
/// 2. its `iss` is one of the ``issuers`` (exactly), which picks the keys and rules;
/// 3. its `alg` is in that issuer's allow-list (never `none`, never HMAC);
/// 4. its signature verifies with a key of the issuer's set (the `kid`'s key, or each key
///    that fits when there is no `kid`);
/// 5. `aud` contains one of the issuer's audiences (or, behind a ``ResourceServer`` with a
///    ``ProtectedResource``, its resource identifier); `exp` has not passed and `nbf` has,
///    both with the issuer's leeway; `iat` is present and not in the future; `sub`,
///    `client_id` and `jti` are present (RFC 9068 §2.2); `scope` and `cnf` have the right
///    types;
/// 6. it grants the scopes the call requires.
///
/// Keys come from each issuer's ``TrustedIssuer/KeySource``. With a JWKS URL: a set that has
/// expired keeps verifying while a fresh one is fetched in the background (so an outage of
/// the JWKS endpoint does not stop tokens signed with known keys), until
/// `JWKSCache.Policy.maximumStaleness` (a day by default) after its last successful fetch —
/// then tokens are refused as unavailable (503) until a fetch succeeds, so that a key the
/// issuer removed does not verify for as long as the endpoint is blocked; a token naming an
/// unknown `kid` makes one refetch (rate-limited by the cache) that waits at most
/// ``keyFetchDeadline`` — then the token is refused, even if the endpoint hangs.
///
/// Tokens never reach a log line or an error message.
public struct AccessTokenVerifier: Sendable {
    /// The issuers whose tokens are accepted.
    public let issuers: [TrustedIssuer]
    /// How long a request waits for the JWK set to be fetched before giving up.
    public let keyFetchDeadline: Duration
    private let byIssuer: [String: TrustedIssuer]
    private let logger: Logger
    /// The time `exp`, `nbf` and `iat` are checked against (tests inject one).
    package var now: @Sendable () -> Date = { Date() }
    /// The clock deadlines are measured on (tests inject one).
    package var clock: PipelineClock = .continuous
    /// Checks signatures with the issuers' keys (and keeps the background refreshes' times).
    private let signatureCheck: IssuerSignatureCheck

    /// Creates a verifier.
    ///
    /// - Parameters:
    ///   - issuers: the trusted issuers; a later entry with the same issuer replaces an
    ///     earlier one.
    ///   - keyFetchDeadline: how long a request waits for a JWK set (2 s by default).
    ///   - logger: where refusals are logged, at debug level (reasons only, never tokens).
    public init(issuers: [TrustedIssuer], keyFetchDeadline: Duration = .seconds(2), logger: Logger = Logger(label: "swift-oauth2.resource-server")) {
        self.issuers = issuers
        self.keyFetchDeadline = keyFetchDeadline
        self.logger = logger
        signatureCheck = IssuerSignatureCheck(keyFetchDeadline: keyFetchDeadline, logger: logger)
        byIssuer = Dictionary(issuers.map { ($0.issuer, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Whether `type` is a JWT access token's `typ` (RFC 9068 §2.1): `at+jwt` or
    /// `application/at+jwt`, in any case (compared in place, without a lower-cased copy: this
    /// runs for every request).
    static func isAccessTokenType(_ type: String) -> Bool {
        var type = type
        return type.withUTF8 { bytes in
            func matches(_ expected: StaticString) -> Bool {
                guard bytes.count == expected.utf8CodeUnitCount else { return false }
                let expected = UnsafeBufferPointer(start: expected.utf8Start, count: expected.utf8CodeUnitCount)
                // ASCII letters only fold: OR-ing 0x20 maps 'A'–'Z' onto 'a'–'z' and leaves '+' and '/' alone.
                return zip(bytes, expected).allSatisfy { actual, wanted in
                    wanted >= UInt8(ascii: "a") && wanted <= UInt8(ascii: "z") ? actual | 0x20 == wanted : actual == wanted
                }
            }
            return matches("at+jwt") || matches("application/at+jwt")
        }
    }

    /// The claims the checks read, taken from the payload in one pass that checks the whole
    /// claims set as strictly as `JWS.claims()` does (the same errors); the whole set is
    /// decoded only when ``VerifiedAccessToken/claims`` is first read.
    package struct Claims: ~Copyable {
        static let names: JSONMemberNames = ["iss", "aud", "exp", "nbf", "iat", "sub", "client_id", "jti", "scope", "cnf"]
        var iss, aud, exp, nbf, iat, sub, clientID, jti, scope, cnf: JSONValue?
        /// The whole set (both initialisers set it).
        private(set) var raw: LazyJSONObject?

        init() {}

        /// Reads a JWS payload.
        init(payload: [UInt8]) throws(JOSEError) {
            let parsed = try JOSEJSON.members(payload, named: Self.names, what: "claims set") { slot, value in self.set(slot, value) }
            raw = parsed.map { LazyJSONObject.make($0) } ?? LazyJSONObject.make(checkedBytes: payload)
        }

        /// Reads a claims set already decoded.
        init(_ object: [String: JSONValue]) {
            for (slot, name) in Self.names.names.enumerated() {
                if let value = object[name.description] { set(slot, value) }
            }
            raw = LazyJSONObject.make(object)
        }

        mutating func set(_ slot: Int, _ value: consuming JSONValue) {
            switch slot {
            case 0: iss = value
            case 1: aud = value
            case 2: exp = value
            case 3: nbf = value
            case 4: iat = value
            case 5: sub = value
            case 6: clientID = value
            case 7: jti = value
            case 8: scope = value
            default: cnf = value
            }
        }
    }

    /// Verifies a JWT access token and checks that it grants `requiredScopes`.
    ///
    /// - Throws: ``AccessTokenError``: ``AccessTokenError/Code/invalidToken`` for any failed
    ///   check (the reason names it), ``AccessTokenError/Code/insufficientScope`` for a
    ///   missing scope, ``AccessTokenError/Code/temporarilyUnavailable`` when the issuer's
    ///   JWK set cannot be fetched now and none was fetched within its staleness cap.
    public func verify(_ token: String, requiredScopes: [String] = []) async throws(AccessTokenError) -> VerifiedAccessToken {
        try await verify(token, requiredScopes: requiredScopes, resource: nil)
    }

    /// Verifies a JWT access token for `resource` too: its `aud` may name the resource's
    /// identifier instead of one of the issuer's audiences.
    package func verify(_ token: String, requiredScopes: [String] = [], resource: ProtectedResource?) async throws(AccessTokenError) -> VerifiedAccessToken {
        do {
            let verified = try await verifyToken(token, resource: resource)
            try verified.requireScopes(requiredScopes)
            return verified
        } catch {
            logger.debug("Access token refused", metadata: ["reason": "\(error.reason)", "code": "\(error.code)"])
            throw error
        }
    }

    private func verifyToken(_ token: String, resource: ProtectedResource?) async throws(AccessTokenError) -> VerifiedAccessToken {
        let jws: JWS
        do { jws = try JWS(compact: token) } catch { throw .invalidToken(error) }
        guard let type = jws.type, Self.isAccessTokenType(type) else {
            throw .invalidToken(.typeMismatch, "The token's typ is not at+jwt (RFC 9068).")
        }
        let claims: Claims
        do { claims = try Claims(payload: jws.payloadBytes) } catch { throw .invalidToken(error) }
        guard let iss = claims.iss?.stringValue else { throw .invalidToken(.init(.issuerMismatch), "The token has no iss.") }
        guard let issuer = trustedIssuer(iss) else { throw .invalidToken(.init(.issuerMismatch), "The token's issuer is not trusted.") }
        let algorithm = jws.algorithm
        guard algorithm != .none, !algorithm.isHMAC, issuer.allowedAlgorithms.contains(algorithm) else {
            throw .invalidToken(.init(.algorithmNotAllowed), "The token's signature algorithm is not accepted.")
        }
        if case .fixed(let keys) = issuer.keys.storage {
            // Keys in hand: nothing to fetch, so no asynchronous call.
            if let failure = IssuerSignatureCheck.failure(jws, keys: keys) { throw Self.error(failure) }
        } else {
            try await verifySignature(jws, issuer: issuer)
        }
        return try Self.check(claims, issuer: issuer, resource: resource, now: now())
    }

    /// The trusted issuer named `iss` (the last entry of ``issuers`` with it). A few issuers
    /// are compared in turn (`String` equality, as the dictionary's): cheaper than hashing
    /// the name on every request.
    private func trustedIssuer(_ iss: String) -> TrustedIssuer? {
        guard issuers.count <= 4 else { return byIssuer[iss] }
        return issuers.last { $0.issuer == iss }
    }

    // MARK: - Keys

    private func verifySignature(_ jws: JWS, issuer: TrustedIssuer) async throws(AccessTokenError) {
        let failure = await signatureCheck.failure(jws, keys: issuer.keys, issuer: issuer.issuer, now: now(), clock: clock)
        if let failure { throw Self.error(failure) }
    }

    /// Why the signature does not verify with `keys`, or `nil` when it does.
    package static func signatureFailure(_ jws: JWS, keys: JSONWebKeySet) -> AccessTokenError? {
        IssuerSignatureCheck.failure(jws, keys: keys).map(error)
    }

    private static func error(_ failure: IssuerSignatureCheck.Failure) -> AccessTokenError {
        switch failure {
        case .keyNotFound(let hasKeyID):
            return .invalidToken(.init(.keyNotFound), hasKeyID ? "The issuer has no key with the token's kid." : "No key of the issuer fits the token's algorithm.")
        case .signatureInvalid:
            return .invalidToken(.init(.signatureInvalid), "The token's signature does not verify.")
        case .unavailable:
            return AccessTokenError(.temporarilyUnavailable, reason: .unavailable, "The issuer's keys cannot be fetched now.")
        }
    }

    // MARK: - Claims

    /// The claim checks of RFC 9068 §4 (after the signature).
    package static func check(
        _ claims: [String: JSONValue], issuer: TrustedIssuer, resource: ProtectedResource? = nil, now: Date
    ) throws(AccessTokenError) -> VerifiedAccessToken {
        try check(Claims(claims), issuer: issuer, resource: resource, now: now)
    }

    /// The claim checks; `aud` names this API when it holds one of the issuer's audiences or
    /// names `resource` (its identifier).
    static func check(_ claims: borrowing Claims, issuer: TrustedIssuer, resource: ProtectedResource?, now: Date) throws(AccessTokenError) -> VerifiedAccessToken {
        let leeway = issuer.leeway
        let audience: AudienceStorage
        let addressed: Bool
        switch claims.aud {
        case .string(let value)?:
            audience = .one(value)
            addressed = Self.contains(issuer.audiences, value) || resource?.isNamed(by: value) == true
        case .array(let values)?:
            let audiences = values.compactMap(\.stringValue)
            guard audiences.count == values.count else { throw .invalidToken(.init(.invalidClaim), "The token's aud holds a non-string.") }
            audience = .many(audiences)
            addressed = audiences.contains { Self.contains(issuer.audiences, $0) || resource?.isNamed(by: $0) == true }
        case nil: throw .invalidToken(.init(.audienceMismatch), "The token has no aud.")
        default: throw .invalidToken(.init(.invalidClaim), "The token's aud is neither a string nor an array.")
        }
        guard addressed else { throw .invalidToken(.init(.audienceMismatch), "The token is not addressed to this API.") }
        guard let exp = claims.exp else { throw .invalidToken(.init(.expired), "The token has no exp.") }
        guard let expiresAt = exp.numericDate else { throw .invalidToken(.init(.invalidClaim), "The token's exp is not a number.") }
        guard expiresAt.timeIntervalSince(now) > -leeway else { throw .invalidToken(.init(.expired), "The token has expired.") }
        if let nbf = claims.nbf {
            guard let notBefore = nbf.numericDate else { throw .invalidToken(.init(.invalidClaim), "The token's nbf is not a number.") }
            guard notBefore.timeIntervalSince(now) <= leeway else { throw .invalidToken(.notYetValid, "The token is not valid yet (nbf).") }
        }
        guard let iat = claims.iat else { throw .invalidToken(.init(.issuedAtInvalid), "The token has no iat.") }
        guard let issuedAt = iat.numericDate else { throw .invalidToken(.init(.invalidClaim), "The token's iat is not a number.") }
        guard issuedAt.timeIntervalSince(now) <= leeway else { throw .invalidToken(.init(.issuedAtInvalid), "The token's iat is in the future.") }
        func requiredString(_ value: JSONValue?, _ name: String) throws(AccessTokenError) -> String {
            guard let value else { throw .invalidToken(.missingClaim, "The token has no \(name).") }
            guard let string = value.stringValue, !string.isEmpty else { throw .invalidToken(.init(.invalidClaim), "The token's \(name) is not a string.") }
            return string
        }
        let subject = try requiredString(claims.sub, "sub")
        let clientID = try requiredString(claims.clientID, "client_id")
        let jwtID = try requiredString(claims.jti, "jti")
        // A `scope` string is kept as it is (split only if someone reads the set); any
        // other `scope` is checked here.
        let scopes: ScopeStorage
        if case .string(let text)? = claims.scope { scopes = .text(text) } else { scopes = .set(try Self.scopes(claims.scope)) }
        let confirmation = try Self.confirmation(claims.cnf)
        return VerifiedAccessToken(
            format: .jwt, issuer: issuer.issuer, subject: subject, clientID: clientID, scopes: scopes, audience: audience,
            expiresAt: expiresAt, issuedAt: issuedAt, jwtID: jwtID, confirmationThumbprint: confirmation.keyThumbprint,
            certificateThumbprint: confirmation.certificateThumbprint, rawClaims: claims.raw ?? LazyJSONObject.make([:]))
    }

    /// Whether `audiences` holds `audience`: a few are compared in turn (`String` equality,
    /// as the set's), cheaper than hashing `aud` on every request.
    static func contains(_ audiences: Set<String>, _ audience: String) -> Bool {
        audiences.count <= 4 ? audiences.contains { $0 == audience } : audiences.contains(audience)
    }

    /// `scope`: a space-separated string (RFC 9068 §2.2.3, RFC 8693 §4.2); an array of
    /// strings is accepted too (some servers send one).
    static func scopes(_ value: JSONValue?) throws(AccessTokenError) -> Set<String> {
        switch value {
        case nil: return []
        case .string(let text)?:
            return ScopeText.set(text)
        case .array(let values)?:
            let strings = values.compactMap(\.stringValue)
            guard strings.count == values.count else { throw .invalidToken(.init(.invalidClaim), "The token's scope holds a non-string.") }
            return Set(strings)
        default: throw .invalidToken(.init(.invalidClaim), "The token's scope is not a string.")
        }
    }

    /// A token's `cnf` claim: the key or certificate it is bound to.
    struct Confirmation {
        /// `cnf.jkt` (RFC 9449 §6.1): the thumbprint of a DPoP key.
        var keyThumbprint: String?
        /// `cnf.x5t#S256` (RFC 8705 §3.1): the SHA-256 thumbprint of a client certificate.
        var certificateThumbprint: String?
    }

    /// `cnf.jkt` (RFC 9449 §6.1), when the token is bound to a DPoP key, and `cnf.x5t#S256`
    /// (RFC 8705 §3.1), when it is bound to a client certificate. A token bound by another
    /// confirmation method only is refused: this API cannot check that binding, and
    /// accepting it as a bearer token would undo it.
    static func confirmation(_ value: JSONValue?) throws(AccessTokenError) -> Confirmation {
        guard let value else { return Confirmation() }
        guard let cnf = value.objectValue else { throw .invalidToken(.init(.invalidClaim), "The token's cnf is not an object.") }
        var confirmation = Confirmation()
        if let jkt = cnf["jkt"] {
            guard let thumbprint = jkt.stringValue, !thumbprint.isEmpty else {
                throw .invalidToken(.init(.invalidClaim), "The token's cnf.jkt is not a string.")
            }
            confirmation.keyThumbprint = thumbprint
        }
        if let x5t = cnf["x5t#S256"] {
            guard let thumbprint = x5t.stringValue, !thumbprint.isEmpty else {
                throw .invalidToken(.init(.invalidClaim), "The token's cnf.x5t#S256 is not a string.")
            }
            confirmation.certificateThumbprint = thumbprint
        }
        if confirmation.keyThumbprint == nil, confirmation.certificateThumbprint == nil, !cnf.isEmpty {
            throw .invalidToken(.bindingMismatch, "The token is bound by a confirmation method this API does not support.")
        }
        return confirmation
    }
}
