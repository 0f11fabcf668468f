import Crypto
import Foundation
import Logging
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// Verifies the logout tokens a provider sends to this client's back-channel logout
/// endpoint (OpenID Connect Back-Channel Logout 1.0 §2.4, §2.6).
///
/// A token is accepted when, in order:
/// 1. it is a compact JWS (strictly parsed, at most ``maximumTokenSize`` bytes) whose `typ`
///    is `logout+jwt` (§2.4 recommends it) or says nothing of the kind: absent, or the generic
///    `JWT` that some providers send (Glewlwyd 2.7.5) — with ``requiresExplicitType`` those
///    are refused too; any other `typ` (`at+jwt`, `dpop+jwt`...) never passes;
/// 2. its `alg` is in ``allowedAlgorithms`` (asymmetric only: never `none`, never HMAC);
/// 3. its signature verifies with a key of the issuer's set (the `kid`'s key, or each key
///    that fits when there is no `kid`); an unknown `kid` makes one refetch of the JWK set,
///    rate-limited by the `JWKSCache` and waiting at most ``keyFetchDeadline``;
/// 4. `iss` is ``issuer`` exactly; `aud` contains ``clientID``;
/// 5. `iat` is present, no older than ``maximumAge`` and no further ahead than ``leeway``;
///    `exp`, when present, has not passed (with ``leeway``) — it is optional unless
///    ``requiresExpiration``, since some providers (Glewlwyd 2.7.5) send none and the `iat`
///    window bounds the token's life anyway;
/// 6. `events` is an object holding `http://schemas.openid.net/event/backchannel-logout`,
///    whose value is a JSON object;
/// 7. `sub`, `sid` or both are present (strings); `nonce` is absent; `jti` is present;
/// 8. last, its `jti` has not been seen from this issuer (``replayStore``; the record is
///    kept until the token would be too old anyway).
///
/// Tokens never reach a log line or an error message.
public struct LogoutTokenVerifier: Sendable {
    /// The member of `events` that makes a JWT a logout token (§2.4).
    public static let backChannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"
    /// The `typ` of an explicitly typed logout token (§2.4), lower-cased, with its media-type form.
    static let logoutTokenTypes: Set<String> = ["logout+jwt", "application/logout+jwt"]
    /// The generic `typ` values (RFC 7519 §5.1), lower-cased: they say a JWS is a JWT and
    /// nothing of its kind, as no `typ` does (the claims still tell a logout token apart:
    /// `events`, no `nonce`).
    static let untypedTypes: Set<String> = ["jwt", "application/jwt"]
    /// The largest logout token accepted, in bytes.
    public static let maximumTokenSize = 16 * 1024
    /// The longest `jti` accepted.
    public static let maximumIDLength = 256

    /// The `iss` the tokens carry, compared exactly.
    public let issuer: String
    /// This client's `client_id`: a token's `aud` must contain it.
    public let clientID: String
    /// Where the issuer's public keys come from (the same sources as a resource server's:
    /// a fixed set, a `JWKSCache` shared with an `OAuth2Client`, or the `jwks_uri`).
    public let keys: TrustedIssuer.KeySource
    /// The signature algorithms accepted: asymmetric ones only (`none` and HMAC are removed
    /// whatever is configured).
    public let allowedAlgorithms: [JWSAlgorithm]
    /// The oldest `iat` accepted, in seconds before now.
    public let maximumAge: TimeInterval
    /// The clock tolerance, in seconds, for an `iat` in the future and a passed `exp`.
    public let leeway: TimeInterval
    /// Refuse tokens that are not explicitly typed `logout+jwt` (by default a missing or
    /// generic `JWT` `typ` is accepted, another one never).
    public let requiresExplicitType: Bool
    /// Refuse tokens without `exp` (§2.4 requires it; by default its absence is accepted
    /// within the `iat` window).
    public let requiresExpiration: Bool
    /// Where the `jti`s seen are recorded. Replicas behind one load balancer must share it.
    public let replayStore: any ReplayStore
    /// How long a request waits for the JWK set to be fetched before giving up.
    public let keyFetchDeadline: Duration
    private let logger: Logger
    /// The time `iat` and `exp` are checked against (tests inject one).
    package var now: @Sendable () -> Date = { Date() }
    /// The clock deadlines are measured on (tests inject one).
    package var clock: PipelineClock = .continuous
    /// Checks signatures with the issuer's keys (and keeps the background refreshes' times).
    private let signatureCheck: IssuerSignatureCheck

