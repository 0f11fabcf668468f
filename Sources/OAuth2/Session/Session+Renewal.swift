import Foundation
import Logging

// Single-flight renewal: the first caller that finds the token due starts one renewal
// (a `Flight`); every caller, the first included, waits for it on a continuation of its own,
// so that a cancelled caller can leave without cancelling the renewal the others wait for.

extension Session {
    struct Flight {
        /// The session's epoch when the renewal started.
        var epoch: UInt64
        var waiters: [UInt64: Waiter] = [:]
    }

    struct Waiter {
        var continuation: CheckedContinuation<TokenSet, any Error>
        /// The access token the caller saw refused (a 401), which it must not get back;
        /// `nil` for a caller that only found the token due.
        var rejected: String?
    }

    /// Returns fresh tokens, renewing them in one shared flight if needed. `rejected` is an
    /// access token a resource server refused, or the current one for a forced renewal.
    func renew(rejecting rejected: String?) async throws -> TokenSet {
        let now = client.now()
        // Another caller may have renewed while this one waited to enter the actor.
        if let snapshot = state.snapshot, snapshot.tokens.accessToken != rejected, now < snapshot.expiry.renewAt {
            return snapshot.tokens
        }
        if let backoff, now < backoff.until {
            if rejected == nil, let tokens = unexpiredTokens(at: now) { return tokens }
            var error = backoff.error
            error.retryAfter = backoff.until.timeIntervalSince(now)
            throw error
        }
        nextWaiterID &+= 1
        let id = nextWaiterID
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TokenSet, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: Self.waitCancelled)
                    return
                }
                if flight == nil { startFlight(rejecting: rejected) }
                flight?.waiters[id] = Waiter(continuation: continuation, rejected: rejected)
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    private func startFlight(rejecting rejected: String?) {
        let renewal = Renewer(
            key: key, client: client, store: store, options: options,
            memory: state.snapshot?.tokens, rejected: rejected)
        flight = Flight(epoch: epoch)
        // Not a child of any caller's task: cancelling callers never cancels the renewal.
        Task {
            let result: Result<Renewer.Outcome, any Error>
            do {
                result = .success(try await renewal.run())
            } catch {
                result = .failure(error)
            }
            self.finish(result)
        }
    }

    private func finish(_ result: Result<Renewer.Outcome, any Error>) {
        guard let flight else { return }
        self.flight = nil
        // A sign-in or sign-out during the renewal decides the tokens; the renewal only answers its callers.
        let current = flight.epoch == epoch
        let now = client.now()
        var waiters = Array(flight.waiters.values)

        switch result {
        case .success(.renewed(let tokens, let fromServer)):
            if current {
                backoff = nil
                let previous = state.snapshot?.tokens
                setTokens(tokens)
                if previous != nil, previous != tokens { broadcaster.emit(.refreshed(tokens)) }
                client.logger.debug(
                    "session \(key): \(fromServer ? "renewed at the token endpoint" : "took the stored tokens")")
            }
            guard let tokens = state.snapshot?.tokens else {
                resumeAll(waiters, throwing: Self.noTokens)
                return
            }
            // A caller whose refused token came back from the store (it looked fresh there)
            // needs a renewal of its own. From the server, the same token is the answer.
            let unsatisfied = fromServer ? [] : waiters.filter { $0.rejected == tokens.accessToken }
            if !unsatisfied.isEmpty { waiters.removeAll { $0.rejected == tokens.accessToken } }
            for waiter in waiters { waiter.continuation.resume(returning: tokens) }
            if let first = unsatisfied.first {
                startFlight(rejecting: first.rejected)
                for waiter in unsatisfied {
                    nextWaiterID &+= 1
                    self.flight?.waiters[nextWaiterID] = waiter
                }
            }

        case .success(.unsaved(let tokens, let error)):
            // The server's answer is kept in memory (it may hold the only live refresh token);
            // the next renewal saves it.
            if current {
                backoff = nil
                setTokens(tokens)
                broadcaster.emit(.refreshed(tokens))
            }
            client.logger.warning("session \(key): renewed, but the store did not save the tokens")
            resumeAll(waiters, throwing: error)

        case .success(.signedOut(let error)):
            if current {
                epoch &+= 1
                setTokens(nil)
                broadcaster.emit(.signedOut(error))
                client.logger.debug("session \(key): the server refused the refresh token; tokens removed")
            }
            resumeAll(waiters, throwing: error)

        case .success(.unavailable(let error)):
            resumeAll(waiters, throwing: error)

        case .failure(let error):
            guard let error = error as? OAuth2Error else {
                resumeAll(waiters, throwing: error)  // the store's own error, passed through
                return
            }
            if current { broadcaster.emit(.refreshFailed(error)) }
            client.logger.debug("session \(key): renewal failed (\(error.code)); tokens kept")
            if error.isTransient, let retryAfter = error.retryAfter, retryAfter > 0 {
                backoff = (now.addingTimeInterval(retryAfter), error)
            }
            let unexpired = error.isTransient ? unexpiredTokens(at: now) : nil
            for waiter in waiters {
                if waiter.rejected == nil, let unexpired {
                    waiter.continuation.resume(returning: unexpired)
                } else {
                    waiter.continuation.resume(throwing: error)
                }
            }
        }
    }

    private func cancelWaiter(_ id: UInt64) {
        guard let waiter = flight?.waiters.removeValue(forKey: id) else { return }
        waiter.continuation.resume(throwing: Self.waitCancelled)
    }

    private func resumeAll(_ waiters: [Waiter], throwing error: any Error) {
        for waiter in waiters { waiter.continuation.resume(throwing: error) }
    }

    /// The tokens in hand if the access token has not expired yet (it may be in the leeway).
    private func unexpiredTokens(at now: Date) -> TokenSet? {
        guard let snapshot = state.snapshot else { return nil }
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
    let client: OAuth2Client
    let store: any TokenStore
    let options: Session.Options
    /// The session's tokens when the renewal started.
    let memory: TokenSet?
    /// An access token that must not be returned (refused by a resource server, or forced).
    let rejected: String?

    func run() async throws -> Outcome {
        try await store.withExclusiveAccess(to: key) {
            let stored = try await store.load(key)
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
