import Foundation
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// A signed-in browser's session on the server: who signed in, when, and where its tokens
/// are kept. The browser holds only an opaque id in a cookie; the store keeps this record
/// under a hash of that id (``WebSessionRecord/idHash``), so that a copy of the store gives
/// no usable cookie.
public struct WebSessionRecord: Sendable, Hashable, Codable {
    /// The SHA-256 of the cookie's session id, base64url: the store's key.
    public var idHash: String
    /// The account under which the tokens are kept in the token store (a random handle, not
    /// derived from the cookie): `TokenSession(client:store:account:)` reads them.
    public var account: String
    /// The issuer that signed the user in.
    public var issuer: String
    /// The user's `sub` at ``issuer``.
    public var subject: String
    /// The provider's session (`sid` of the ID token), which back- and front-channel logout
    /// name.
    public var providerSessionID: String?
    /// The claims of the ID token of the sign-in, as verified then.
    public var claims: [String: JSONValue]
    /// The scopes the provider granted.
    public var scopes: [String]
    /// The token for the session's own forms (sign-out): a form carries it, and a request
    /// without it is refused (cross-site request forgery).
    public var csrfToken: String
    /// When the user signed in (the sign-in that created this session).
    public var createdAt: Date
    /// When the session was last used; with the idle lifetime it decides the end.
    public var lastSeenAt: Date
    /// The end whatever the use (the absolute lifetime).
    public var absoluteExpiry: Date

    /// The `authorization_details` (RFC 9396) the sign-in's token response granted, if any;
    /// ``WebAccessRequirement/authorizationDetails`` is checked against them.
    public var authorizationDetails: [AuthorizationDetail]?

    /// Creates a record.
    public init(
        idHash: String, account: String, issuer: String, subject: String, providerSessionID: String?,
        claims: [String: JSONValue], scopes: [String], csrfToken: String, createdAt: Date, lastSeenAt: Date, absoluteExpiry: Date
    ) {
        self.idHash = idHash
        self.account = account
        self.issuer = issuer
        self.subject = subject
        self.providerSessionID = providerSessionID
        self.claims = claims
        self.scopes = scopes
        self.csrfToken = csrfToken
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.absoluteExpiry = absoluteExpiry
    }

    /// When the session ends if unused: the earlier of ``lastSeenAt`` + `idleLifetime` and
    /// ``absoluteExpiry``.
    public func expiry(idleLifetime: TimeInterval) -> Date {
        min(lastSeenAt.addingTimeInterval(idleLifetime), absoluteExpiry)
    }
}

/// A sign-in started by a browser and not yet completed: what the callback needs to check
/// the provider's answer. Kept on the server under its `state`, used once.
public struct PendingSignIn: Sendable, Hashable, Codable {
    /// The authorization request sent (its `state`, `nonce`, PKCE verifier, redirect URI).
    public var request: AuthorizationRequest
    /// The SHA-256 of the browser's sign-in cookie, base64url: only the browser that started
    /// the sign-in can complete it (no login cross-site request forgery).
    public var browserBindingHash: String
    /// Where to send the browser after the sign-in: a path of the app, or an allowed URL.
    public var returnTo: String
    /// What the route that started the sign-in requires (checked again after the callback).
    public var requirement: WebAccessRequirement
    /// After this, the sign-in can no longer complete.
    public var expiresAt: Date

    /// Creates a pending sign-in.
    public init(request: AuthorizationRequest, browserBindingHash: String, returnTo: String, requirement: WebAccessRequirement, expiresAt: Date) {
        self.request = request
        self.browserBindingHash = browserBindingHash
        self.returnTo = returnTo
        self.requirement = requirement
        self.expiresAt = expiresAt
    }
}

