import Foundation
import OAuth2Internals

/// Where an ``OAuth2Client`` keeps the latest DPoP nonce each server gave (RFC 9449 §8, §9),
/// by origin: ``MemoryDPoPNonceStore`` (the default) for one process; `PostgresDPoPNonceStore`
/// (OAuth2Postgres) for a fleet, so that a nonce one replica learnt goes into the other
/// replicas' next proofs instead of each paying a refused request (`use_dpop_nonce`) first.
///
/// Set it in ``DPoPOptions/nonceStore``. A nonce is no secret — the server sends it in the
/// clear to whoever asks — but it is only a hint: a store that cannot answer answers `nil`
/// (the request then costs at most the one retry it would have cost without the store), and
/// a store that cannot write forgets. The client checks every nonce (RFC 9449 §8.1: 1 to 1024
/// printable ASCII characters, without `"` and `\`) before it reaches the store.
///
/// An origin is `scheme://host:port` in lower case, with the default port written out
/// (`https://as.example.com:443`). Every method is safe to call concurrently.
public protocol DPoPNonceStore: Sendable {
    /// The latest nonce the server at `origin` gave, if the store knows one.
    func nonce(forOrigin origin: String) async -> String?
    /// Remembers `nonce` as the latest nonce of the server at `origin`, replacing the one
    /// before.
    func remember(_ nonce: String, forOrigin origin: String) async
}

/// A ``DPoPNonceStore`` in this process's memory: each client's own, unless its
/// ``DPoPOptions/nonceStore`` names another.
///
/// It keeps the nonces of at most ``capacity`` servers; beyond it, the server remembered first
/// is forgotten first.
public final class MemoryDPoPNonceStore: DPoPNonceStore {
    /// The most servers remembered.
    public let capacity: Int
    private let state = Locked<(nonces: [String: String], order: [String])>(([:], []))

    /// An empty store of the nonces of at most `capacity` servers (at least 1).
    public init(capacity: Int = 64) {
        self.capacity = max(1, capacity)
    }

    /// See ``DPoPNonceStore/nonce(forOrigin:)``.
    public func nonce(forOrigin origin: String) async -> String? {
        state.withLock { $0.nonces[origin] }
    }

    /// See ``DPoPNonceStore/remember(_:forOrigin:)``.
    public func remember(_ nonce: String, forOrigin origin: String) async {
        state.withLock { state in
            if state.nonces.updateValue(nonce, forKey: origin) == nil {
                state.order.append(origin)
                if state.order.count > capacity { state.nonces[state.order.removeFirst()] = nil }
            }
        }
    }
}
