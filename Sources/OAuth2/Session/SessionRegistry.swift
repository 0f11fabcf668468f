import Foundation

/// The sessions of one process — several accounts, tenants or clients side by side — kept
/// in one store under their ``TokenSessionKey`` (issuer + client id + account).
///
/// The registry hands out one ``TokenSession`` per key, so that every part of the app that asks
/// for an identity shares its single-flight renewal.
///
/// ```swift
/// let registry = TokenSessionRegistry(store: store)
/// let work = try await registry.add(tokens, client: client, account: "work")
/// let keys = try await registry.list()                      // every stored session
/// let personal = try registry.session(for: keys[0], client: client)
/// ```
public actor TokenSessionRegistry {
    /// Where the sessions are kept.
    public nonisolated let store: any TokenStore
    /// The options every session of this registry gets.
    public nonisolated let options: TokenSession.Options
    private var sessions: [TokenSessionKey: TokenSession] = [:]

    /// Creates a registry over `store`.
    public init(store: any TokenStore = MemoryTokenStore(), options: TokenSession.Options = TokenSession.Options()) {
        self.store = store
        self.options = options
    }

    /// The session for `key`: the one already open, or a new one that reads its tokens
    /// from the store when first needed.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when `client` is not the key's
    ///   (another issuer or client id).
    public func session(for key: TokenSessionKey, client: OAuth2Client) throws(OAuth2Error) -> TokenSession {
        let expected = TokenSession.key(for: client, account: key.account)
        guard expected == key else {
            throw .client(.invalidConfiguration, "The client is not the session's: \(key) needs \(key.clientID) at \(key.issuer).")
        }
        if let session = sessions[key] { return session }
        let session = TokenSession(client: client, store: store, account: key.account, options: options)
        sessions[key] = session
        return session
    }

    /// Starts a session from the tokens of a sign-in, saves them, and returns it. An open
    /// session of the same key takes the new tokens (it reports
    /// ``TokenSessionEvent/signedIn(_:)``).
    ///
    /// - Throws: what the store throws.
    @discardableResult
    public func add(_ tokens: TokenSet, client: OAuth2Client, account: String = "default") async throws -> TokenSession {
        let key = TokenSession.key(for: client, account: account)
        if let session = sessions[key] {
            try await session.signIn { _ in tokens }
            return session
        }
        let session = try await TokenSession(client: client, tokens: tokens, store: store, account: account, options: options)
        if let raced = sessions[key] {
            // Another add for the same key finished while this one saved: keep one session.
            try await raced.signIn { _ in tokens }
            return raced
        }
        sessions[key] = session
        return session
    }

    /// The open session for `key`, if any (``list(issuer:clientID:)`` also finds the stored ones).
    public func find(_ key: TokenSessionKey) -> TokenSession? {
        sessions[key]
    }

    /// The keys of every session, stored or open, optionally of one issuer and client,
    /// sorted by issuer, client id and account.
    ///
    /// - Throws: what the store's `list` throws.
    public func list(issuer: String? = nil, clientID: String? = nil) async throws -> [TokenSessionKey] {
        let stored = try await store.list()
        return Set(stored).union(sessions.keys)
            .filter { (issuer == nil || $0.issuer == issuer) && (clientID == nil || $0.clientID == clientID) }
            .sorted { ($0.issuer, $0.clientID, $0.account) < ($1.issuer, $1.clientID, $1.account) }
    }

    /// Forgets the session for `key`: removes its record from the store, without revoking
    /// anything (use ``TokenSession/signOut(_:endSession:progress:)`` for that), and closes the
    /// open session, which reports ``TokenSessionEvent/signedOut(_:)``.
    ///
    /// - Throws: what the store throws; the session stays open then.
    public func remove(_ key: TokenSessionKey) async throws {
        if let session = sessions[key] {
            let result = await session.signOut(.removeFromStore)
            if let error = result.errors[.removeFromStore] { throw error }
        } else {
            try await store.remove(key)
        }
        sessions[key] = nil
    }
}
