import Foundation
import Logging
import OAuth2Internals

/// The tokens a service gets to call other services — on a user's behalf by token exchange
/// (RFC 8693), or as itself by client credentials — cached per ``DownstreamTokenKey``: the
/// user's session, audience, resource, scopes, requested type, actor and DPoP key.
///
/// ```swift
/// let downstream = DownstreamTokens(store: PostgresDownstreamTokenStore(store: tokenStore))
/// // in a request handler, for the signed-in user:
/// let token = try await downstream.exchange(
///     for: userSession, session: user.account,
///     audiences: ["https://orders.example.com"], scopes: ["orders:read"])
/// request.headerFields[.authorization] = token.authorizationValue
/// // when the user signs out (WebSignIn does it for its sessions):
/// try await downstream.endSession(user.account)
/// ```
///
/// - **A hit costs a dictionary lookup** under a lock: a token in this process's memory is
///   served while it is fresh, without a task hop or a database read.
/// - **Renewed early**: a token is renewed once it expires within
///   ``Configuration/renewalSkew`` of the injected clock (``Configuration/now``).
/// - **Once per key**: callers in this process that miss the same key wait for one request
///   (single flight); across processes, the request runs under the store's lock of the key
///   (``DownstreamTokenStore/withExclusiveAccess(to:_:)``), which first re-reads the store —
///   so with `PostgresDownstreamTokenStore`, a cold key costs the whole fleet one request.
/// - **Dropped when the user's session ends**: ``endSession(_:)`` removes the session's tokens
///   from the store and from the memory of every replica that observes the store.
/// - **Bounded**: at most ``Configuration/memoryCapacity`` tokens in memory; beyond it,
///   expired tokens go first, then those expiring soonest.
///
/// No token reaches a log line or an error message: keys log as digests, tokens not at all.
public final class DownstreamTokens: Sendable {
    /// How the cache renews and how much it keeps.
    public struct Configuration: Sendable {
        /// A token is renewed once it expires within this many seconds (default 60).
        public var renewalSkew: TimeInterval
        /// How long a token whose answer had no `expires_in` is used (default 300 s).
        public var lifetimeWithoutExpiry: TimeInterval
        /// The most tokens kept in this process's memory (default 10 000, at least 1).
        public var memoryCapacity: Int
        /// The clock.
        public var now: @Sendable () -> Date

        /// A configuration.
        public init(
            renewalSkew: TimeInterval = 60, lifetimeWithoutExpiry: TimeInterval = 300, memoryCapacity: Int = 10_000,
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.renewalSkew = renewalSkew
            self.lifetimeWithoutExpiry = lifetimeWithoutExpiry
            self.memoryCapacity = max(1, memoryCapacity)
            self.now = now
        }
    }

    /// Where tokens are kept beyond this process's memory, and locked for renewal.
    public let store: any DownstreamTokenStore
    /// The configuration.
    public let configuration: Configuration
    private let logger: Logger
    private let state: Locked<State>
    private let observation: Locked<TokenStoreObservation?> = Locked(nil)

    private struct Entry {
        let token: DownstreamToken
        /// When the token is due for renewal: its expiry minus the skew.
        let renewAt: Date
        let sessionID: String?
    }

    private struct State {
        var memory: [DownstreamTokenKey: Entry] = [:]
        var inFlight: [DownstreamTokenKey: Task<DownstreamToken, any Error>] = [:]
        /// Moves on at every session end: a renewal that began before one does not put its
        /// token in memory (its session may be the one that ended).
        var sessionEnds: UInt64 = 0
        var statistics = Statistics()
    }

    /// What the cache has done (for tests and diagnostics).
    public struct Statistics: Sendable, Equatable {
        /// Tokens served from this process's memory.
        public var memoryHits = 0
        /// Tokens read from the store (another process or replica renewed them).
        public var storeHits = 0
        /// Requests made to the authorization server.
        public var requests = 0
    }

