#if Postgres
import Metrics

/// What a ``PostgresTokenStore`` reports through swift-metrics: no-ops until the
/// application bootstraps a metrics backend (`MetricsSystem.bootstrap`) — before it makes
/// the store, since the store makes its metrics when it is made.
///
/// Every metric carries the dimension `schema`:
/// - `oauth2_postgres_lock_wait_seconds` (timer): how long each lock took to be granted;
/// - `oauth2_postgres_locked_writes_total`: rows written under a lock (a renewal saved, a
///   sign-in saved);
/// - `oauth2_postgres_cache_hits_total`, `oauth2_postgres_cache_misses_total`: loads outside
///   a lock answered by the cache, and those that read the database;
/// - `oauth2_postgres_conflicts_total`: compare-and-set writes refused;
/// - `oauth2_postgres_notifications_total`: notifications received;
/// - `oauth2_postgres_listener_drops_total`: listener connections lost (each empties the cache).
struct StoreMetrics: Sendable {
    let lockWaits: Metrics.Timer
    let lockedWrites: Counter
    let cacheHits: Counter
    let cacheMisses: Counter
    let conflicts: Counter
    let notifications: Counter
    let listenerDrops: Counter

    init(schema: String) {
        let dimensions = [("schema", schema)]
        lockWaits = Metrics.Timer(label: "oauth2_postgres_lock_wait_seconds", dimensions: dimensions)
        lockedWrites = Counter(label: "oauth2_postgres_locked_writes_total", dimensions: dimensions)
        cacheHits = Counter(label: "oauth2_postgres_cache_hits_total", dimensions: dimensions)
        cacheMisses = Counter(label: "oauth2_postgres_cache_misses_total", dimensions: dimensions)
        conflicts = Counter(label: "oauth2_postgres_conflicts_total", dimensions: dimensions)
        notifications = Counter(label: "oauth2_postgres_notifications_total", dimensions: dimensions)
        listenerDrops = Counter(label: "oauth2_postgres_listener_drops_total", dimensions: dimensions)
    }

    func lockWait(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        lockWaits.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
    func lockedWrite() { lockedWrites.increment() }
    func cacheHit() { cacheHits.increment() }
    func cacheMiss() { cacheMisses.increment() }
    func conflict() { conflicts.increment() }
    func notification() { notifications.increment() }
    func listenerDrop() { listenerDrops.increment() }
}
#endif
