import Foundation
import OAuth2Internals

/// A ``TokenSession``'s link to a store that hears of changes made elsewhere
/// (``TokenStoreChangeObserving``): on each change, one reload of the record at a time, and
/// one more if changes came in meanwhile; when changes may have been missed, a mark that makes
/// the session read its record before it next answers.
final class StoreWatch: Sendable {
    private struct State {
        var observation: TokenStoreObservation?
        var reloading = false
        var again = false
    }
    private let state = Locked(State())

    /// Observes `key` in `store`; `reload` runs after each change (never twice at once),
    /// `revalidate` when changes may have been missed.
    func start(
        _ store: any TokenStoreChangeObserving, key: TokenSessionKey, reload: @escaping @Sendable () async -> Void,
        revalidate: @escaping @Sendable () -> Void
    ) {
        let observation = store.observeChanges(of: key) { [weak self] change in
            switch change {
            case .recordChanged: self?.changed(reload)
            case .changesMayHaveBeenMissed: revalidate()
            }
        }
        state.withLock { $0.observation = observation }
    }

    private func changed(_ reload: @escaping @Sendable () async -> Void) {
        let starts = state.withLock { state -> Bool in
            if state.reloading {
                state.again = true
                return false
            }
            state.reloading = true
            return true
        }
        guard starts else { return }
        Task {
            repeat {
                await reload()
            } while state.withLock({ state -> Bool in
                if state.again {
                    state.again = false
                    return true
                }
                state.reloading = false
                return false
            })
        }
    }
}