    /// A cache over `store` (memory only by default).
    ///
    /// - Parameters:
    ///   - store: where tokens are shared and locked; `PostgresDownstreamTokenStore` for a fleet.
    ///   - configuration: renewal skew, memory bound, clock.
    ///   - logger: renewals and session ends at debug level (key digests, never tokens).
    public init(
        store: any DownstreamTokenStore = MemoryDownstreamTokenStore(), configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "swift-oauth2.downstream-tokens")
    ) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.state = Locked(State())
        let observation = store.observeSessionEnds { [weak self] sessionID in
            self?.forget(sessionID: sessionID)
        }
        self.observation.withLock { $0 = observation }
    }

    deinit { observation.withLock { $0?.cancel() } }

    /// What the cache has done so far.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// How many tokens are in this process's memory.
    public var memoryCount: Int { state.withLock { $0.memory.count } }

    /// The token of `key`: from memory while fresh, else from the store while fresh (under its
    /// lock), else from `fetch`, which runs once per key for all concurrent callers (and, with
    /// a shared store, for the fleet).
    ///
    /// - Throws: what `fetch` throws (every waiting caller gets it; nothing is cached), and the
    ///   store's errors.
    public func token(
        for key: DownstreamTokenKey, fetch: @escaping @Sendable () async throws -> DownstreamToken
    ) async throws -> DownstreamToken {
        let now = configuration.now()
        let lookup: Lookup = state.withLock { state in
            if let entry = state.memory[key], entry.renewAt > now {
                state.statistics.memoryHits += 1
                return .hit(entry.token)
            }
            if let running = state.inFlight[key] { return .wait(running) }
            let generation = state.sessionEnds
            let task = Task { try await self.renew(key, generation: generation, fetch: fetch) }
            state.inFlight[key] = task
            return .wait(task)
        }
        switch lookup {
        case .hit(let token): return token
        case .wait(let task): return try await task.value
        }
    }

    private enum Lookup { case hit(DownstreamToken), wait(Task<DownstreamToken, any Error>) }

    /// The token of `key` from the store (fresh) or from `fetch`, under the store's lock.
    private func renew(
        _ key: DownstreamTokenKey, generation: UInt64, fetch: @escaping @Sendable () async throws -> DownstreamToken
    ) async throws -> DownstreamToken {
        defer { state.withLock { _ = $0.inFlight.removeValue(forKey: key) } }
        let skew = configuration.renewalSkew
        let now = configuration.now
        let (token, fetched) = try await store.withExclusiveAccess(to: key) { () async throws -> (DownstreamToken, Bool) in
            if let stored = try await self.store.load(key), stored.expiresAt.addingTimeInterval(-skew) > now() {
                return (stored, false)
            }
            let token = try await fetch()
            try await self.store.save(token, for: key)
            return (token, true)
        }
        logger.debug("downstream token \(fetched ? "renewed" : "read from the store")", metadata: ["key": "\(key.storageID.prefix(12))"])
        remember(token, for: key, generation: generation, fetched: fetched)
        return token
    }

    private func remember(_ token: DownstreamToken, for key: DownstreamTokenKey, generation: UInt64, fetched: Bool) {
        let now = configuration.now()
        let capacity = configuration.memoryCapacity
        let entry = Entry(
            token: token, renewAt: token.expiresAt.addingTimeInterval(-configuration.renewalSkew),
            sessionID: key.session.map(DownstreamTokenKey.sessionID))
        state.withLock { state in
            if fetched { state.statistics.requests += 1 } else { state.statistics.storeHits += 1 }
            guard state.sessionEnds == generation || key.session == nil else { return }
            state.memory[key] = entry
            guard state.memory.count > capacity else { return }
            state.memory = state.memory.filter { $0.value.token.expiresAt > now || $0.key == key }
            let excess = state.memory.count - capacity
            if excess > 0 {
                let soonest = state.memory.filter { $0.key != key }.sorted { $0.value.token.expiresAt < $1.value.token.expiresAt }
                for (gone, _) in soonest.prefix(excess) { state.memory[gone] = nil }
            }
        }
    }

    /// Ends the user session `session` for downstream tokens: removes its tokens from the
    /// store and from this process's memory; the other replicas observing a shared store drop
    /// theirs when the store tells them.
    ///
    /// - Throws: the store's errors (this process's memory is emptied of them first).
    public func endSession(_ session: String) async throws {
        forget(sessionID: DownstreamTokenKey.sessionID(session))
        let removed = try await store.removeSession(session)
        logger.debug("downstream tokens of a session dropped", metadata: ["stored": "\(removed)"])
    }

    /// Drops the memory entries of the session `sessionID` (every entry of a user session
    /// when `nil`: ends may have been missed).
    private func forget(sessionID: String?) {
        state.withLock { state in
            state.sessionEnds += 1
            if let sessionID {
                state.memory = state.memory.filter { $0.value.sessionID != sessionID }
            } else {
                state.memory = state.memory.filter { $0.value.sessionID == nil }
            }
        }
    }
}

