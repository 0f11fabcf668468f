import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import OAuth2Internals

/// An exclusive lock that several processes share through a lock file (`flock(2)`), and
/// that tasks of one process share too.
///
/// `flock` locks belong to an open file description, so every acquisition opens the file
/// anew; tasks of this process first queue on an ``AsyncLock`` (fair, cancellable), so
/// that only one of them at a time waits for the file lock. When another process holds
/// the lock, the wait runs on a dedicated thread — never on a thread of the cooperative
/// pool — and a cancelled task stops waiting at once.
///
/// The lock file is created (mode 0600) if missing and never deleted: deleting a lock file
/// while another process waits on it would let two processes in. The operating system
/// releases the lock when its holder dies, so a crashed process never leaves it held.
package final class ProcessSharedLock: Sendable {
    /// The lock file.
    public let path: String
    private let local = AsyncLock()

    /// A lock on the file at `path`; nothing is opened until ``withLock(_:)``.
    public init(path: String) {
        self.path = path
    }

    /// Runs `body` while holding the lock.
    ///
    /// - Throws: ``TokenStoreError`` (``TokenStoreError/Code/io``) when the lock file
    ///   cannot be opened or locked, `CancellationError` when the task is cancelled while
    ///   waiting, and whatever `body` throws.
    public func withLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await local.withLock {
            let descriptor = try await FileLockAcquisition.acquire(path)
            defer { FileLockAcquisition.release(descriptor) }
            return try await body()
        }
    }
}

/// One wait for a `flock`, on its own thread when the lock is taken.
private final class FileLockAcquisition: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Int32, any Error>)
        case cancelled
        case finished
    }

    private let descriptor: Int32
    private let path: String
    private let state = Locked(State.idle)

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    /// Opens `path` and locks it; returns the descriptor that holds the lock.
    static func acquire(_ path: String) async throws -> Int32 {
        try Task.checkCancellation()
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw TokenStoreError.io("open lock file", path: path, errno: errno) }
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return descriptor }
        let code = errno
        guard code == EWOULDBLOCK || code == EINTR else {
            close(descriptor)
            throw TokenStoreError.io("flock", path: path, errno: code)
        }
        let acquisition = FileLockAcquisition(descriptor: descriptor, path: path)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                acquisition.start(continuation)
            }
        } onCancel: {
            acquisition.cancel()
        }
    }

    /// Unlocks and closes a descriptor that ``acquire(_:)`` returned.
    static func release(_ descriptor: Int32) {
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    private func start(_ continuation: CheckedContinuation<Int32, any Error>) {
        let cancelled: Bool = state.withLock { state in
            if case .cancelled = state { return true }
            state = .waiting(continuation)
            return false
        }
        if cancelled {
            close(descriptor)
            continuation.resume(throwing: CancellationError())
            return
        }
        let thread = Thread { [self] in self.block() }
        thread.name = "swift-oauth2 flock"
        thread.stackSize = 64 * 1024
        thread.start()
    }

    /// On the dedicated thread: waits for the lock, then hands it over — or, when the task
    /// was cancelled meanwhile, gives it back at once.
    private func block() {
        var result: Int32
        repeat { result = flock(descriptor, LOCK_EX) } while result != 0 && errno == EINTR
        let code = errno
        let previous = state.withLock { state in
            defer { state = .finished }
            return state
        }
        guard case .waiting(let continuation) = previous else {
            // Cancelled: the continuation was resumed already.
            Self.release(descriptor)
            return
        }
        if result == 0 {
            continuation.resume(returning: descriptor)
        } else {
            close(descriptor)
            continuation.resume(throwing: TokenStoreError.io("flock", path: path, errno: code))
        }
    }

    private func cancel() {
        let previous = state.withLock { state in
            defer {
                switch state {
                case .idle, .waiting: state = .cancelled
                case .cancelled, .finished: break
                }
            }
            return state
        }
        if case .waiting(let continuation) = previous {
            // The thread still waits for the lock; it releases it when it gets it.
            continuation.resume(throwing: CancellationError())
        }
    }
}
