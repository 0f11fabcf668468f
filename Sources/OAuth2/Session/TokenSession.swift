import Foundation
import Logging
import OAuth2Internals

/// The one stateful object per signed-in identity: its current ``TokenSet``, kept fresh and
/// kept in a ``TokenStore``.
///
/// ```swift
/// let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
/// let session = try await TokenSession(client: client, tokens: tokens, store: store)
///
/// let (response, body) = try await session.perform(HTTPRequest(method: .get, url: api))
/// ```
///
/// - ``freshAccessToken()`` returns the token in hand, or renews it when it expires within
///   the ``Options/leeway``. Any number of concurrent callers share one token request
///   (single flight), and processes sharing the store share one too: the renewal runs under
///   ``TokenStore/withExclusiveAccess(to:_:)``, re-reads the record, asks the server only if
///   the stored token still needs it, and saves the answer — a rotated refresh token is in
///   the store before any caller gets the new access token.
/// - ``authorize(_:)`` adds the `Authorization` header (and a DPoP proof for a DPoP-bound
///   token); ``perform(_:body:)`` sends the request and, on a 401, renews the token once and
///   retries once.
/// - With ``ClientConfiguration/dpop``, the key is saved with the tokens and read back with
///   them, so every renewal and every request of the session uses the key its tokens are
///   bound to.
/// - A transient failure (network, 5xx, 429) keeps every token; a refused refresh token
///   (`invalid_grant`) removes them and throws ``OAuth2Error/Code/signInRequired``.
/// - ``events()`` reports refreshes and sign-outs; ``signOut(_:endSession:progress:)`` revokes
///   and forgets the tokens.
///
/// A renewal, once sent, runs to its end and is saved even when every caller waiting for
/// it has been cancelled: abandoning it could lose a rotated refresh token. A cancelled
/// caller stops waiting at once and the session keeps its previous tokens until the
/// renewal completes.
public final class TokenSession: Sendable {
    /// Whose session this is: the client's issuer and client id, and the account.
    public var key: TokenSessionKey {
        TokenSessionKey(issuer: baseClient.sessionIssuer, clientID: baseClient.configuration.clientID, account: account)
    }
    /// The account within the client. The session keeps only this part of its ``key``: the
    /// issuer and the client id are its client's.
    let account: String
    /// The client that renews and revokes the tokens. With DPoP, its
    /// ``ClientConfiguration/dpop`` key is the one the session's tokens are bound to: the
    /// key stored with them (``StoredTokenSession/dpopKey()``) once the session has read its
    /// record, else the key of the client it was created with.
    public var client: OAuth2Client {
        guard let adopted = state.withLock({ $0.adoptedDPoP }) else { return baseClient }
        return baseClient.withDPoP(adopted)
    }
    /// The client the session was created with (a copy of a client is one reference).
    let baseClient: OAuth2Client
    /// Where the tokens are kept.
    public let store: any TokenStore
    /// The tokens, the renewal in flight, the back-off, the adopted DPoP key, the event
    /// subscribers: behind one lock.
    let state = Locked(SessionState())
    /// How tokens are renewed.
    public let options: Options
    /// With a store that hears of changes made elsewhere: the observation of this session's
    /// record (``TokenStoreChangeObserving``).
    let watch: StoreWatch?

    /// Creates a session for `account` that reads its tokens from `store` when first needed.
    ///
    /// Until then ``tokens`` is `nil`; ``freshAccessToken()`` throws
    /// ``OAuth2Error/Code/signInRequired`` when the store has no record (except with
    /// ``Renewal/clientCredentials(scopes:)``, which requests a token).
    ///
    /// - Parameters:
    ///   - client: the client of the issuer that issued (or will issue) the tokens.
    ///   - store: where the tokens are kept; a new ``MemoryTokenStore`` by default.
    ///   - account: the account within this client (a profile or user name).
    ///   - options: leeway, renewal method, retry on 403.
    public init(
        client: OAuth2Client,
        store: any TokenStore = MemoryTokenStore(),
        account: String = "default",
        options: Options = Options()
    ) {
        self.account = account
        self.baseClient = client
        self.store = store
        self.options = options
        self.watch = store is any TokenStoreChangeObserving ? StoreWatch() : nil
        watchStore()
    }

