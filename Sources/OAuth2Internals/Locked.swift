#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if canImport(Darwin)
@usableFromInline package typealias LockPrimitive = os_unfair_lock
#else
@usableFromInline package typealias LockPrimitive = pthread_mutex_t
#endif

/// A value and the lock that guards it, in one allocation (the shape of SwiftNIO's
/// `NIOLockedValueBox`, whose storage is a `ManagedBuffer` with the lock as its element).
/// Copies share the value.
///
/// Hand-written because the core module takes no SwiftNIO, and `Synchronization.Mutex`
/// needs newer Apple platforms than the package supports. Unlike a class holding an
/// `NSLock`, it costs no second object: only the lock primitive itself.
package struct Locked<Value>: @unchecked Sendable {
    /// The value and the lock.
    @usableFromInline package let storage: LockedStorage<Value>

    /// A new box holding `value`.
    @inlinable package init(_ value: Value) {
        storage = LockedStorage.make(value)
    }

    /// Runs `body` on the value, holding the lock. `body` must not suspend or take the
    /// lock again.
    @inline(__always)
    @inlinable package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try storage.withLock(body)
    }
}

/// The storage of ``Locked``: the value as the header, the lock primitive as the one element.
@usableFromInline package final class LockedStorage<Value>: ManagedBuffer<Value, LockPrimitive> {
    @usableFromInline static func make(_ value: Value) -> LockedStorage<Value> {
        let buffer = create(minimumCapacity: 1) { _ in value }
        let storage = unsafeDowncast(buffer, to: LockedStorage<Value>.self)
        storage.withUnsafeMutablePointerToElements { lock in
            #if canImport(Darwin)
            lock.initialize(to: os_unfair_lock())
            #else
            lock.initialize(to: pthread_mutex_t())
            var attributes = pthread_mutexattr_t()
            pthread_mutexattr_init(&attributes)
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_NORMAL))
            let error = pthread_mutex_init(lock, &attributes)
            pthread_mutexattr_destroy(&attributes)
            precondition(error == 0, "pthread_mutex_init failed: \(error)")
            #endif
        }
        return storage
    }

    deinit {
        withUnsafeMutablePointerToElements { lock in
            #if !canImport(Darwin)
            pthread_mutex_destroy(lock)
            #endif
            _ = lock.deinitialize(count: 1)
        }
    }

    @inlinable
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try withUnsafeMutablePointers { value, lock in
            #if canImport(Darwin)
            os_unfair_lock_lock(lock)
            defer { os_unfair_lock_unlock(lock) }
            #else
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            #endif
            return try body(&value.pointee)
        }
    }
}
