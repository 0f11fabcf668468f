import Foundation

// MARK: - Polling the token endpoint (RFC 8628 §3.4–3.5, OpenID Connect CIBA Core §7.3, §11)

extension OAuth2Client {
    /// The polling loop the device flow and CIBA share.
    ///
    /// - The first poll comes one interval after the call, and polls are at least `interval`
    ///   seconds apart.
    /// - `authorization_pending` keeps polling; `slow_down` adds 5 seconds to the interval
    ///   for good (or takes the server's new `interval`, when it names a longer one).
    /// - A failure that may pass (network, timeout, HTTP 5xx or 429) doubles the interval
    ///   (up to 60 seconds) and polls again; the sixth such failure in a row is thrown.
    /// - When no poll can come before `expiresAt`, the loop waits it out and throws
    ///   ``OAuth2Error/Code/expiredToken`` (source `.client`) with the `expired` message;
    ///   cancellation throws ``OAuth2Error/Code/cancelled`` with the `cancelled` one.
    /// - With `wake` (CIBA ping mode), the wait between polls is `idleInterval` (at least
    ///   the interval; `nil`: no poll before the deadline) unless a failure that may pass is
    ///   being retried; `wake` returning (a ping arrived) ends any wait at once and polls.
    func pollTokenEndpoint<C: Clock>(
        expiresAt: Date,
        interval initialInterval: TimeInterval,
        clock: C,
        progress: @escaping @Sendable (DevicePollEvent) async -> Void,
        expired: String,
        cancelled: String,
        idleInterval: TimeInterval? = nil,
        wake: (@Sendable () async -> Void)? = nil,
        attempt poll: () async throws -> TokenPollAttempt
    ) async throws -> TokenSet where C.Duration == Duration {
        let lifetime = expiresAt.timeIntervalSince(now())
        let deadline = clock.now.advanced(by: .seconds(max(0, lifetime)))
        var interval = initialInterval
        var transientFailures = 0
        var attempt = 0
        while true {
            attempt += 1
            // Ping mode waits for the ping, polling only at the idle interval (if any), but a
            // failure that may pass is retried at the backed-off interval (the ping came).
            let wait = wake == nil || transientFailures > 0 ? interval : idleInterval.map { max($0, interval) }
            let pollAt = wait.map { clock.now.advanced(by: .seconds($0)) }
            guard let wait, let pollAt, pollAt <= deadline else {
                // No poll can come before the request expires: wait out its lifetime (a user
                // may still be deciding; a ping may still come), then say it expired.
                guard try await sleep(until: deadline, on: clock, wakingOn: wake, cancelled: cancelled) else {
                    throw OAuth2Error(.expiredToken, source: .client, message: expired)
                }
                if let answer = try await pollOnce(poll, interval: &interval, transientFailures: &transientFailures, attempt: attempt, progress: progress) {
                    return answer
                }
                continue
            }
            await progress(.waiting(seconds: wait, attempt: attempt))
            _ = try await sleep(until: pollAt, on: clock, wakingOn: wake, cancelled: cancelled)
            if let answer = try await pollOnce(poll, interval: &interval, transientFailures: &transientFailures, attempt: attempt, progress: progress) {
                return answer
            }
        }
    }

    /// One poll of ``pollTokenEndpoint(expiresAt:interval:clock:progress:expired:cancelled:idleInterval:wake:attempt:)``:
    /// the tokens, or `nil` to poll again (the interval and the failure count updated).
    private func pollOnce(
        _ poll: () async throws -> TokenPollAttempt, interval: inout TimeInterval, transientFailures: inout Int, attempt: Int,
        progress: @Sendable (DevicePollEvent) async -> Void
    ) async throws -> TokenSet? {
        do {
            switch try await poll() {
            case .tokens(let tokens):
                return tokens
            case .pending:
                transientFailures = 0
                await progress(.authorizationPending(attempt: attempt))
            case .slowDown(let stated):
                transientFailures = 0
                // RFC 8628 §3.5, CIBA Core §11: "the interval MUST be increased by at least 5 seconds".
                interval = max(interval + 5, stated ?? 0)
                await progress(.slowDown(interval: interval))
            }
        } catch let error as OAuth2Error where error.isTransient && error.code != .cancelled {
            transientFailures += 1
            guard transientFailures <= Self.maximumTransientPollFailures else { throw error }
            // RFC 8628 §3.5: back off on connection timeouts, doubling the interval.
            interval = max(interval, min(interval * 2, 60))
            await progress(.retrying(code: error.code, interval: interval))
        }
        return nil
    }

    /// Transient failures in a row that polling survives.
    static var maximumTransientPollFailures: Int { 5 }

    /// One poll's outcome, short of an error.
    enum TokenPollAttempt {
        case tokens(TokenSet)
        case pending
        /// `slow_down`, with the server's new interval when it named one (GitHub).
        case slowDown(TimeInterval?)
    }

    /// One poll at the token endpoint with `grant`: `authorization_pending` and `slow_down`
    /// are outcomes, other errors are thrown; tokens are parsed and their binding checked
    /// (their ID token is left to the caller).
    func tokenPollAttempt(_ grant: Grant, scopes: [String]) async throws -> TokenPollAttempt {
        let url = try endpoint(endpoint("token_endpoint"), "token endpoint")
        return try await post(
            url, parameters: [("grant_type", grant.type)] + grant.parameters, kind: .token,
            authMethods: metadata.tokenEndpointAuthMethodsSupported, dpop: true
        ) { response, body, sentAt in
            let receivedAt = now()
            let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
            if let error = ResponseParsing.error(in: response, members: members, kind: .token, now: receivedAt) {
                switch error.code {
                case .authorizationPending:
                    return .pending
                case .slowDown:
                    let stated = ResponseParsing.number(members?["interval"]).flatMap { $0 > 0 && $0 < 1e6 ? $0 : nil }
                    return .slowDown(stated)
                default:
                    throw error
                }
            }
            let tokens = try TokenSet.parse(
                response: response, body: body, requestedScopes: scopes.nilIfEmpty, sentAt: sentAt,
                receivedAt: receivedAt, quirks: configuration.quirks)
            try checkBinding(of: tokens, statusCode: response.status.code)
            return .tokens(tokens)
        }
    }

    /// Sleeps on `clock` until `instant`, or until `wake` returns (then `true`), turning
    /// cancellation into ``OAuth2Error/Code/cancelled``.
    private func sleep<C: Clock>(
        until instant: C.Instant, on clock: C, wakingOn wake: (@Sendable () async -> Void)?, cancelled: String
    ) async throws -> Bool where C.Duration == Duration {
        guard let wake else {
            do {
                try await clock.sleep(until: instant, tolerance: nil)
                try Task.checkCancellation()
            } catch {
                throw OAuth2Error(.cancelled, source: .client, message: cancelled)
            }
            return false
        }
        let woken = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await clock.sleep(until: instant, tolerance: nil)
                return false
            }
            group.addTask {
                await wake()
                return !Task.isCancelled
            }
            var woken = await group.next() ?? false
            group.cancelAll()
            // A ping taken while the clock's sleep ended still counts.
            for await other in group { woken = woken || other }
            return woken
        }
        guard !Task.isCancelled else { throw OAuth2Error(.cancelled, source: .client, message: cancelled) }
        return woken
    }
}
