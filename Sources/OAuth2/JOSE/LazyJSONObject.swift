#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a ``LazyJSONObject`` holds.
struct LazyJSONObjectState {
    /// The document's bytes; empty once decoded or when made from a dictionary.
    var bytes: [UInt8]
    /// The decoded object, once asked for.
    var object: [String: JSONValue]?
}

#if canImport(Darwin)
typealias LazyJSONObjectLock = os_unfair_lock
#else
typealias LazyJSONObjectLock = pthread_mutex_t
#endif

/// A JSON object kept as the bytes the strict parser already accepted, decoded into a
/// dictionary the first time someone asks (then kept): the ID-token hot path reads the
/// few members it checks in one pass over the bytes, and the raw set costs nothing until
/// it is used.
///
/// One allocation: the state lives in the header of a `ManagedBuffer`, the lock in its one
/// tail element (a stable address, as a lock needs). Sendable because every access to the
/// state holds the lock.
struct LazyJSONObject: @unchecked Sendable {
    private let storage: LazyJSONObjectStorage

    /// Bytes that ``StrictJSON/parseObject(_:)`` accepts (the caller checked them).
    static func make(checkedBytes bytes: [UInt8]) -> LazyJSONObject {
        LazyJSONObject(storage: .make(LazyJSONObjectState(bytes: bytes, object: nil)))
    }

    /// An object already decoded.
    static func make(_ object: [String: JSONValue]) -> LazyJSONObject {
        LazyJSONObject(storage: .make(LazyJSONObjectState(bytes: [], object: object)))
    }

    /// The object, decoded on first use.
    var object: [String: JSONValue] { storage.object }

    /// Whether both hold the same storage (then they are equal without decoding).
    func isIdentical(to other: LazyJSONObject) -> Bool { storage === other.storage }
}

final class LazyJSONObjectStorage: ManagedBuffer<LazyJSONObjectState, LazyJSONObjectLock> {
    static func make(_ state: LazyJSONObjectState) -> LazyJSONObjectStorage {
        let buffer = unsafeDowncast(create(minimumCapacity: 1) { _ in state }, to: LazyJSONObjectStorage.self)
        buffer.withUnsafeMutablePointerToElements { lock in
            #if canImport(Darwin)
            lock.initialize(to: os_unfair_lock())
            #else
            lock.initialize(to: pthread_mutex_t())
            pthread_mutex_init(lock, nil)
            #endif
        }
        return buffer
    }

    deinit {
        withUnsafeMutablePointerToElements { lock in
            #if !canImport(Darwin)
            pthread_mutex_destroy(lock)
            #endif
            _ = lock.deinitialize(count: 1)
        }
    }

    var object: [String: JSONValue] {
        withUnsafeMutablePointers { state, lock in
            #if canImport(Darwin)
            os_unfair_lock_lock(lock)
            defer { os_unfair_lock_unlock(lock) }
            #else
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            #endif
            if let object = state.pointee.object { return object }
            // The bytes passed the same parser when the token was read, so this cannot fail;
            // an empty object would only hide a bug, never accept a token.
            let parsed = try? StrictJSON.parseObject(state.pointee.bytes)
            assert(parsed != nil, "bytes the strict parser refuses reached LazyJSONObject")
            let object = parsed ?? [:]
            state.pointee.object = object
            state.pointee.bytes = []
            return object
        }
    }
}