/// Where a web app keeps its browser sessions and pending sign-ins: ``MemoryWebSessionStore``
/// for one process; `PostgresWebSessionStore` (OAuth2Postgres) for replicas behind one load
/// balancer, so that a session signed in on one replica is known to the others, and a
/// logout on one ends it on all.
///
/// The tokens themselves are not here: they live in a `TokenStore` under
/// ``WebSessionRecord/account``, where a `TokenSession` refreshes them (single-flight, across
/// replicas with a shared store).
public protocol WebSessionStore: Sendable {
    /// The session stored under `idHash`, if it has not expired at `now` (`idleLifetime`
    /// after its last use, or its absolute expiry).
    func session(_ idHash: String, idleLifetime: TimeInterval, now: Date) async throws -> WebSessionRecord?
    /// Saves `record` under its ``WebSessionRecord/idHash``, replacing any record there.
    func save(_ record: WebSessionRecord) async throws
    /// Sets the last use of the session `idHash` to `now`, if it is still stored and `now` is
    /// later than its last use.
    func touch(_ idHash: String, now: Date) async throws
    /// Removes the session `idHash`; returns it if it was stored.
    @discardableResult
    func remove(_ idHash: String) async throws -> WebSessionRecord?
    /// Every stored session of `issuer` whose provider session is `providerSessionID` (when
    /// given) and whose subject is `subject` (when given), expired or not; none when neither
    /// is given. A logout reads them first, to remove their tokens before the sessions
    /// themselves: a logout that fails half-way then leaves sessions that the next logout
    /// finds, never tokens that nothing names.
    func sessions(issuer: String, subject: String?, providerSessionID: String?) async throws -> [WebSessionRecord]
    /// Removes every session of `issuer` whose provider session is `providerSessionID` (when
    /// given) and whose subject is `subject` (when given); at least one of the two is given.
    /// Returns the removed sessions.
    func removeSessions(issuer: String, subject: String?, providerSessionID: String?) async throws -> [WebSessionRecord]
    /// Keeps `pending` under its request's `state` until it expires. Anyone can start a
    /// sign-in, so a store must stay bounded under a flood of them without refusing new
    /// ones: it drops expired pending sign-ins, and may drop the oldest live ones.
    func insert(_ pending: PendingSignIn) async throws
    /// Removes and returns the pending sign-in of `state`, if there is one and it has not
    /// expired at `now`: a `state` completes at most one sign-in, on any replica.
    func takePendingSignIn(state: String, now: Date) async throws -> PendingSignIn?
}

/// A ``WebSessionStore`` in this process's memory: for an app with one process, and tests.
///
/// Expired sessions and pending sign-ins are dropped as they are met. Sessions beyond the
/// capacity are refused (after expired ones are dropped); pending sign-ins beyond it push
/// out the oldest, so that a flood of login requests, which anyone can send, never stops
/// a person from signing in.
///
/// Its state is behind a lock, not in an actor: every signed-in request reads a session,
/// and a lookup under a lock costs no hop to another executor (BENCHMARKS.md, "The
/// Hummingbird middleware's added latency per request"). No call waits for anything while
/// it holds the lock.
public final class MemoryWebSessionStore: WebSessionStore {
    private struct State {
        var sessions: [String: WebSessionRecord] = [:]
        var pending: [String: PendingSignIn] = [:]
        /// The states of `pending` in the order they came, from `pendingHead` on; a state no
        /// longer in `pending` is skipped when met.
        var pendingOrder: [String] = []
        var pendingHead = 0
    }

    private let state = Locked(State())
    /// The most sessions (and, separately, pending sign-ins) kept. A session beyond it fails
    /// with ``Full``; a pending sign-in beyond it replaces the oldest.
    public let capacity: Int

    /// The store is full of live sessions.
    public struct Full: Error, Sendable, CustomStringConvertible {
        /// What happened.
        public var description: String { "The web session store is full." }
    }

    /// Creates an empty store holding at most `capacity` sessions and `capacity` pending
    /// sign-ins (100 000 by default).
    public init(capacity: Int = 100_000) {
        self.capacity = max(1, capacity)
    }

    /// The number of sessions stored, expired or not.
    public var count: Int { state.withLock { $0.sessions.count } }

    /// The number of pending sign-ins stored, expired or not.
    public var pendingCount: Int { state.withLock { $0.pending.count } }

