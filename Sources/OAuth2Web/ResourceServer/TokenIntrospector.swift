import Crypto
import Foundation
import Logging
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// Checks opaque access tokens at the authorization server's introspection endpoint
/// (RFC 7662), through an `OAuth2Client` (its transport, client authentication and
/// request deadline), and caches the answers.
///
/// ```swift
/// let introspector = TokenIntrospector(client: apiClient, accepting: .audiences(["https://api.example.com"]))
/// ```
///
/// - An active answer is accepted only when it names this API, as ``accepting`` says (its
///   `aud`; without one, its `client_id` or `scope`): the authorization server answers
///   `active: true` for a token it issued to any client, for any API. Behind a
///   ``ResourceServer`` with a ``ProtectedResource``, an `aud` naming the resource's
///   identifier names this API too.
/// - An active token's answer is cached for at most min(its `exp`, ``Policy/maximumLifetime``).
///   **That is how long a revoked token may still be accepted**: the staleness a revocation
///   may have. Choose ``Policy/maximumLifetime`` accordingly (0 caches nothing).
/// - An inactive token's answer is cached for ``Policy/negativeLifetime``, so that a client
///   retrying a dead token does not make a call each time.
/// - Answers are kept under the SHA-256 of the token, never the token; at most
///   ``Policy/capacity`` of them (expired ones go first, then those expiring soonest).
/// - Concurrent checks of one token share one introspection call.
/// - A failed call (the endpoint down, a timeout, a refused client authentication) is not
///   cached: the check fails with ``AccessTokenError/Code/temporarilyUnavailable``.
public final class TokenIntrospector: Sendable {
    /// Cache lifetimes and size.
    public struct Policy: Sendable, Hashable {
        /// The longest time an active answer is reused (60 s by default); never past the
        /// token's `exp`. The staleness a revocation may have.
        public var maximumLifetime: TimeInterval
        /// How long an inactive answer is reused (5 s by default).
        public var negativeLifetime: TimeInterval
        /// The most answers kept (10 000 by default).
        public var capacity: Int
        /// The clock tolerance for `exp` and `nbf`, in seconds (0 by default: the server
        /// that issued the token has already judged its time).
        public var leeway: TimeInterval

        /// Creates a policy.
        public init(maximumLifetime: TimeInterval = 60, negativeLifetime: TimeInterval = 5, capacity: Int = 10_000, leeway: TimeInterval = 0) {
            self.maximumLifetime = maximumLifetime
            self.negativeLifetime = negativeLifetime
            self.capacity = max(1, capacity)
            self.leeway = leeway
        }
    }

    /// The client that calls the introspection endpoint.
    public let client: OAuth2Client
    /// What an answer must name for its token to be accepted here.
    public let accepting: AcceptedTokens
    /// The issuer an answer's `iss` must be, when the answer has one.
    public let issuer: String?
    /// The cache policy.
    public let policy: Policy
    /// How the introspection endpoint is asked to answer: JSON, or a signed JWT (RFC 9701)
    /// whose signature, `iss`, `aud` and `iat` are checked before it is believed.
    public let format: IntrospectionFormat
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let state = Locked<State>(State())

    private typealias Key = SHA256.Digest
    /// An answer judged on everything but whom it names (judged on each use: the judgement
    /// depends on the resource asking).
    private typealias Outcome = Result<Answer, AccessTokenError>

    private struct Answer: Sendable {
        var token: VerifiedAccessToken
        /// The answer's `aud`, `nil` when it has none.
        var audience: [String]?
        var scopes: [String]?
    }

    private struct Entry {
        var outcome: Outcome
        var until: Date
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var inFlight: [Key: Task<Outcome, Never>] = [:]
        var waiting = 0
    }

