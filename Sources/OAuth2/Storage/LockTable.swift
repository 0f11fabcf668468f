import Foundation

/// The locks of a store, one per name, created on first use and kept for the life of the
/// store.
package final class LockTable: @unchecked Sendable {
    /// An empty table.
    package init() {}

    private let mutex = NSLock()
    private var shared: [String: ProcessSharedLock] = [:]  // guarded by mutex
    private var local: [String: AsyncLock] = [:]  // guarded by mutex

    /// The lock that processes share through the lock file at `path`.
    package func lock(_ path: String) -> ProcessSharedLock {
        mutex.withLock {
            if let lock = shared[path] { return lock }
            let lock = ProcessSharedLock(path: path)
            shared[path] = lock
            return lock
        }
    }

    /// A lock for the tasks of this process only.
    package func asyncLock(_ name: String) -> AsyncLock {
        mutex.withLock {
            if let lock = local[name] { return lock }
            let lock = AsyncLock()
            local[name] = lock
            return lock
        }
    }
}
