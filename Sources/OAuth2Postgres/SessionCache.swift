#if Postgres
import OAuth2

/// The in-process cache of a ``PostgresTokenStore``: at most `capacity` sessions, the
/// oldest entry out first, or the absence of one.
///
/// It serves only while the store's notification listener is connected (`isLive`); every
/// change of that state empties it and moves ``generation`` on, and so does every
/// invalidation of a key, so that a read that started before a change cannot put what it
/// read into the cache after it (``insert(_:_:ifGeneration:)``).
struct SessionCache {
    struct Entry {
        /// The row's session; `nil` when there was no row.
        let session: StoredTokenSession?
        /// The row's version (`0` when there was no row).
        let version: Int64
        /// The session key's lock id, which notifications name.
        let lockID: Int64
    }

    let capacity: Int
    private(set) var entries: [TokenSessionKey: Entry] = [:]
    /// Keys in insertion order (with stale duplicates, dropped lazily).
    private var order: [TokenSessionKey] = []
    private var orderStart = 0
    /// Moves on at every invalidation, emptying, and listener change.
    private(set) var generation: UInt64 = 0
    /// Whether the listener is connected, so that notifications reach the cache.
    private(set) var isLive = false

    init(capacity: Int) { self.capacity = capacity }

    /// The cached entry of `key`, when the cache serves.
    func lookup(_ key: TokenSessionKey) -> Entry? {
        guard isLive, capacity > 0 else { return nil }
        return entries[key]
    }

    /// Keeps what a read of `key` found, if nothing changed since `generation` was read.
    mutating func insert(_ key: TokenSessionKey, _ entry: Entry, ifGeneration expected: UInt64) {
        guard isLive, capacity > 0, expected == generation else { return }
        if entries.updateValue(entry, forKey: key) == nil { order.append(key) }
        while entries.count > capacity, orderStart < order.count {
            let oldest = order[orderStart]
            orderStart += 1
            entries[oldest] = nil
        }
        if orderStart > 64, orderStart * 2 > order.count {
            order.removeFirst(orderStart)
            orderStart = 0
            // Keys removed by an invalidation may still be listed: keep the live ones only.
            order.removeAll { entries[$0] == nil }
        }
    }

    /// Forgets the entries of the session keys whose lock id is `lockID` (what a
    /// notification names).
    mutating func invalidate(lockID: Int64) {
        generation &+= 1
        for (key, entry) in entries where entry.lockID == lockID { entries[key] = nil }
    }

    /// Forgets everything.
    mutating func removeAll() {
        generation &+= 1
        entries = [:]
        order = []
        orderStart = 0
    }

    /// The listener connected (`true`) or dropped (`false`): either way the cache empties.
    mutating func setLive(_ live: Bool) {
        isLive = live
        removeAll()
    }
}
#endif