    /// Creates an introspector.
    ///
    /// - Parameters:
    ///   - client: a client of the authorization server, with its introspection endpoint
    ///     and the resource server's own credentials.
    ///   - accepting: what an answer must name for its token to be accepted: this API's
    ///     audiences, or (answers without `aud`) the client ids or scopes it serves; there is
    ///     no default — ``AcceptedTokens/anyActiveToken`` must be chosen by name.
    ///   - issuer: the issuer an answer's `iss` must be when present (`nil`: the client's
    ///     metadata's issuer).
    ///   - policy: cache lifetimes and size.
    ///   - format: `IntrospectionFormat/json` (the default), or
    ///     `IntrospectionFormat/jwt(_:)` to have signed answers (RFC 9701): an answer that
    ///     fails its checks makes the check fail as unavailable, and is not cached.
    ///   - logger: where failures are logged (never a token).
    public convenience init(
        client: OAuth2Client, accepting: AcceptedTokens, issuer: String? = nil, policy: Policy = Policy(), format: IntrospectionFormat = .json,
        logger: Logger = Logger(label: "swift-oauth2.resource-server")
    ) {
        self.init(client: client, accepting: accepting, issuer: issuer, policy: policy, format: format, logger: logger, now: { Date() })
    }

    /// Creates an introspector reading the time from `now` (tests).
    package init(
        client: OAuth2Client, accepting: AcceptedTokens, issuer: String?, policy: Policy, format: IntrospectionFormat = .json, logger: Logger,
        now: @escaping @Sendable () -> Date
    ) {
        self.client = client
        self.accepting = accepting
        self.issuer = issuer ?? client.metadata.issuer
        self.policy = policy
        self.format = format
        self.logger = logger
        self.now = now
    }

    /// The number of answers cached (expired ones included until they are evicted).
    public var cachedCount: Int { state.withLock { $0.entries.count } }
    /// The number of checks waiting for an introspection call in flight (tests).
    package var waitingCount: Int { state.withLock { $0.waiting } }

    /// Checks a token (from the cache, else at the introspection endpoint) and that it
    /// grants `requiredScopes`.
    ///
    /// - Throws: ``AccessTokenError``: ``AccessTokenError/Code/invalidToken`` (inactive,
    ///   expired, not yet valid, another issuer, not for this API as ``accepting`` says),
    ///   ``AccessTokenError/Code/insufficientScope``,
    ///   ``AccessTokenError/Code/temporarilyUnavailable`` when the endpoint cannot be asked.
    public func verify(_ token: String, requiredScopes: [String] = []) async throws(AccessTokenError) -> VerifiedAccessToken {
        try await verify(token, requiredScopes: requiredScopes, resource: nil)
    }

    /// Checks a token for `resource` too: an answer whose `aud` names the resource's
    /// identifier is accepted besides those ``accepting`` accepts.
    package func verify(_ token: String, requiredScopes: [String] = [], resource: ProtectedResource?) async throws(AccessTokenError) -> VerifiedAccessToken {
        let outcome = await outcome(for: token)
        switch outcome {
        case .success(let answer):
            let verified = answer.token
            let namesResource = answer.audience?.contains { resource?.isNamed(by: $0) == true } ?? false
            guard namesResource || accepting.accept(audience: answer.audience, clientID: verified.clientID, scopes: answer.scopes) else {
                throw .invalidToken(.init(.audienceMismatch), "The token is not addressed to this API.")
            }
            try verified.requireScopes(requiredScopes)
            return verified
        case .failure(let error):
            throw error
        }
    }

    private func outcome(for token: String) async -> Outcome {
        let key = SHA256.hash(data: Data(token.utf8))
        let current = now()
        enum Next {
            case cached(Outcome)
            case wait(Task<Outcome, Never>)
        }
        let next: Next = state.withLock { state in
            if let entry = state.entries[key] {
                if entry.until > current { return .cached(entry.outcome) }
                state.entries[key] = nil
            }
            state.waiting += 1
            if let task = state.inFlight[key] { return .wait(task) }
            let task = Task { [self] in await introspect(token, key: key) }
            state.inFlight[key] = task
            return .wait(task)
        }
        switch next {
        case .cached(let outcome):
            // An active answer cached up to `exp` may have just expired with leeway 0.
            if case .success(let answer) = outcome, let expiresAt = answer.token.expiresAt, expiresAt.timeIntervalSince(current) <= -policy.leeway {
                return .failure(.invalidToken(.init(.expired), "The token has expired."))
            }
            return outcome
        case .wait(let task):
            let outcome = await task.value
            state.withLock { $0.waiting -= 1 }
            return outcome
        }
    }

