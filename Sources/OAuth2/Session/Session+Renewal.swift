import Foundation
import Logging

// Single-flight renewal: the first caller that finds the token due starts one renewal
// (a flight); every caller, the first included, waits for it on a continuation of its own,
// so that a cancelled caller can leave without cancelling the renewal the others wait for.
// All of it runs outside the actor, under `SessionState`'s lock: the waiters of a burst
// join, and later resume, in parallel.

extension Session {
    /// Returns fresh tokens, renewing them in one shared flight if needed. `rejected` is an
    /// access token a resource server refused, or the current one for a forced renewal.
    nonisolated func renew(rejecting rejected: String?) async throws -> TokenSet {
        let now = baseClient.now()
        enum Entry { case answered(Result<TokenSet, OAuth2Error>), wait(id: UInt64) }
        let entry: Entry = state.locked { state in
            // Another caller may have renewed meanwhile.
            if let snapshot = state.current, snapshot.tokens.accessToken != rejected, now < snapshot.expiry.renewAt {
                return .answered(.success(snapshot.tokens))
            }
            if let backoff = state.backoff, now < backoff.until {
                if rejected == nil, let tokens = Self.unexpired(state.current, at: now) { return .answered(.success(tokens)) }
                var error = backoff.error
                error.retryAfter = backoff.until.timeIntervalSince(now)
                return .answered(.failure(error))
            }
            state.nextWaiterID &+= 1
            return .wait(id: state.nextWaiterID)
        }
        let id: UInt64
        switch entry {
        case .answered(let result): return try result.get()
        case .wait(let waiterID): id = waiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TokenSet, any Error>) in
                enum Join { case cancelled, joined, started(Renewer) }
                let join: Join = state.locked { state in
                    // Checked under the lock that `cancelWaiter` takes: a cancellation
                    // is seen here or finds the waiter there.
                    if Task.isCancelled { return .cancelled }
                    var join = Join.joined
                    if state.flight == nil {
                        state.flight = SessionState.Flight(epoch: state.epoch)
                        join = .started(makeRenewer(memory: state.current?.tokens, rejecting: rejected))
                    }
                    state.flight?.waiters[id] = SessionState.Waiter(continuation: continuation, rejected: rejected)
                    return join
                }
                switch join {
                case .cancelled: continuation.resume(throwing: Self.waitCancelled)
                case .started(let renewer): launch(renewer)
                case .joined: break
                }
            }
        } onCancel: {
            cancelWaiter(id)
        }
    }

    private nonisolated func makeRenewer(memory: TokenSet?, rejecting rejected: String?) -> Renewer {
        Renewer(key: key, client: baseClient, dpop: dpop, store: store, options: options, memory: memory, rejected: rejected)
    }

    /// Runs a renewal in a task of its own: not a child of any caller's task, so that
    /// cancelling callers never cancels the renewal.
    private nonisolated func launch(_ renewer: Renewer) {
        Task {
            let result: Result<Renewer.Outcome, any Error>
            do {
                result = .success(try await renewer.run())
            } catch {
                result = .failure(error)
            }
            finish(result)
        }
    }

    private nonisolated func finish(_ result: Result<Renewer.Outcome, any Error>) {
        let now = baseClient.now()
        var resumptions: [(SessionState.Waiter, Result<TokenSet, any Error>)] = []
        var restart: Renewer?
        var note: (level: Logger.Level, message: String)?
        state.locked { state in
            guard let flight = state.flight else { return }
            state.flight = nil
            // A sign-in or sign-out during the renewal decides the tokens; the renewal only
            // answers its callers.
            let current = flight.epoch == state.epoch
            // In arrival order: fair, and the order a task group spawned its callers in, which
            // its runtime removes finished children fastest in (random order costs it O(n²)).
            let waiters = flight.waiters.sorted { $0.key < $1.key }.map(\.value)

            switch result {
            case .success(.renewed(let tokens, let fromServer)):
                if current {
                    state.backoff = nil
                    let previous = state.current?.tokens
                    state.current = .init(tokens: tokens, expiry: TokenExpiry(tokens, leeway: options.leeway))
                    if previous != nil, previous != tokens { broadcaster.emit(.refreshed(tokens)) }
                    note = (.debug, fromServer ? "renewed at the token endpoint" : "took the stored tokens")
                }
                guard let tokens = state.current?.tokens else {
                    resumptions = waiters.map { ($0, .failure(Self.noTokens)) }
                    return
                }
                // A caller whose refused token came back from the store (it looked fresh
                // there) needs a renewal of its own. From the server, the same token is the answer.
                var unsatisfied: [SessionState.Waiter] = []
                for waiter in waiters {
                    if !fromServer, waiter.rejected == tokens.accessToken {
                        unsatisfied.append(waiter)
                    } else {
                        resumptions.append((waiter, .success(tokens)))
                    }
                }
                if let first = unsatisfied.first {
                    var next = SessionState.Flight(epoch: state.epoch)
                    for waiter in unsatisfied {
                        state.nextWaiterID &+= 1
                        next.waiters[state.nextWaiterID] = waiter
                    }
                    state.flight = next
                    restart = makeRenewer(memory: tokens, rejecting: first.rejected)
                }

            case .success(.unsaved(let tokens, let error)):
                // The server's answer is kept in memory (it may hold the only live refresh
                // token); the next renewal saves it.
                if current {
                    state.backoff = nil
                    state.current = .init(tokens: tokens, expiry: TokenExpiry(tokens, leeway: options.leeway))
                    broadcaster.emit(.refreshed(tokens))
                }
                note = (.warning, "renewed, but the store did not save the tokens")
                resumptions = waiters.map { ($0, .failure(error)) }

            case .success(.signedOut(let error)):
                if current {
                    state.epoch &+= 1
                    state.backoff = nil
                    state.current = nil
                    broadcaster.emit(.signedOut(error))
                    note = (.debug, "the server refused the refresh token; tokens removed")
                }
                resumptions = waiters.map { ($0, .failure(error)) }

            case .success(.unavailable(let error)):
                resumptions = waiters.map { ($0, .failure(error)) }

            case .failure(let error):
                guard let error = error as? OAuth2Error else {
                    resumptions = waiters.map { ($0, .failure(error)) }  // the store's own error, passed through
                    return
                }
                if current { broadcaster.emit(.refreshFailed(error)) }
                note = (.debug, "renewal failed (\(error.code)); tokens kept")
                if error.isTransient, let retryAfter = error.retryAfter, retryAfter > 0 {
                    state.backoff = (now.addingTimeInterval(retryAfter), error)
                }
                let unexpired = error.isTransient ? Self.unexpired(state.current, at: now) : nil
                for waiter in waiters {
                    if waiter.rejected == nil, let unexpired {
                        resumptions.append((waiter, .success(unexpired)))
                    } else {
                        resumptions.append((waiter, .failure(error)))
                    }
                }
            }
        }
        if let note { baseClient.logger.log(level: note.level, "session \(key): \(note.message)") }
        for (waiter, result) in resumptions { waiter.continuation.resume(with: result) }
        if let restart { launch(restart) }
    }

    private nonisolated func cancelWaiter(_ id: UInt64) {
        let waiter = state.locked { $0.flight?.waiters.removeValue(forKey: id) }
        waiter?.continuation.resume(throwing: Self.waitCancelled)
    }

    /// The tokens in hand if the access token has not expired yet (it may be in the leeway).
    private static func unexpired(_ snapshot: SessionState.Snapshot?, at now: Date) -> TokenSet? {
        guard let snapshot else { return nil }
        if let expiresAt = snapshot.expiry.expiresAt, expiresAt <= now { return nil }
        return snapshot.tokens
    }

    static var waitCancelled: OAuth2Error {
        OAuth2Error(.cancelled, source: .client, message: "Cancelled while waiting for the token renewal; the session keeps its tokens.")
    }

    static var noTokens: OAuth2Error {
        OAuth2Error(.signInRequired, source: .client, message: "The session has no tokens: sign in.")
    }
}

