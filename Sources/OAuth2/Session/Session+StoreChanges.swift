import Foundation

// A session on a store that hears of changes made elsewhere (``TokenStoreChangeObserving``)
// reads its record again after each one, outside the store's lock: the record is what the
// other replica committed, at least as new as the change notified. When the store may have
// missed changes, the session's tokens are marked instead: its next caller renews, and the
// renewal reads the record under the lock (no server request if it is fresh).

extension TokenSession {
    /// Starts observing the session's record, when the store can.
    func watchStore() {
        guard let watch, let store = store as? any TokenStoreChangeObserving else { return }
        watch.start(store, key: key) { [weak self] in
            await self?.reloadAfterChange()
        } revalidate: { [weak self] in
            self?.state.withLock { $0.current?.expiry.renewNow() }
        }
    }

    /// Reads the record again: tokens renewed elsewhere are adopted, a record removed
    /// elsewhere signs the session out. A renewal in flight, or a sign-in or sign-out here
    /// meanwhile, decides instead; a store that cannot answer changes nothing.
    func reloadAfterChange() async {
        let epoch = state.withLock { $0.epoch }
        let record: StoredTokenSession?
        do {
            record = try await store.load(key)
        } catch {
            baseClient.logger.debug("session \(key): the record changed elsewhere, but could not be read again; tokens kept")
            return
        }
        if let record { Self.adoptDPoP(record, state: state, client: baseClient) }
        let note: String? = state.withLock { state in
            guard state.epoch == epoch, state.flight == nil else { return nil }
            if let record {
                guard record.tokens != state.current?.tokens else { return nil }
                state.current = .init(tokens: record.tokens, expiry: TokenExpiry(record.tokens, leeway: options.leeway))
                state.backoff = nil
                state.emit(.refreshed(record.tokens))
                return "took the tokens renewed elsewhere"
            }
            guard state.current != nil else { return nil }
            state.epoch &+= 1
            state.backoff = nil
            state.current = nil
            state.emit(.signedOut(Self.signedOutElsewhere))
            return "signed out elsewhere; tokens forgotten"
        }
        if let note { baseClient.logger.debug("session \(key): \(note)") }
    }

    static var signedOutElsewhere: OAuth2Error {
        var error = OAuth2Error(
            .signInRequired, source: .client, message: "The session was signed out elsewhere (its record was removed from the shared store): sign in.")
        error.signInReason = .signedOutElsewhere
        return error
    }
}
