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
        try await pollTokenEndpoint(
            expiresAt: authorization.expiresAt, interval: authorization.interval, clock: clock, progress: progress,
            expired: "The device code expired before the user approved the request.",
            cancelled: "Polling for the device token was cancelled."
        ) {
            try await deviceTokenAttempt(authorization)
        }
    }

    /// One token request with the device code.
    func deviceTokenAttempt(_ authorization: DeviceAuthorization) async throws -> TokenPollAttempt {
        let attempt = try await tokenPollAttempt(.deviceCode(authorization.deviceCode), scopes: authorization.scopes)
        guard case .tokens(let tokens) = attempt else { return attempt }
        return .tokens(try await validatingIDToken(in: tokens, expecting: IDTokenValidator.Expectations(accessToken: tokens.accessToken)))
    }
}
