import Foundation
import OAuth2

/// A thread-safe counter, for stubs that answer differently on each call.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    /// The count so far.
    var current: Int { lock.withLock { value } }

    /// Counts one more, and returns the new count (1 for the first call).
    func next() -> Int {
        lock.withLock {
            value += 1
            return value
        }
    }
}

/// The ``OAuth2Error`` `body` throws, or `nil` when it succeeds or throws something else.
func oauth2Error<T>(_ body: () async throws -> T) async -> OAuth2Error? {
    do {
        _ = try await body()
        return nil
    } catch let error as OAuth2Error {
        return error
    } catch {
        return nil
    }
}
