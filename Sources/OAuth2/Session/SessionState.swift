import Foundation
import OAuth2Internals

/// A session's mutable state, behind one lock (``Locked``): its current tokens, the
/// renewal in flight with everyone waiting for it, the back-off after a transient failure,
/// the epoch, the DPoP key read from the store, and the event subscribers.
///
/// A lock, not an actor, so that the hot paths never hop: ``TokenSession/freshTokens()`` on a
/// fresh token is one lock and one clock read, and the callers of a burst join and leave the
/// renewal in parallel instead of queueing. Every critical section is short and never
/// suspends. One lock for all of it, not one per concern.
struct SessionState {
    struct Snapshot: Sendable {
        var tokens: TokenSet
        var expiry: TokenExpiry
        /// `Bearer <access token>`, made by the first ``TokenSession/authorize(_:)`` of these
        /// tokens and reused by the next ones.
        var bearerHeader: String?
    }

    /// No new request before `until`, after a transient failure with `Retry-After`.
    struct Backoff: Sendable {
        let until: Date
        let error: OAuth2Error
    }

    /// A renewal in flight.
    struct Flight {
        /// The epoch when the renewal started.
        var epoch: UInt32
    }

    /// One caller of ``TokenSession/renew(rejecting:)`` that needs the renewal's answer, in
    /// ``waiters`` at index `id - firstWaiterID`.
    enum Slot {
        /// Has a place, not yet its continuation: between taking its id and suspending.
        case reserved(rejected: String?)
        /// Suspended until the renewal in flight ends. `rejected` is the access token the
        /// caller saw refused (a 401), which it must not get back; `nil` for a caller that
        /// only found the token due.
        case waiting(UnsafeContinuation<TokenSet, any Error>, rejected: String?)
        /// Cancelled before it suspended: it throws when it gets there.
        case cancelled
        /// Answered or gone (a tombstone: the slots after it keep their ids).
        case done
    }

    // MARK: tokens

    /// The tokens in memory.
    var current: Snapshot?

    // MARK: single flight
    // (The three small fields first, so that they share 16 bytes.)

    /// Changes whenever the tokens are replaced other than by a renewal (sign-in,
    /// sign-out, a refused grant), so that a renewal started before cannot bring old
    /// tokens back. Only compared with the epoch a renewal started in: 32 bits would have to
    /// wrap around during one renewal to confuse them.
    var epoch: UInt32 = 0
    /// How many slots of `waiters` are ``Slot/reserved(rejected:)``, ``Slot/waiting(_:rejected:)``
    /// or ``Slot/cancelled`` (not `done`).
    var liveWaiters: Int32 = 0
    /// The renewal in flight, if any.
    var flight: Flight?
    /// Every caller waiting for a renewal, in arrival order (the order of their ids). A
    /// waiter that leaves becomes a tombstone (``Slot/done``), so the others keep their
    /// places; the array is emptied when a renewal ends and no caller is still between
    /// taking an id and suspending.
    var waiters: [Slot] = []
    /// The id of `waiters[0]`.
    var firstWaiterID: UInt64 = 0

    // MARK: what most sessions never have

    /// The back-off, the adopted DPoP options and the event subscribers, behind one
    /// reference that is `nil` while all of them are empty: a session that has none of them
    /// pays for one reference. Immutable, so that
    /// `SessionState` stays a value; every change makes a new one.
    private(set) var rareParts: RareParts?

    final class RareParts: Sendable {
        let backoff: Backoff?
        let adoptedDPoP: DPoPOptions?
        let subscribers: [UInt64: AsyncStream<TokenSessionEvent>.Continuation]
        let nextSubscriberID: UInt64

        init(
            backoff: Backoff?, adoptedDPoP: DPoPOptions?,
            subscribers: [UInt64: AsyncStream<TokenSessionEvent>.Continuation], nextSubscriberID: UInt64
        ) {
            self.backoff = backoff
            self.adoptedDPoP = adoptedDPoP
            self.subscribers = subscribers
            self.nextSubscriberID = nextSubscriberID
        }
    }

