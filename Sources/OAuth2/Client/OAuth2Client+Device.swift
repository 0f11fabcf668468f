import Foundation
import HTTPTypes

// MARK: - Device authorization grant (RFC 8628)

extension OAuth2Client {
    /// Starts a device authorization (RFC 8628 §3.1): asks the device authorization
    /// endpoint for a device code and a user code.
    ///
    /// The client authenticates as at the token endpoint (a public client sends its
    /// `client_id`); the configuration's extra parameters and headers for
    /// ``RequestKind/deviceAuthorization`` are added (a GitHub client's
    /// `Accept: application/json`; form-encoded answers are understood too).
    ///
    /// ```swift
    /// let authorization = try await client.startDeviceAuthorization(scopes: ["openid", "offline_access"])
    /// print("Visit \(authorization.verificationURI) and enter \(authorization.userCode)")
    /// let tokens = try await client.pollDeviceToken(authorization)
    /// ```
    ///
    /// - Parameters:
    ///   - scopes: the scopes to ask for; `nil` uses the configuration's (none sends no `scope`).
    ///   - additionalParameters: extra request parameters; they never replace the ones the
    ///     library sets.
    /// - Throws: ``OAuth2Error/Code/missingEndpoint`` when the metadata has no
    ///   `device_authorization_endpoint`; the server's error (`invalid_client`,
    ///   `unauthorized_client`, `invalid_scope`…); what ``DeviceAuthorization/parse(response:body:requestedScopes:sentAt:)``
    ///   throws; transport errors.
    public func startDeviceAuthorization(
        scopes: [String]? = nil,
        additionalParameters: [String: String] = [:]
    ) async throws -> DeviceAuthorization {
        let url = try endpoint(endpoint("device_authorization_endpoint"), "device authorization endpoint")
        let scopes = scopes ?? configuration.scopes
        var parameters: [(String, String)] = []
        if !scopes.isEmpty { parameters.append(("scope", scopes.joined(separator: " "))) }
        parameters.appendExtras(additionalParameters)
        return try await post(
            url, parameters: parameters, kind: .deviceAuthorization,
            authMethods: metadata.tokenEndpointAuthMethodsSupported
        ) { response, body, sentAt in
            try DeviceAuthorization.parse(response: response, body: body, requestedScopes: scopes, sentAt: sentAt)
        }
    }

    /// Polls the token endpoint until the user approves or denies the device
    /// authorization, or its code expires (RFC 8628 §3.4, §3.5), on the system's
    /// continuous clock.
    ///
    /// See ``pollDeviceToken(_:clock:progress:)`` for the rules and the errors.
    public func pollDeviceToken(
        _ authorization: DeviceAuthorization,
        progress: @escaping @Sendable (DevicePollEvent) async -> Void = { _ in }
    ) async throws -> TokenSet {
        try await pollDeviceToken(authorization, clock: ContinuousClock(), progress: progress)
    }

