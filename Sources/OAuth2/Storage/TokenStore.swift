import Foundation
import OAuth2Internals

/// Names one signed-in identity: the issuer, the client and the account (OktaOidc's
/// composite key). Several sessions — accounts, tenants, clients — live side by side in
/// one store under different keys.
public struct SessionKey: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The authorization server's issuer identifier.
    public var issuer: String
    /// The client identifier.
    public var clientID: String
    /// The account within that client: a profile name, a user name, or `default`.
    public var account: String

    /// Creates a key.
    public init(issuer: String, clientID: String, account: String = "default") {
        self.issuer = issuer
        self.clientID = clientID
        self.account = account
    }

    /// `account@clientID (issuer)`.
    public var description: String { "\(account)@\(clientID) (\(issuer))" }
}

/// What a ``TokenStore`` keeps for one session: its tokens and what is needed to use them
/// again after a restart.
///
/// Members this version does not know (written by a newer one) are kept in
/// ``additionalFields`` and written back unchanged.
public struct StoredSession: Sendable, Hashable, Codable {
    /// Whose session this is.
    public var key: SessionKey
    /// The current tokens.
    public var tokens: TokenSet
    /// The `sub` of the first ID token, which every later ID token must repeat
    /// (OIDC Core §12.2); `nil` without OpenID Connect.
    public var subject: String?
    /// When this record was last written.
    public var updatedAt: Date
    /// Members written by other versions, or by features and programs that store their own
    /// state beside the tokens (a DPoP key; the `oauth2` tool's client secret), kept as they are.
    public var additionalFields: [String: JSONValue]

    /// Creates a record.
    public init(
        key: SessionKey,
        tokens: TokenSet,
        subject: String? = nil,
        updatedAt: Date = Date(),
        additionalFields: [String: JSONValue] = [:]
    ) {
        self.key = key
        self.tokens = tokens
        self.subject = subject
        self.updatedAt = updatedAt
        self.additionalFields = additionalFields
    }
}

/// Where sessions are kept between runs.
///
/// Implementations: ``MemoryTokenStore``; ``FileTokenStore`` (a protected directory,
/// atomic writes, shared by processes through lock files, optionally encrypted);
/// `SecretServiceTokenStore` in `OAuth2SecretService` (the desktop keyring); and
/// `KeychainTokenStore` on Apple platforms. All of them keep a session as the same
/// versioned JSON document.
///
/// Every method is safe to call concurrently. A store never loses a record: a failed
/// write leaves the previous one in place. Stores throw ``TokenStoreError``.
public protocol TokenStore: Sendable {
    /// The record for `key`, or `nil` when there is none.
    func load(_ key: SessionKey) async throws -> StoredSession?
    /// Writes `session` under `session.key`, replacing any previous record.
    func save(_ session: StoredSession) async throws
    /// Removes the record for `key`; removing a missing record is not an error.
    func remove(_ key: SessionKey) async throws
    /// The keys of every stored session.
    func list() async throws -> [SessionKey]
    /// Runs `body` while holding the store's exclusive lock for `key`, so that a
    /// read-refresh-write sequence runs once at a time — across processes, for stores
    /// that several processes share.
    ///
    /// `body` may call ``load(_:)``, ``save(_:)`` and ``remove(_:)``; it must not call
    /// `withExclusiveAccess` for the same key again (the lock is not reentrant: that
    /// waits forever). Cancelling the task while it waits for the lock ends the wait with
    /// `CancellationError`.
    func withExclusiveAccess<T: Sendable>(
        to key: SessionKey, _ body: @Sendable () async throws -> T
    ) async throws -> T
}

/// A store that keeps sessions, and client registrations (``RegistrationStore``), in
/// memory, for the life of the process.
public actor MemoryTokenStore: TokenStore {
    /// A record behind a reference: a dictionary keeps more buckets than entries, and an
    /// empty bucket costs the size of its value — a reference, not a whole `StoredSession`.
    private final class Record: Sendable {
        let session: StoredSession
        init(_ session: StoredSession) { self.session = session }
    }

    /// The issuer and client id of a ``SessionKey``: one group of records.
    private struct Client: Hashable {
        let issuer: String
        let clientID: String

        init(_ key: SessionKey) {
            issuer = key.issuer
            clientID = key.clientID
        }
    }

    /// The records of each client, by account. A store of many sessions usually holds few
    /// clients, so each record's bucket holds only its account and a reference, not a whole
    /// key.
    private var sessions: [Client: [String: Record]] = [:]
    /// The lock of each key that some task holds or waits for, with the number of those
    /// tasks; a key's lock is dropped when the last one leaves, so that a store of many
    /// sessions keeps no lock per session.
    private var locks: [SessionKey: (lock: AsyncLock, users: Int)] = [:]
    /// The client registrations (``RegistrationStore``), by issuer and client id.
    var registrations: [String: [String: ClientRegistration]] = [:]

    /// Creates an empty store.
    public init() {}

    /// The record for `key`.
    public func load(_ key: SessionKey) -> StoredSession? { sessions[Client(key)]?[key.account]?.session }

    /// Keeps `session`.
    public func save(_ session: StoredSession) {
        // In place: the client's dictionary is not copied.
        sessions[Client(session.key), default: [:]][session.key.account] = Record(session)
    }

    /// Forgets the record for `key`.
    public func remove(_ key: SessionKey) {
        let client = Client(key)
        guard sessions[client]?.removeValue(forKey: key.account) != nil else { return }
        if sessions[client]?.isEmpty == true { sessions[client] = nil }
    }

    /// The keys of every record, sorted.
    public func list() -> [SessionKey] {
        sessions.values.flatMap { $0.values.map(\.session.key) }
            .sorted { ($0.issuer, $0.clientID, $0.account) < ($1.issuer, $1.clientID, $1.account) }
    }

    /// How many clients have records now (for tests: a client's last removal drops its group).
    package var clientCount: Int { sessions.count }

    /// Runs `body` holding this process's lock for `key`.
    public func withExclusiveAccess<T: Sendable>(
        to key: SessionKey, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let lock = checkOut(key)
        defer { checkIn(key) }
        return try await lock.withLock(body)
    }

    /// The lock of `key`, counting the caller among its users.
    private func checkOut(_ key: SessionKey) -> AsyncLock {
        if let entry = locks[key] {
            locks[key] = (entry.lock, entry.users + 1)
            return entry.lock
        }
        let lock = AsyncLock()
        locks[key] = (lock, 1)
        return lock
    }

    /// The caller no longer holds or waits for the lock of `key`.
    private func checkIn(_ key: SessionKey) {
        guard let entry = locks[key] else { return }
        locks[key] = entry.users > 1 ? (entry.lock, entry.users - 1) : nil
    }

    /// How many keys have a lock now (for tests: idle keys have none).
    package var lockCount: Int { locks.count }
}