    /// One call to the endpoint, its answer judged and cached.
    private func introspect(_ token: String, key: Key) async -> Outcome {
        let outcome: Outcome
        var until: Date?
        do {
            let response = try await client.introspect(token, hint: .accessToken, format: format)
            let answeredAt = now()
            outcome = judge(response, now: answeredAt)
            switch outcome {
            case .success(let answer):
                let verified = answer.token
                var lifetime = policy.maximumLifetime
                if let expiresAt = verified.expiresAt { lifetime = min(lifetime, expiresAt.timeIntervalSince(answeredAt)) }
                if lifetime > 0 { until = answeredAt.addingTimeInterval(lifetime) }
            case .failure:
                if policy.negativeLifetime > 0 { until = answeredAt.addingTimeInterval(policy.negativeLifetime) }
            }
        } catch {
            logger.warning("Token introspection failed", metadata: ["error": "\(error)"])
            outcome = .failure(AccessTokenError(.temporarilyUnavailable, reason: .unavailable, "The token cannot be checked now."))
        }
        state.withLock { state in
            state.inFlight[key] = nil
            if let until { insert(Entry(outcome: outcome, until: until), for: key, into: &state) }
        }
        return outcome
    }

    private func insert(_ entry: Entry, for key: Key, into state: inout State) {
        if state.entries[key] == nil, state.entries.count >= policy.capacity {
            let current = now()
            state.entries = state.entries.filter { $0.value.until > current }
            if state.entries.count >= policy.capacity, let soonest = state.entries.min(by: { $0.value.until < $1.value.until }) {
                state.entries[soonest.key] = nil
            }
        }
        state.entries[key] = entry
    }

    /// The rules for an answer (RFC 7662 §2.2, §4), but whom it names: `verify(_:requiredScopes:resource:)`
    /// judges that on each use.
    private func judge(_ response: IntrospectionResponse, now: Date) -> Outcome {
        guard response.active else { return .failure(.invalidToken(.inactive, "The token is not active.")) }
        // An authorization server introspects every token it issued: a client must not reach
        // the API with its refresh token (token_type `refresh_token`, Keycloak's `typ` `Refresh`).
        let kind = (response.tokenType ?? response.fields["typ"]?.stringValue)?.lowercased()
        if kind == "refresh_token" || kind == "refresh" {
            return .failure(.invalidToken(.notAnAccessToken, "The token is not an access token."))
        }
        if let expiresAt = response.expiresAt, expiresAt.timeIntervalSince(now) <= -policy.leeway {
            return .failure(.invalidToken(.init(.expired), "The token has expired."))
        }
        if let notBefore = response.notBefore, notBefore.timeIntervalSince(now) > policy.leeway {
            return .failure(.invalidToken(.notYetValid, "The token is not valid yet (nbf)."))
        }
        if let issuer, let answered = response.issuer, answered != issuer {
            return .failure(.invalidToken(.init(.issuerMismatch), "The token's issuer is not trusted."))
        }
        let confirmation: AccessTokenVerifier.Confirmation
        do { confirmation = try AccessTokenVerifier.confirmation(response.fields["cnf"]) } catch { return .failure(error) }
        let token = VerifiedAccessToken(
            format: .introspected, issuer: response.issuer ?? issuer, subject: response.subject, clientID: response.clientID,
            scopes: Set(response.scopes ?? []), audience: response.audience ?? [], expiresAt: response.expiresAt,
            issuedAt: response.issuedAt, jwtID: response.jwtID, confirmationThumbprint: confirmation.keyThumbprint,
            certificateThumbprint: confirmation.certificateThumbprint, claims: response.fields)
        return .success(Answer(token: token, audience: response.audience, scopes: response.scopes))
    }
}