    /// See ``WebSessionStore/session(_:idleLifetime:now:)``.
    public func session(_ idHash: String, idleLifetime: TimeInterval, now: Date) -> WebSessionRecord? {
        state.withLock { state in
            guard let record = state.sessions[idHash] else { return nil }
            guard record.expiry(idleLifetime: idleLifetime) > now else {
                state.sessions[idHash] = nil
                return nil
            }
            return record
        }
    }

    /// See ``WebSessionStore/save(_:)``.
    ///
    /// - Throws: ``Full`` when the store holds ``capacity`` live sessions.
    public func save(_ record: WebSessionRecord) throws {
        let capacity = capacity
        let saved = state.withLock { state -> Bool in
            if state.sessions[record.idHash] == nil, state.sessions.count >= capacity {
                // The records carry no idle lifetime: only the absolute expiry is known here.
                let now = Date()
                state.sessions = state.sessions.filter { $0.value.absoluteExpiry > now }
                guard state.sessions.count < capacity else { return false }
            }
            state.sessions[record.idHash] = record
            return true
        }
        guard saved else { throw Full() }
    }

    /// See ``WebSessionStore/touch(_:now:)``.
    public func touch(_ idHash: String, now: Date) {
        state.withLock { state in
            // Only forward: a request that started earlier does not shorten the session.
            guard let seen = state.sessions[idHash]?.lastSeenAt, now > seen else { return }
            state.sessions[idHash]?.lastSeenAt = now
        }
    }

    /// See ``WebSessionStore/remove(_:)``.
    @discardableResult
    public func remove(_ idHash: String) -> WebSessionRecord? {
        state.withLock { $0.sessions.removeValue(forKey: idHash) }
    }

    /// See ``WebSessionStore/sessions(issuer:subject:providerSessionID:)``.
    public func sessions(issuer: String, subject: String?, providerSessionID: String?) -> [WebSessionRecord] {
        state.withLock { Self.matching($0.sessions, issuer: issuer, subject: subject, providerSessionID: providerSessionID) }
    }

    /// See ``WebSessionStore/removeSessions(issuer:subject:providerSessionID:)``.
    public func removeSessions(issuer: String, subject: String?, providerSessionID: String?) -> [WebSessionRecord] {
        state.withLock { state in
            let matching = Self.matching(state.sessions, issuer: issuer, subject: subject, providerSessionID: providerSessionID)
            for record in matching { state.sessions[record.idHash] = nil }
            return matching
        }
    }

    private static func matching(_ sessions: [String: WebSessionRecord], issuer: String, subject: String?, providerSessionID: String?) -> [WebSessionRecord] {
        guard subject != nil || providerSessionID != nil else { return [] }
        return sessions.values.filter { record in
            record.issuer == issuer && (subject.map { record.subject == $0 } ?? true)
                && (providerSessionID.map { record.providerSessionID == $0 } ?? true)
        }
    }

    /// See ``WebSessionStore/insert(_:)``.
    public func insert(_ pending: PendingSignIn) {
        let capacity = capacity
        state.withLock { state in
            let key = pending.request.state
            if state.pending.updateValue(pending, forKey: key) == nil { state.pendingOrder.append(key) }
            while state.pending.count > capacity, state.pendingHead < state.pendingOrder.count {
                state.pending[state.pendingOrder[state.pendingHead]] = nil
                state.pendingHead += 1
            }
            // The order list keeps about twice the live entries at most (taken sign-ins stay in
            // it until a compaction).
            if (state.pendingHead > 1024 && state.pendingHead * 2 > state.pendingOrder.count)
                || state.pendingOrder.count - state.pendingHead > 2 * state.pending.count + 1024
            {
                let live = state.pending
                state.pendingOrder = state.pendingOrder[state.pendingHead...].filter { live[$0] != nil }
                state.pendingHead = 0
            }
        }
    }

    /// See ``WebSessionStore/takePendingSignIn(state:now:)``.
    public func takePendingSignIn(state key: String, now: Date) -> PendingSignIn? {
        state.withLock { state in
            guard let found = state.pending.removeValue(forKey: key), found.expiresAt > now else { return nil }
            return found
        }
    }
}