extension DownstreamTokens {
    /// A token exchange (RFC 8693) for the user session `session`, cached under the key of
    /// every parameter of `request` but the subject token (the session stands for it: its
    /// subject token renews, its downstream tokens stay), the client's issuer and id, and its
    /// DPoP key.
    ///
    /// - Throws: as ``OAuth2Client/exchangeToken(_:)``; ``OAuth2Error/Code/invalidRequest``
    ///   for a malformed request.
    public func exchange(_ request: TokenExchangeRequest, session: String, client: OAuth2Client) async throws -> DownstreamToken {
        try await exchange(session: session, client: client, template: request) { request }
    }

    /// A token exchange for the user of `tokenSession` (its fresh access token is the subject),
    /// cached for the user session `session` (for a web app, `WebSessionRecord.account`).
    ///
    /// - Throws: as ``TokenSession/freshAccessToken()`` and ``OAuth2Client/exchangeToken(_:)``.
    public func exchange(
        for tokenSession: TokenSession, session: String, actor: TokenExchangeRequest.Token? = nil, resources: [URL] = [],
        audiences: [String] = [], scopes: [String] = [], requestedTokenType: TokenTypeURI? = nil
    ) async throws -> DownstreamToken {
        let template = TokenExchangeRequest(
            subject: .init("-", type: .accessToken), actor: actor, resources: resources, audiences: audiences, scopes: scopes,
            requestedTokenType: requestedTokenType)
        return try await exchange(session: session, client: tokenSession.client, template: template) {
            var request = template
            request.subject = .init(try await tokenSession.freshAccessToken(), type: .accessToken)
            return request
        }
    }

    private func exchange(
        session: String, client: OAuth2Client, template: TokenExchangeRequest,
        request: @escaping @Sendable () async throws -> TokenExchangeRequest
    ) async throws -> DownstreamToken {
        let key = DownstreamTokenKey(
            session: session, grant: .tokenExchange, issuer: client.sessionIssuer, clientID: client.configuration.clientID,
            audiences: template.audiences, resources: template.resources, scopes: template.scopes,
            requestedTokenType: template.requestedTokenType, actor: template.actor,
            dpopThumbprint: client.configuration.dpop?.key.thumbprint)
        let lifetime = configuration.lifetimeWithoutExpiry
        return try await token(for: key) {
            DownstreamToken(try await client.exchangeToken(try await request()), lifetimeWithoutExpiry: lifetime)
        }
    }

    /// The service's own token (client credentials, RFC 6749 §4.4) for `scopes` (`nil`: the
    /// client's configured scopes), cached under the client's issuer, id and DPoP key and the
    /// scopes — for no user session, so no sign-out drops it.
    ///
    /// - Throws: as ``OAuth2Client/requestToken(_:requestedScopes:)``.
    public func clientCredentials(client: OAuth2Client, scopes: [String]? = nil) async throws -> DownstreamToken {
        let key = DownstreamTokenKey(
            session: nil, grant: .clientCredentials, issuer: client.sessionIssuer, clientID: client.configuration.clientID,
            scopes: scopes ?? client.configuration.scopes, dpopThumbprint: client.configuration.dpop?.key.thumbprint)
        let lifetime = configuration.lifetimeWithoutExpiry
        return try await token(for: key) {
            DownstreamToken(try await client.requestToken(.clientCredentials(scopes: scopes)), lifetimeWithoutExpiry: lifetime)
        }
    }
}