    /// Replaces ``rareParts`` with these members (`nil` when all are empty).
    private mutating func setRareParts(
        backoff: Backoff?, adoptedDPoP: DPoPOptions?,
        subscribers: [UInt64: AsyncStream<TokenSessionEvent>.Continuation], nextSubscriberID: UInt64
    ) {
        if backoff == nil, adoptedDPoP == nil, subscribers.isEmpty, nextSubscriberID == 0 {
            rareParts = nil
        } else {
            rareParts = RareParts(backoff: backoff, adoptedDPoP: adoptedDPoP, subscribers: subscribers, nextSubscriberID: nextSubscriberID)
        }
    }

    /// After a transient failure with `Retry-After`: no new request before `until`.
    var backoff: Backoff? {
        get { rareParts?.backoff }
        set {
            guard newValue != nil || rareParts?.backoff != nil else { return }
            setRareParts(backoff: newValue, adoptedDPoP: adoptedDPoP, subscribers: subscribers, nextSubscriberID: nextSubscriberID)
        }
    }

    /// The DPoP options of a key stored with the tokens, once the session has read a
    /// record whose key differs from the client's; `nil` while the client's own options
    /// are in force.
    var adoptedDPoP: DPoPOptions? {
        get { rareParts?.adoptedDPoP }
        set { setRareParts(backoff: backoff, adoptedDPoP: newValue, subscribers: subscribers, nextSubscriberID: nextSubscriberID) }
    }

    /// The streams of ``TokenSession/events()``, by id.
    var subscribers: [UInt64: AsyncStream<TokenSessionEvent>.Continuation] {
        get { rareParts?.subscribers ?? [:] }
        set { setRareParts(backoff: backoff, adoptedDPoP: adoptedDPoP, subscribers: newValue, nextSubscriberID: nextSubscriberID) }
    }

    /// The id of the latest subscriber. Never goes back (a session that had a subscriber
    /// keeps its ``RareParts`` for it), so an id is never reused.
    var nextSubscriberID: UInt64 {
        get { rareParts?.nextSubscriberID ?? 0 }
        set { setRareParts(backoff: backoff, adoptedDPoP: adoptedDPoP, subscribers: subscribers, nextSubscriberID: newValue) }
    }

    // MARK: events

    /// Hands `event` to every subscriber; called under the lock so that events reach every
    /// subscriber in the order the tokens changed.
    func emit(_ event: TokenSessionEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    // MARK: waiters

    /// A new slot at the end; returns its id.
    mutating func reserveWaiter(rejected: String?) -> UInt64 {
        if liveWaiters == 0, !waiters.isEmpty {
            firstWaiterID &+= UInt64(waiters.count)
            waiters.removeAll(keepingCapacity: true)
        }
        waiters.append(.reserved(rejected: rejected))
        liveWaiters += 1
        return firstWaiterID &+ UInt64(waiters.count - 1)
    }

    /// The index of waiter `id` in ``waiters``, if it is still there.
    func index(of id: UInt64) -> Int? {
        guard id >= firstWaiterID else { return nil }
        let offset = id - firstWaiterID
        return offset < UInt64(waiters.count) ? Int(offset) : nil
    }

    /// Marks waiter `index` gone (a renewal's end compacts the array afterwards).
    mutating func retire(_ index: Int) {
        waiters[index] = .done
        liveWaiters -= 1
    }

    /// Marks waiter `index` gone outside a renewal's end (an answer found on the way in, a
    /// cancellation): the last one to leave while no renewal is in flight frees the array.
    mutating func leave(_ index: Int) {
        retire(index)
        if liveWaiters == 0, flight == nil { compactWaiters() }
    }

    /// Drops the slots before the first one still in use (their ids are never looked up
    /// again); frees the array when none is.
    mutating func compactWaiters() {
        if liveWaiters == 0 {
            firstWaiterID &+= UInt64(waiters.count)
            waiters = []
            return
        }
        guard let first = waiters.firstIndex(where: { if case .done = $0 { false } else { true } }), first > 0 else { return }
        waiters.removeFirst(first)
        firstWaiterID &+= UInt64(first)
    }
}

extension Locked where Value == SessionState {
    /// The current tokens (takes the lock).
    var snapshot: SessionState.Snapshot? { withLock { $0.current } }
}
