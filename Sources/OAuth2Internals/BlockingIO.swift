import Dispatch

/// Runs blocking work (file system calls, `fsync`, keyring IPC) on Dispatch's global
/// queues, never on a thread of Swift concurrency's cooperative pool, which must not block.
/// Calls that may block for long — waiting for a lock another process holds — get a
/// dedicated thread instead (`ProcessSharedLock` in `OAuth2`).
package enum BlockingIO {
    package static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try body() })
            }
        }
    }
}