    /// Creates a verifier.
    ///
    /// - Parameters:
    ///   - issuer: the provider's issuer identifier, as its tokens carry it.
    ///   - clientID: this client's `client_id`.
    ///   - keys: where the provider's public keys come from.
    ///   - replayStore: where `jti`s are recorded (this process's memory by default; share
    ///     one between replicas, e.g. `PostgresReplayStore`).
    ///   - allowedAlgorithms: the algorithms to accept (`none` and HMAC are removed).
    ///   - maximumAge: the oldest `iat`, in seconds (5 minutes by default).
    ///   - leeway: the clock tolerance, in seconds (60 by default).
    ///   - requiresExplicitType: refuse tokens without `typ: logout+jwt` (`false` by default).
    ///   - requiresExpiration: refuse tokens without `exp` (`false` by default).
    ///   - keyFetchDeadline: how long a request waits for the JWK set (2 s by default).
    ///   - logger: where refusals are logged, at debug level (reasons only, never tokens).
    public init(
        issuer: String, clientID: String, keys: TrustedIssuer.KeySource, replayStore: any ReplayStore = MemoryReplayStore(),
        allowedAlgorithms: [JWSAlgorithm] = TrustedIssuer.defaultAlgorithms, maximumAge: TimeInterval = 300, leeway: TimeInterval = 60,
        requiresExplicitType: Bool = false, requiresExpiration: Bool = false, keyFetchDeadline: Duration = .seconds(2),
        logger: Logger = Logger(label: "swift-oauth2.back-channel-logout")
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.keys = keys
        self.replayStore = replayStore
        self.allowedAlgorithms = allowedAlgorithms.filter { JWSAlgorithm.asymmetric.contains($0) }
        self.maximumAge = maximumAge
        self.leeway = leeway
        self.requiresExplicitType = requiresExplicitType
        self.requiresExpiration = requiresExpiration
        self.keyFetchDeadline = keyFetchDeadline
        self.logger = logger
        signatureCheck = IssuerSignatureCheck(keyFetchDeadline: keyFetchDeadline, logger: logger)
    }

    /// Verifies a logout token (the `logout_token` parameter of the back-channel request) and
    /// records its `jti`.
    ///
    /// - Throws: ``LogoutTokenError``: ``LogoutTokenError/Code/invalidRequest`` for any
    ///   failed check (the reason names it), ``LogoutTokenError/Code/temporarilyUnavailable``
    ///   when the issuer's JWK set has never been fetched and cannot be now, or the replay
    ///   store fails.
    public func verify(_ logoutToken: String) async throws(LogoutTokenError) -> VerifiedLogoutToken {
        do {
            let verified = try await verifyToken(logoutToken)
            try await recordUse(verified)
            return verified
        } catch {
            logger.debug("Logout token refused", metadata: ["reason": "\(error.reason)", "code": "\(error.code)"])
            throw error
        }
    }

    private func verifyToken(_ token: String) async throws(LogoutTokenError) -> VerifiedLogoutToken {
        guard token.utf8.count <= Self.maximumTokenSize else { throw .invalid(.malformed, "The logout token is too large.") }
        let jws: JWS
        do { jws = try JWS(compact: token) } catch { throw .invalid(error) }
        if let type = jws.type?.lowercased(), !Self.untypedTypes.contains(type) {
            guard Self.logoutTokenTypes.contains(type) else {
                throw .invalid(.typeMismatch, "The logout token's typ is not logout+jwt.")
            }
        } else if requiresExplicitType {
            throw .invalid(.typeMismatch, "The logout token is not typed logout+jwt (required).")
        }
        let algorithm = jws.algorithm
        guard algorithm != .none, !algorithm.isHMAC, allowedAlgorithms.contains(algorithm) else {
            throw .invalid(.init(.algorithmNotAllowed), "The logout token's signature algorithm is not accepted.")
        }
        try await verifySignature(jws)
        let claims: [String: JSONValue]
        do { claims = try jws.claims() } catch { throw .invalid(error) }
        return try check(claims, now: now())
    }

    // MARK: - Keys

    private func verifySignature(_ jws: JWS) async throws(LogoutTokenError) {
        switch await signatureCheck.failure(jws, keys: keys, issuer: issuer, now: now(), clock: clock) {
        case nil:
            return
        case .keyNotFound(let hasKeyID)?:
            throw .invalid(
                .init(.keyNotFound), hasKeyID ? "The issuer has no key with the logout token's kid." : "No key of the issuer fits the logout token's algorithm.")
        case .signatureInvalid?:
            throw .invalid(.init(.signatureInvalid), "The logout token's signature does not verify.")
        case .unavailable?:
            throw LogoutTokenError(.temporarilyUnavailable, reason: .unavailable, "The issuer's keys cannot be fetched now.")
        }
    }

    // MARK: - Claims

