import Foundation
import OAuth2Internals

/// The locks of a store, one per name, created on first use and kept for the life of the
/// store.
package final class LockTable: Sendable {
    /// An empty table.
    package init() {}

    private let shared = Locked<[String: ProcessSharedLock]>([:])
    private let local = Locked<[String: AsyncLock]>([:])

    /// The lock that processes share through the lock file at `path`.
    package func lock(_ path: String) -> ProcessSharedLock {
        shared.withLock { shared in
            if let lock = shared[path] { return lock }
            let lock = ProcessSharedLock(path: path)
            shared[path] = lock
            return lock
        }
    }

    /// A lock for the tasks of this process only.
    package func asyncLock(_ name: String) -> AsyncLock {
        local.withLock { local in
            if let lock = local[name] { return lock }
            let lock = AsyncLock()
            local[name] = lock
            return lock
        }
    }
}
