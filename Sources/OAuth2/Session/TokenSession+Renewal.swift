import Foundation
import Logging

// Single-flight renewal: the first caller that finds the token due starts one renewal
// (a flight); every caller, the first included, waits for it on a continuation of its own,
// so that a cancelled caller can leave without cancelling the renewal the others wait for.
// All of it runs under `SessionState`'s lock: the waiters of a burst
// join, and later resume, in parallel.

extension TokenSession {
    /// Returns fresh tokens, renewing them in one shared flight if needed. `rejected` is an
    /// access token a resource server refused, or the current one for a forced renewal.
    func renew(rejecting rejected: String?) async throws -> TokenSet {
        switch enter(rejecting: rejected) {
        case .answered(let tokens): return tokens
        case .failed(let error): throw error
        case .wait(let id): return try await wait(id)
        }
    }

    /// What a caller of ``renew(rejecting:)`` found: its answer, or its place among the waiters.
    /// (The error is boxed: an `OAuth2Error` inline would make this value, and the async
    /// frames that hold it, big enough to cost each caller a heap allocation.)
    enum Entry { case answered(TokenSet), failed(any Error), wait(UInt64) }

    /// The first half of ``renew(rejecting:)``, synchronous (a small frame for the common
    /// case of fresh tokens): under the lock, the answer — the tokens in hand when they are
    /// fresh, or the back-off's — else a new place among the waiters.
    ///
    /// A caller that waits takes the lock twice: once here, once to leave its continuation
    /// in its place. Its place is an index into an array kept in arrival order, so the
    /// renewal answers its waiters in that order without sorting them, and a cancelled
    /// caller finds its own slot in constant time and leaves a tombstone.
    func enter(rejecting rejected: String?) -> Entry {
        let now = baseClient.now()
        return state.withLock { state in
            // Fresh (or renewed meanwhile by another caller).
            if let snapshot = state.current, snapshot.tokens.accessToken != rejected, snapshot.expiry.isFresh(at: now) {
                return .answered(snapshot.tokens)
            }
            if let backoff = state.backoff, now < backoff.until {
                if rejected == nil, let tokens = Self.unexpired(state.current, at: now) { return .answered(tokens) }
                var error = backoff.error
                error.retryAfter = backoff.until.timeIntervalSince(now)
                return .failed(error)
            }
            return .wait(state.reserveWaiter(rejected: rejected))
        }
    }

