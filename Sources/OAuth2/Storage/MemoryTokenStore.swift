import Foundation
import OAuth2Internals

/// A store that keeps sessions, and client registrations (``RegistrationStore``), in
/// memory, for the life of the process.
public actor MemoryTokenStore: TokenStore {
    /// A record behind a reference: a dictionary keeps more buckets than entries, and an
    /// empty bucket costs the size of its value — a reference, not a whole `StoredTokenSession`.
    private final class Record: Sendable {
        let session: StoredTokenSession
        init(_ session: StoredTokenSession) { self.session = session }
    }

    /// The issuer and client id of a ``TokenSessionKey``: one group of records.
    private struct Client: Hashable {
        let issuer: String
        let clientID: String

        init(_ key: TokenSessionKey) {
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
    private var locks: [TokenSessionKey: (lock: AsyncLock, users: Int)] = [:]
    /// The client registrations (``RegistrationStore``), by issuer and client id.
    var registrations: [String: [String: ClientRegistration]] = [:]

    /// Creates an empty store.
    public init() {}

    /// The record for `key`.
    public func load(_ key: TokenSessionKey) -> StoredTokenSession? { sessions[Client(key)]?[key.account]?.session }

    /// Keeps `session`.
    public func save(_ session: StoredTokenSession) {
        // In place: the client's dictionary is not copied.
        sessions[Client(session.key), default: [:]][session.key.account] = Record(session)
    }

    /// Forgets the record for `key`.
    public func remove(_ key: TokenSessionKey) {
        let client = Client(key)
        guard sessions[client]?.removeValue(forKey: key.account) != nil else { return }
        if sessions[client]?.isEmpty == true { sessions[client] = nil }
    }

    /// The keys of every record, sorted.
    public func list() -> [TokenSessionKey] {
        sessions.values.flatMap { $0.values.map(\.session.key) }
            .sorted { ($0.issuer, $0.clientID, $0.account) < ($1.issuer, $1.clientID, $1.account) }
    }

    /// How many clients have records now (for tests: a client's last removal drops its group).
    package var clientCount: Int { sessions.count }

    /// Runs `body` holding this process's lock for `key`.
    public func withExclusiveAccess<T: Sendable>(
        to key: TokenSessionKey, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let lock = checkOut(key)
        defer { checkIn(key) }
        return try await lock.withLock(body)
    }

    /// The lock of `key`, counting the caller among its users.
    private func checkOut(_ key: TokenSessionKey) -> AsyncLock {
        if let entry = locks[key] {
            locks[key] = (entry.lock, entry.users + 1)
            return entry.lock
        }
        let lock = AsyncLock()
        locks[key] = (lock, 1)
        return lock
    }

    /// The caller no longer holds or waits for the lock of `key`.
    private func checkIn(_ key: TokenSessionKey) {
        guard let entry = locks[key] else { return }
        locks[key] = entry.users > 1 ? (entry.lock, entry.users - 1) : nil
    }

    /// How many keys have a lock now (for tests: idle keys have none).
    package var lockCount: Int { locks.count }
}