/// One renewal, run outside the session's actor under the store's exclusive lock: re-read
/// the record, renew only if the stored token still needs it, save before returning.
struct Renewer: Sendable {
    enum Outcome: Sendable {
        /// Fresh tokens, saved: from the server, or found in the store.
        case renewed(TokenSet, fromServer: Bool)
        /// Fresh tokens from the server that the store failed to save.
        case unsaved(TokenSet, any Error)
        /// The server refused the grant; the record is removed.
        case signedOut(OAuth2Error)
        /// Nothing to renew with (no tokens, no refresh token); nothing changed.
        case unavailable(OAuth2Error)
    }

    let key: SessionKey
    /// The session's client, before its DPoP key is settled.
    let client: OAuth2Client
    /// The session's DPoP options; a key stored with the record wins.
    let dpop: SessionDPoP
    let store: any TokenStore
    let options: Session.Options
    /// The session's tokens when the renewal started.
    let memory: TokenSet?
    /// An access token that must not be returned (refused by a resource server, or forced).
    let rejected: String?

    func run() async throws -> Outcome {
        try await store.withExclusiveAccess(to: key) {
            let stored = try await store.load(key)
            // Tokens bound to a stored DPoP key are renewed with that key.
            let dpopOptions = dpop.adopt(stored, logger: self.client.logger)
            let client = self.client.withDPoP(dpopOptions)
            let newest = Self.newest(stored?.tokens, memory)
            if let newest, newest.accessToken != rejected,
                client.now() < TokenExpiry(newest, leeway: options.leeway).renewAt
            {
                return .renewed(newest, fromServer: false)  // another session or process renewed it
            }
            let renewed: TokenSet
            switch options.renewal {
            case .refreshToken:
                guard let newest else {
                    return .unavailable(Session.noTokens)
                }
                guard newest.refreshToken != nil else {
                    return .unavailable(
                        OAuth2Error(.signInRequired, source: .client, message: "The access token expired and there is no refresh token: sign in again."))
                }
                do {
                    renewed = try await client.refresh(newest)
                } catch let error as OAuth2Error where error.requiresReauthorization {
                    do {
                        try await store.remove(key)
                    } catch {
                        client.logger.warning("session \(key): the refused tokens could not be removed from the store")
                    }
                    return .signedOut(Self.refused(error))
                }
            case .clientCredentials(let scopes):
                renewed = try await client.clientCredentials(scopes: scopes)
            }
            var record = stored ?? StoredSession(key: key, tokens: renewed)
            record.tokens = renewed
            record.updatedAt = client.now()
            if let dpopKey = dpopOptions?.key { record.setDPoPKey(dpopKey) }
            do {
                try await store.save(record)
            } catch {
                return .unsaved(renewed, error)
            }
            return .renewed(renewed, fromServer: true)
        }
    }

    /// The later of two token sets (the store's wins a tie).
    static func newest(_ stored: TokenSet?, _ memory: TokenSet?) -> TokenSet? {
        guard let stored else { return memory }
        guard let memory else { return stored }
        return memory.issuedAt > stored.issuedAt ? memory : stored
    }

    /// `sign_in_required`, carrying the server's refusal.
    static func refused(_ error: OAuth2Error) -> OAuth2Error {
        OAuth2Error(
            .signInRequired,
            source: error.source,
            message: "The server refused the refresh token (\(error.serverCode ?? error.code.rawValue)); the session's tokens were removed: sign in again.",
            uri: error.uri,
            statusCode: error.statusCode,
            serverCode: error.serverCode ?? error.code.rawValue,
            underlyingError: error)
    }
}