    /// The second half of ``renew(rejecting:)``: waits in place `id` for the renewal in
    /// flight, starting one if there is none.
    func wait(_ id: UInt64) async throws -> TokenSet {
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<TokenSet, any Error>) in
                enum Arrival { case cancelled, joined, answered(TokenSet), started(RenewalAttempt) }
                let arrival: Arrival = state.withLock { state in
                    // A reserved slot stays until its caller gets here: neither a renewal's
                    // end nor a cancellation removes it.
                    guard let index = state.index(of: id) else { preconditionFailure("session waiter \(id) lost its slot") }
                    switch state.waiters[index] {
                    case .reserved(let rejected):
                        if state.flight == nil {
                            // The renewal this caller found due ended meanwhile.
                            if let snapshot = state.current, snapshot.tokens.accessToken != rejected,
                                snapshot.expiry.isFresh(at: baseClient.now())
                            {
                                state.leave(index)
                                return .answered(snapshot.tokens)
                            }
                            state.waiters[index] = .waiting(continuation, rejected: rejected)
                            state.flight = SessionState.Flight(epoch: state.epoch)
                            return .started(makeRenewalAttempt(memory: state.current?.tokens, rejecting: rejected))
                        }
                        state.waiters[index] = .waiting(continuation, rejected: rejected)
                        return .joined
                    case .cancelled:
                        // Its cancellation handler ran before it got here.
                        state.leave(index)
                        return .cancelled
                    case .waiting, .done:
                        preconditionFailure("session waiter \(id) joined twice")
                    }
                }
                switch arrival {
                case .cancelled: continuation.resume(throwing: Self.waitCancelled)
                case .answered(let tokens): continuation.resume(returning: tokens)
                case .started(let attempt): launch(attempt)
                case .joined: break
                }
            }
        } onCancel: {
            cancelWaiter(id)
        }
    }

    private func makeRenewalAttempt(memory: TokenSet?, rejecting rejected: String?) -> RenewalAttempt {
        RenewalAttempt(key: key, client: baseClient, state: state, store: store, options: options, memory: memory, rejected: rejected)
    }

    /// Runs a renewal in a task of its own: not a child of any caller's task, so that
    /// cancelling callers never cancels the renewal. It runs at high priority: in a burst,
    /// every step of it that resumes from outside (the response, the store) would
    /// otherwise be queued behind the jobs of thousands of callers, which are all waiting
    /// for it.
    private func launch(_ attempt: RenewalAttempt) {
        Task(priority: .high) {
            let started = ContinuousClock.now
            let result: Result<RenewalAttempt.Outcome, any Error>
            do {
                result = .success(try await attempt.run())
            } catch {
                result = .failure(error)
            }
            Telemetry.renewal(result, duration: ContinuousClock.now - started)
            finish(result)
        }
    }

    /// Waiters answered alike: one result, their continuations in arrival order.
    private typealias Answer = (result: Result<TokenSet, any Error>, continuations: [UnsafeContinuation<TokenSet, any Error>])

    private func finish(_ result: Result<RenewalAttempt.Outcome, any Error>) {
        let now = baseClient.now()
        var answers: [Answer] = []
        var restart: RenewalAttempt?
        var note: (level: Logger.Level, message: String)?
        state.withLock { state in
            guard let flight = state.flight else { return }
            state.flight = nil
            // A sign-in or sign-out during the renewal decides the tokens; the renewal only
            // answers its callers.
            let current = flight.epoch == state.epoch

            // The answer of a waiter that refused `rejected` (`nil`: none), as an index into
            // `answers`; `nil` leaves it waiting for another renewal.
            var answerFor: (String?) -> Int? = { _ in 0 }

            switch result {
            case .success(.renewed(let tokens, let fromServer)):
                if current {
                    state.backoff = nil
                    let previous = state.current?.tokens
                    state.current = .init(tokens: tokens, expiry: TokenExpiry(tokens, leeway: options.leeway))
                    if previous != nil, previous != tokens { state.emit(.refreshed(tokens)) }
                    note = (.debug, fromServer ? "renewed at the token endpoint" : "took the stored tokens")
                }
                guard let tokens = state.current?.tokens else {
                    answers = [(.failure(Self.noTokens), [])]
                    break
                }
                answers = [(.success(tokens), [])]
                // A caller whose refused token came back from the store (it looked fresh
                // there) needs a renewal of its own. From the server, the same token is the answer.
                if !fromServer {
                    answerFor = { rejected in rejected == tokens.accessToken ? nil : 0 }
                }

            case .success(.unsaved(let tokens, let error)):
                // The server's answer is kept in memory (it may hold the only live refresh
                // token); the next renewal saves it.
                if current {
                    state.backoff = nil
                    state.current = .init(tokens: tokens, expiry: TokenExpiry(tokens, leeway: options.leeway))
                    state.emit(.refreshed(tokens))
                }
                note = (.warning, "renewed, but the store did not save the tokens")
                answers = [(.failure(error), [])]

            case .success(.signedOut(let error)):
                if current {
                    state.epoch &+= 1
                    state.backoff = nil
                    state.current = nil
                    state.emit(.signedOut(error))
                    note = (
                        .debug,
                        error.signInReason == .signedOutElsewhere
                            ? "signed out elsewhere (the record is gone); tokens forgotten"
                            : "the server refused the refresh token; tokens removed"
                    )
                }
                answers = [(.failure(error), [])]

            case .success(.unavailable(let error)):
                answers = [(.failure(error), [])]

            case .failure(let error):
                guard let error = error as? OAuth2Error else {
                    answers = [(.failure(error), [])]  // the store's own error, passed through
                    break
                }
                if current { state.emit(.refreshFailed(error)) }
                note = (.debug, "renewal failed (\(error.code)); tokens kept")
                if error.isTransient, let retryAfter = error.retryAfter, retryAfter > 0 {
                    state.backoff = SessionState.Backoff(until: now.addingTimeInterval(retryAfter), error: error)
                }
                answers = [(.failure(error), [])]
                if error.isTransient, let unexpired = Self.unexpired(state.current, at: now) {
                    answers.append((.success(unexpired), []))
                    answerFor = { rejected in rejected == nil ? 1 : 0 }
                }
            }

            // Every waiting slot belongs to this renewal (a caller joins only while one is
            // in flight, or starts one); reserved and cancelled slots are callers on their
            // way in, which join the next one.
            var unsatisfied: String??
            for index in state.waiters.indices {
                guard case .waiting(let continuation, let rejected) = state.waiters[index] else { continue }
                if let answer = answerFor(rejected) {
                    answers[answer].continuations.append(continuation)
                    state.retire(index)
                } else if unsatisfied == nil {
                    unsatisfied = .some(rejected)
                }
            }
            if let rejected = unsatisfied {
                state.flight = SessionState.Flight(epoch: state.epoch)
                restart = makeRenewalAttempt(memory: state.current?.tokens, rejecting: rejected)
            }
            state.compactWaiters()
        }
        if let note { baseClient.logger.log(level: note.level, "session \(key): \(note.message)") }
        for answer in answers {
            for continuation in answer.continuations { continuation.resume(with: answer.result) }
        }
        if let restart { launch(restart) }
    }

    private func cancelWaiter(_ id: UInt64) {
        let continuation: UnsafeContinuation<TokenSet, any Error>? = state.withLock { state in
            guard let index = state.index(of: id) else { return nil }  // answered, and gone
            switch state.waiters[index] {
            case .reserved:
                state.waiters[index] = .cancelled  // it throws when it tries to join
                return nil
            case .waiting(let continuation, _):
                state.leave(index)
                return continuation
            case .cancelled, .done:
                return nil
            }
        }
        continuation?.resume(throwing: Self.waitCancelled)
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
        var error = OAuth2Error(.signInRequired, source: .client, message: "The session has no tokens: sign in.")
        error.signInReason = .noTokens
        return error
    }
}