    /// The claim checks of §2.6 steps 4 to 7 (after the signature).
    package func check(_ claims: [String: JSONValue], now: Date) throws(LogoutTokenError) -> VerifiedLogoutToken {
        guard let iss = claims["iss"]?.stringValue, iss == issuer else {
            throw .invalid(.init(.issuerMismatch), "The logout token's iss is not the issuer.")
        }
        switch claims["aud"] {
        case .string(let value)?:
            guard value == clientID else { throw .invalid(.init(.audienceMismatch), "The logout token is not addressed to this client.") }
        case .array(let values)?:
            guard values.allSatisfy({ $0.stringValue != nil }) else { throw .invalid(.init(.invalidClaim), "The logout token's aud holds a non-string.") }
            guard values.contains(.string(clientID)) else {
                throw .invalid(.init(.audienceMismatch), "The logout token is not addressed to this client.")
            }
        case nil: throw .invalid(.init(.audienceMismatch), "The logout token has no aud.")
        default: throw .invalid(.init(.invalidClaim), "The logout token's aud is neither a string nor an array.")
        }
        guard let iat = claims["iat"] else { throw .invalid(.missingClaim, "The logout token has no iat.") }
        guard let issuedAt = iat.numericDate else { throw .invalid(.init(.invalidClaim), "The logout token's iat is not a number.") }
        let age = now.timeIntervalSince(issuedAt)
        guard age >= -leeway else { throw .invalid(.init(.issuedAtInvalid), "The logout token's iat is in the future.") }
        guard age <= maximumAge + leeway else { throw .invalid(.init(.issuedAtInvalid), "The logout token is too old (iat).") }
        var expiresAt: Date?
        if let exp = claims["exp"] {
            guard let date = exp.numericDate else { throw .invalid(.init(.invalidClaim), "The logout token's exp is not a number.") }
            guard date.timeIntervalSince(now) > -leeway else { throw .invalid(.init(.expired), "The logout token has expired.") }
            expiresAt = date
        } else if requiresExpiration {
            throw .invalid(.missingClaim, "The logout token has no exp.")
        }
        guard let events = claims["events"] else { throw .invalid(.missingClaim, "The logout token has no events.") }
        guard let members = events.objectValue else { throw .invalid(.eventMissing, "The logout token's events is not an object.") }
        guard let event = members[Self.backChannelLogoutEvent] else {
            throw .invalid(.eventMissing, "The logout token's events has no back-channel logout event.")
        }
        guard event.objectValue != nil else { throw .invalid(.eventMissing, "The logout token's back-channel logout event is not an object.") }
        func optionalString(_ name: String) throws(LogoutTokenError) -> String? {
            guard let value = claims[name] else { return nil }
            guard let string = value.stringValue, !string.isEmpty else { throw .invalid(.init(.invalidClaim), "The logout token's \(name) is not a string.") }
            return string
        }
        let subject = try optionalString("sub")
        let sessionID = try optionalString("sid")
        guard subject != nil || sessionID != nil else { throw .invalid(.subjectMissing, "The logout token has neither sub nor sid.") }
        guard claims["nonce"] == nil else { throw .invalid(.nonceForbidden, "The logout token has a nonce, which logout tokens must not have.") }
        guard let jwtID = try optionalString("jti") else { throw .invalid(.missingClaim, "The logout token has no jti.") }
        guard jwtID.utf8.count <= Self.maximumIDLength else { throw .invalid(.init(.invalidClaim), "The logout token's jti is too long.") }
        return VerifiedLogoutToken(issuer: iss, subject: subject, sessionID: sessionID, jwtID: jwtID, issuedAt: issuedAt, expiresAt: expiresAt)
    }

    // MARK: - Replay

    /// The replay record's key: the issuer and the `jti`, each hashed (so the key stays
    /// short and printable whatever they hold).
    static func replayKey(issuer: String, jwtID: String) -> String {
        "logout:" + Base64URL.encode(Array(SHA256.hash(data: Data(issuer.utf8)))) + ":" + Base64URL.encode(Array(SHA256.hash(data: Data(jwtID.utf8))))
    }

    /// Records the token's `jti` for its issuer, or refuses a replay. The record lasts until
    /// the token fails the `iat` check anyway.
    private func recordUse(_ token: VerifiedLogoutToken) async throws(LogoutTokenError) {
        let now = now()
        let expiresAt = max(token.issuedAt, now).addingTimeInterval(maximumAge + leeway)
        let inserted: Bool
        do {
            inserted = try await replayStore.insertIfAbsent(Self.replayKey(issuer: token.issuer, jwtID: token.jwtID), expiresAt: expiresAt, now: now)
        } catch {
            throw LogoutTokenError(.temporarilyUnavailable, reason: .unavailable, "The logout token cannot be checked for replay now.")
        }
        guard inserted else { throw .invalid(.replayed, "The logout token was received before (jti).") }
    }
}
