import Foundation
import OAuth2Internals
import OAuth2JOSE

/// Where the resource server records the one-time values it has seen — the `jti` of each
/// DPoP proof (RFC 9449 §11.1) — so that a replayed one is refused.
///
/// One process: ``MemoryReplayStore``. Several replicas behind one load balancer must share
/// one store (a database table with a unique key and an expiry), or a proof refused by one
/// replica is accepted by another.
///
/// Keys are at most 128 printable ASCII characters, made by the caller (for DPoP: the key
/// thumbprint and a hash of the `jti`, never the raw client-chosen `jti`).
public protocol ReplayStore: Sendable {
    /// Records `key` until `expiresAt`, unless a record of it exists that has not expired
    /// at `now`.
    ///
    /// - Returns: `true` when the key was recorded now (its first use), `false` when a live
    ///   record was already there (a replay).
    /// - Throws: when the store cannot answer; the check then fails closed (the proof is
    ///   refused as ``AccessTokenError/Code/temporarilyUnavailable``).
    func insertIfAbsent(_ key: String, expiresAt: Date, now: Date) async throws -> Bool
}

/// A ``ReplayStore`` in this process's memory, bounded.
///
/// Expired records are dropped when the store is full; if it is still full then, a new key
/// is refused with ``Full`` rather than forgetting a live record (which would let that
/// proof be replayed): the store fails closed.
public final class MemoryReplayStore: ReplayStore {
    /// The store is full of live records.
    public struct Full: Error, Sendable, CustomStringConvertible {
        /// What happened.
        public var description: String { "The replay store is full of live records." }
    }

    /// The most records kept.
    public let capacity: Int
    private let records: Locked<[String: Date]>

    /// Creates an empty store holding at most `capacity` records (100 000 by default).
    public init(capacity: Int = 100_000) {
        self.capacity = max(1, capacity)
        records = Locked([:])
    }

    /// The number of records (expired ones included until they are purged).
    public var count: Int { records.withLock { $0.count } }

    /// See ``ReplayStore/insertIfAbsent(_:expiresAt:now:)``.
    public func insertIfAbsent(_ key: String, expiresAt: Date, now: Date) async throws -> Bool {
        try records.withLock { records throws(Full) -> Bool in
            if let existing = records[key], existing > now { return false }
            if records[key] == nil, records.count >= capacity {
                records = records.filter { $0.value > now }
                guard records.count < capacity else { throw Full() }
            }
            records[key] = expiresAt
            return true
        }
    }
}