    /// Polls the token endpoint until the user approves or denies the device
    /// authorization, or its code expires (RFC 8628 §3.4, §3.5).
    ///
    /// - The first poll comes one interval after the call, and polls are at least
    ///   ``DeviceAuthorization/interval`` seconds apart.
    /// - `authorization_pending` keeps polling; `slow_down` adds 5 seconds to the interval
    ///   for good (or takes the server's new `interval`, when it names a longer one, as
    ///   GitHub does).
    /// - A failure that may pass (network, timeout, HTTP 5xx or 429) doubles the interval
    ///   (up to 60 seconds) and polls again; the sixth such failure in a row is thrown.
    /// - A token response is handled as every grant's: each poll carries a DPoP proof with
    ///   ``ClientConfiguration/dpop`` (a Bearer answer is then refused), and an ID token in
    ///   it is verified before the tokens are returned.
    ///
    /// - Parameters:
    ///   - authorization: the device authorization response to poll for.
    ///   - clock: the clock that measures intervals and the code's lifetime; tests pass a
    ///     clock that does not wait.
    ///   - progress: told what happens (waiting, pending, slow down, retrying), for a
    ///     countdown or a status line; the poll waits for it to return.
    /// - Throws: ``OAuth2Error/Code/accessDenied`` when the user denied the request;
    ///   ``OAuth2Error/Code/expiredToken`` when the server says the device code expired, or
    ///   when its `expires_in` has passed without an answer (then with source `.client`);
    ///   ``OAuth2Error/Code/cancelled`` as soon as the task is cancelled; any other error of
    ///   the token endpoint (`invalid_grant`, `invalid_client`…) or of ID-token validation.
    ///   No error message contains the device code.
    public func pollDeviceToken<C: Clock>(
        _ authorization: DeviceAuthorization,
        clock: C,
        progress: @escaping @Sendable (DevicePollEvent) async -> Void = { _ in }
    ) async throws -> TokenSet where C.Duration == Duration {
        let lifetime = authorization.expiresAt.timeIntervalSince(now())
        let deadline = clock.now.advanced(by: .seconds(max(0, lifetime)))
        var interval = authorization.interval
        var transientFailures = 0
        var attempt = 0
        while true {
            attempt += 1
            let pollAt = clock.now.advanced(by: .seconds(interval))
            if pollAt > deadline {
                // No poll can come before the code expires: wait out its lifetime (a user may
                // still be looking at the code), then say it expired.
                try await sleep(until: deadline, on: clock)
                throw OAuth2Error(
                    .expiredToken, source: .client,
                    message: "The device code expired before the user approved the request.")
            }
            await progress(.waiting(seconds: interval, attempt: attempt))
            try await sleep(until: pollAt, on: clock)
            do {
                switch try await deviceTokenAttempt(authorization) {
                case .tokens(let tokens):
                    return tokens
                case .pending:
                    transientFailures = 0
                    await progress(.authorizationPending(attempt: attempt))
                case .slowDown(let stated):
                    transientFailures = 0
                    // RFC 8628 §3.5: "the interval MUST be increased by 5 seconds for this and all subsequent requests".
                    interval = max(interval + 5, stated ?? 0)
                    await progress(.slowDown(interval: interval))
                }
            } catch let error as OAuth2Error where error.isTransient && error.code != .cancelled {
                transientFailures += 1
                guard transientFailures <= Self.maximumTransientDevicePollFailures else { throw error }
                // RFC 8628 §3.5: back off on connection timeouts, doubling the interval.
                interval = max(interval, min(interval * 2, 60))
                await progress(.retrying(code: error.code, interval: interval))
            }
        }
    }

    /// Transient failures in a row that polling survives.
    static var maximumTransientDevicePollFailures: Int { 5 }

    /// One poll's outcome, short of an error.
    enum DeviceTokenAttempt {
        case tokens(TokenSet)
        case pending
        /// `slow_down`, with the server's new interval when it named one (GitHub).
        case slowDown(TimeInterval?)
    }

    /// One token request with the device code.
    func deviceTokenAttempt(_ authorization: DeviceAuthorization) async throws -> DeviceTokenAttempt {
        let url = try endpoint(endpoint("token_endpoint"), "token endpoint")
        let grant = Grant.deviceCode(authorization.deviceCode)
        let attempt: DeviceTokenAttempt = try await post(
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
                response: response, body: body, requestedScopes: authorization.scopes.nilIfEmpty, sentAt: sentAt,
                receivedAt: receivedAt, quirks: configuration.quirks)
            try checkBinding(of: tokens, statusCode: response.status.code)
            return .tokens(tokens)
        }
        guard case .tokens(let tokens) = attempt else { return attempt }
        try await validateIDToken(in: tokens, expecting: IDTokenValidator.Expectations(accessToken: tokens.accessToken))
        return .tokens(tokens)
    }

    /// Sleeps on `clock`, turning cancellation into ``OAuth2Error/Code/cancelled``.
    private func sleep<C: Clock>(until instant: C.Instant, on clock: C) async throws {
        do {
            try await clock.sleep(until: instant, tolerance: nil)
            try Task.checkCancellation()
        } catch {
            throw OAuth2Error(.cancelled, source: .client, message: "Polling for the device token was cancelled.")
        }
    }
}