    /// Creates a session from the tokens of a sign-in, and saves them in `store` (replacing
    /// the tokens of any record of the same account; its other members are kept, but for
    /// ``StoredTokenSession/subject``).
    ///
    /// - Throws: what the store's `save` throws (the library's stores throw ``OAuth2Error``).
    public init(
        client: OAuth2Client,
        tokens: TokenSet,
        store: any TokenStore = MemoryTokenStore(),
        account: String = "default",
        options: Options = Options()
    ) async throws {
        let key = Self.key(for: client, account: account)
        self.account = account
        self.baseClient = client
        self.store = store
        self.options = options
        self.watch = store is any TokenStoreChangeObserving ? StoreWatch() : nil
        try await Self.save(signedIn: tokens, dpopKey: client.configuration.dpop?.key, key: key, store: store, now: client.now())
        state.withLock { $0.current = .init(tokens: tokens, expiry: TokenExpiry(tokens, leeway: options.leeway)) }
        watchStore()
    }

    /// Saves the tokens of a sign-in under the store's lock (so that a renewal in another
    /// process cannot overwrite them with older ones), keeping the record's other members
    /// but its `subject`, which belongs to the previous sign-in, and its DPoP key, which
    /// becomes `dpopKey` (the key the new tokens are bound to, if any).
    static func save(signedIn tokens: TokenSet, dpopKey: DPoPKey?, key: TokenSessionKey, store: any TokenStore, now: Date) async throws {
        try await store.withExclusiveAccess(to: key) {
            var record = try await store.load(key) ?? StoredTokenSession(key: key, tokens: tokens)
            record.tokens = tokens
            record.subject = nil
            record.setDPoPKey(dpopKey)
            record.updatedAt = now
            try await store.save(record)
        }
    }

    /// Restores the session of `account` from `store`; `nil` when the store has none.
    ///
    /// The tokens are read as stored, expired or not: the first ``freshAccessToken()``
    /// renews them if needed. A DPoP key stored with them replaces the client's own, so that
    /// a restarted process keeps its sender-constrained tokens working.
    ///
    /// - Throws: what the store's `load` throws.
    public static func restore(
        client: OAuth2Client,
        store: any TokenStore,
        account: String = "default",
        options: Options = Options()
    ) async throws -> TokenSession? {
        let session = TokenSession(client: client, store: store, account: account, options: options)
        guard let record = try await store.load(session.key) else { return nil }
        Self.adoptDPoP(record, state: session.state, client: client)
        session.state.withLock { $0.current = .init(tokens: record.tokens, expiry: TokenExpiry(record.tokens, leeway: options.leeway)) }
        return session
    }

    /// The key a session of `client` for `account` is stored under.
    public static func key(for client: OAuth2Client, account: String = "default") -> TokenSessionKey {
        TokenSessionKey(issuer: client.sessionIssuer, clientID: client.configuration.clientID, account: account)
    }

    deinit {
        // Outside the lock: finishing a stream runs its termination handler, which takes it.
        let subscribers = state.withLock { state in
            defer { state.subscribers = [:] }
            return state.subscribers.values
        }
        for continuation in subscribers { continuation.finish() }
    }

    /// The tokens in memory now, as they are (possibly expired); `nil` before they are
    /// first read from the store, and after a sign-out.
    public var tokens: TokenSet? { state.snapshot?.tokens }

