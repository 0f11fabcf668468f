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
    func pollTokenEndpoint<C: Clock>(
        expiresAt: Date,
        interval initialInterval: TimeInterval,
        clock: C,
        progress: @escaping @Sendable (DevicePollEvent) async -> Void,
        expired: String,
        cancelled: String,
        attempt poll: () async throws -> TokenPollAttempt
    ) async throws -> TokenSet where C.Duration == Duration {
        let lifetime = expiresAt.timeIntervalSince(now())
        let deadline = clock.now.advanced(by: .seconds(max(0, lifetime)))
        var interval = initialInterval
        var transientFailures = 0
        var attempt = 0
        while true {
            attempt += 1
            let pollAt = clock.now.advanced(by: .seconds(interval))
            if pollAt > deadline {
                // No poll can come before the request expires: wait out its lifetime (a user
                // may still be deciding), then say it expired.
                try await sleep(until: deadline, on: clock, cancelled: cancelled)
                throw OAuth2Error(.expiredToken, source: .client, message: expired)
            }
            await progress(.waiting(seconds: interval, attempt: attempt))
            try await sleep(until: pollAt, on: clock, cancelled: cancelled)
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
        }
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

    /// Sleeps on `clock`, turning cancellation into ``OAuth2Error/Code/cancelled``.
    private func sleep<C: Clock>(until instant: C.Instant, on clock: C, cancelled: String) async throws {
        do {
            try await clock.sleep(until: instant, tolerance: nil)
            try Task.checkCancellation()
        } catch {
            throw OAuth2Error(.cancelled, source: .client, message: cancelled)
        }
    }
}
