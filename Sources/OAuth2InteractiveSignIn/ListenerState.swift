import Foundation
import OAuth2Internals
import OAuth2JOSE
import NIOCore
import NIOHTTP1
import NIOPosix
import OAuth2

/// The listener's shared state: callbacks waiting to be judged, the one waiter, the open
/// connections.
final class ListenerState: Sendable {
    private struct Inner {
        var queue: [PendingCallback] = []
        var waiter: CheckedContinuation<PendingCallback?, Never>?
        var waiting = false
        var closed = false
        var connections: [ObjectIdentifier: any Channel] = [:]
        var allowedAuthorities: Set<String> = []
        var base: URL?
    }

    private let inner = Locked(Inner())

    /// Sets the redirect URI callbacks are reported under, and the `Host` values accepted.
    func configure(base: URL, authorities: Set<String>) {
        inner.withLock {
            $0.base = base
            $0.allowedAuthorities = authorities
        }
    }

    /// `true` when `origin` (an `Origin` header) is this listener's own.
    func isOwnOrigin(_ origin: String) -> Bool {
        inner.withLock { inner in
            let lowered = origin.lowercased()
            return lowered.hasPrefix("http://") && inner.allowedAuthorities.contains(String(lowered.dropFirst("http://".count)))
        }
    }

    /// The callback URL for a request target (`/callback?code=…`), on the redirect URI's
    /// origin; `nil` when `authority` (the `Host` header) does not name this listener.
    func callbackURL(authority: String, target: String) -> URL? {
        let base = inner.withLock { $0.allowedAuthorities.contains(authority.lowercased()) ? $0.base : nil }
        guard let base, var components = URLComponents(url: base, resolvingAgainstBaseURL: false) else { return nil }
        components.path = ""
        components.query = nil
        guard let origin = components.string else { return nil }
        return URL(string: origin + target)
    }

    /// Records a new connection; `false` when the listener is closed.
    func track(_ channel: any Channel) -> Bool {
        let accepted = inner.withLock { inner -> Bool in
            guard !inner.closed else { return false }
            inner.connections[ObjectIdentifier(channel)] = channel
            return true
        }
        if accepted {
            channel.closeFuture.whenComplete { [weak self] _ in
                self?.inner.withLock { _ = $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
            }
        }
        return accepted
    }

    /// The connections accepted and not yet seen to close.
    var connections: [any Channel] {
        inner.withLock { Array($0.connections.values) }
    }

    /// Hands a callback to the waiter (or queues it); `false` when the listener is closed.
    func deliver(_ callback: PendingCallback) -> Bool {
        let waiter = inner.withLock { inner -> CheckedContinuation<PendingCallback?, Never>?? in
            guard !inner.closed else { return nil }
            if let waiter = inner.waiter {
                inner.waiter = nil
                return .some(waiter)
            }
            inner.queue.append(callback)
            return .some(nil)
        }
        guard let waiter else { return false }
        waiter?.resume(returning: callback)
        return true
    }

    /// Marks the one wait as begun; `false` when one already began or the listener is closed.
    func beginWaiting() -> Bool {
        inner.withLock { inner in
            guard !inner.waiting, !inner.closed else { return false }
            inner.waiting = true
            return true
        }
    }

    /// The next callback; `nil` when the listener closes or the task is cancelled.
    func next() async -> PendingCallback? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<PendingCallback?, Never>) in
                let immediate = inner.withLock { inner -> PendingCallback?? in
                    if !inner.queue.isEmpty { return .some(inner.queue.removeFirst()) }
                    if inner.closed || Task.isCancelled { return .some(nil) }
                    inner.waiter = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            inner.withLock { inner in
                let waiter = inner.waiter
                inner.waiter = nil
                return waiter
            }?.resume(returning: nil)
        }
    }

    /// Closes the state: returns the callbacks nobody judged and the open connections.
    func close() -> ([PendingCallback], [any Channel]) {
        let (waiter, pending, connections) = inner.withLock { inner in
            inner.closed = true
            let result = (inner.waiter, inner.queue, Array(inner.connections.values))
            inner.waiter = nil
            inner.queue = []
            return result
        }
        waiter?.resume(returning: nil)
        return (pending, connections)
    }
}