    /// The current tokens, renewed first when the access token expires within the leeway.
    ///
    /// A fresh token costs one lock and one clock read; concurrent callers during a renewal
    /// share one token request. When renewing fails transiently while the access token
    /// has not yet expired (only entered the leeway), that token is returned and the
    /// failure is reported as ``TokenSessionEvent/refreshFailed(_:)``.
    ///
    /// - Throws: ``OAuth2Error/Code/signInRequired`` when there are no tokens, no refresh
    ///   token, or the server refused the refresh token (the tokens are then removed);
    ///   a transient ``OAuth2Error`` (``OAuth2Error/isTransient``, with
    ///   ``OAuth2Error/retryAfter``) with every token kept; ``OAuth2Error/Code/cancelled``
    ///   when the calling task is cancelled while waiting; what the store throws.
    public func freshTokens() async throws -> TokenSet {
        // One lock either way: a caller that finds the tokens due takes its place among the
        // waiters under the lock that found them due.
        switch enter(rejecting: nil) {
        case .answered(let tokens): return tokens
        case .failed(let error): throw error
        case .wait(let id): return try await wait(id)
        }
    }

    /// The current access token, renewed first when it expires within the leeway.
    ///
    /// - Throws: as ``freshTokens()``.
    public func freshAccessToken() async throws -> String {
        try await freshTokens().accessToken
    }

    /// Renews the tokens now, whether or not they expire soon — unless another caller or
    /// process renewed them while this call waited for its turn, in which case those are
    /// returned.
    ///
    /// - Throws: as ``freshTokens()``, but a transient failure is always thrown.
    @discardableResult
    public func refresh() async throws -> TokenSet {
        try await renew(rejecting: state.snapshot?.tokens.accessToken)
    }

    /// Signs in again: runs `obtain` (an authorization-code exchange, a device flow…) and
    /// makes its tokens the session's, saved in the store.
    ///
    /// ```swift
    /// try await session.signIn { client in
    ///     try await client.completeAuthorization(callbackURL: callback, request: request)
    /// }
    /// ```
    ///
    /// When `obtain` fails or the task is cancelled before the tokens are saved, the
    /// session keeps its previous tokens.
    ///
    /// - Throws: what `obtain` throws; ``OAuth2Error/Code/cancelled``; what the store throws.
    @discardableResult
    public func signIn(_ obtain: @Sendable (OAuth2Client) async throws -> TokenSet) async throws -> TokenSet {
        let client = self.client
        let tokens = try await obtain(client)
        try Self.checkCancellation("The sign-in was cancelled; the session keeps its previous tokens.")
        try await Self.save(signedIn: tokens, dpopKey: client.configuration.dpop?.key, key: key, store: store, now: client.now())
        replaceTokens(tokens, event: .signedIn(tokens))
        return tokens
    }

    /// A new stream of this session's events, from now on. The stream ends when the
    /// consumer stops iterating or the session goes away.
    public func events() -> AsyncStream<TokenSessionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: TokenSessionEvent.self)
        let id = state.withLock { state in
            state.nextSubscriberID &+= 1
            state.subscribers[state.nextSubscriberID] = continuation
            return state.nextSubscriberID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Makes `tokens` the session's outside a renewal (a sign-in, a sign-out): a renewal in
    /// flight will not overwrite them. Emits `event` in the same critical section, so that
    /// events arrive in the order the tokens changed.
    func replaceTokens(_ tokens: TokenSet?, event: TokenSessionEvent) {
        let snapshot = tokens.map { SessionState.Snapshot(tokens: $0, expiry: TokenExpiry($0, leeway: options.leeway)) }
        state.withLock { state in
            state.epoch &+= 1
            state.backoff = nil
            state.current = snapshot
            state.emit(event)
        }
    }

    /// How many callers wait for a renewal now (for tests).
    var waitingCallers: Int { state.withLock { Int($0.liveWaiters) } }

    /// How many waiter slots, tombstones included, the session keeps now (for tests).
    var waiterSlots: Int { state.withLock { $0.waiters.count } }

    static func checkCancellation(_ message: String) throws(OAuth2Error) {
        if Task.isCancelled { throw OAuth2Error(.cancelled, source: .client, message: message) }
    }
}
