import Foundation
import HTTPTypes
import OAuth2Internals
import OAuth2JOSE

// MARK: - Client-Initiated Backchannel Authentication (OpenID Connect CIBA Core 1.0)

extension OAuth2Client {
    /// Whether the server offers CIBA in a mode this client can poll in: it advertises a
    /// `backchannel_authentication_endpoint`, and `poll` or `ping` among its
    /// `backchannel_token_delivery_modes_supported` (or names no modes). A push-only server
    /// does not count.
    public var offersBackchannelAuthentication: Bool {
        metadata.backchannelAuthenticationEndpoint != nil
            && (metadata.backchannelTokenDeliveryModesSupported.map { $0.contains("poll") || $0.contains("ping") } ?? true)
    }

    /// Starts a backchannel authentication (CIBA Core §7.1): asks the server to have the
    /// user named by the request's hint approve this client's request on their own device.
    ///
    /// The client authenticates as at the token endpoint. The request is a signed JWT (the
    /// `request` parameter, CIBA Core §7.1.1) when ``BackchannelAuthenticationRequest/signed``
    /// says so, or by default when the configuration has ``ClientConfiguration/requestObject``:
    /// signed with its key or the configuration's ``ClientConfiguration/privateKey`` (never
    /// with the client secret: CIBA forbids symmetric signatures), with `iss`, `aud` (the
    /// issuer), `iat`, `nbf`, `exp` and a unique `jti`. The configuration's extra parameters
    /// and headers for ``RequestKind/backchannelAuthentication`` are added.
    ///
    /// ```swift
    /// let authentication = try await client.startBackchannelAuthentication(
    ///     BackchannelAuthenticationRequest(hint: .loginHint("alice"), bindingMessage: "W4SCT"))
    /// print("Approve the request \"W4SCT\" on your phone")
    /// let tokens = try await client.pollBackchannelToken(authentication)
    /// ```
    ///
    /// - Parameter request: who is asked, and what they are shown.
    /// - Throws: ``OAuth2Error/Code/missingEndpoint`` without a
    ///   `backchannel_authentication_endpoint`; ``OAuth2Error/Code/invalidConfiguration`` for
    ///   an empty hint, or a signed request without an asymmetric key (or with an algorithm
    ///   the server does not list in
    ///   `backchannel_authentication_request_signing_alg_values_supported`); the server's
    ///   error (`unknown_user_id`, `invalid_binding_message`, `invalid_user_code`,
    ///   `access_denied`, `invalid_client`…); what
    ///   ``BackchannelAuthentication/parse(response:body:scopes:bindingMessage:expectedSubject:sentAt:)``
    ///   throws; transport errors.
    public func startBackchannelAuthentication(_ request: BackchannelAuthenticationRequest) async throws -> BackchannelAuthentication {
        let url = try endpoint(endpoint("backchannel_authentication_endpoint"), "backchannel authentication endpoint")
        guard !request.hint.value.isEmpty else {
            throw OAuth2Error.client(.invalidConfiguration, "A backchannel authentication request needs a non-empty \(request.hint.parameterName).")
        }
        var (parameters, scopes) = request.parameters(defaultScopes: configuration.scopes)
        if request.signed ?? (configuration.requestObject != nil) {
            parameters = [("request", try signedBackchannelRequest(parameters, now: now()))]
        }
        var expectedSubject: String?
        if case .idTokenHint(let hint) = request.hint {
            // The hint is an ID token this server issued to this client: its sub names the user.
            expectedSubject = (try? JWS(compact: hint).claims())?["sub"]?.stringValue
        }
        return try await post(
            url, parameters: parameters, kind: .backchannelAuthentication,
            authMethods: metadata.tokenEndpointAuthMethodsSupported
        ) { response, body, sentAt in
            try BackchannelAuthentication.parse(
                response: response, body: body, scopes: scopes, bindingMessage: request.bindingMessage,
                expectedSubject: expectedSubject, sentAt: sentAt)
        }
    }

    /// The parameters as a signed authentication request (CIBA Core §7.1.1).
    func signedBackchannelRequest(_ parameters: [(String, String)], now: Date) throws(OAuth2Error) -> String {
        let options = configuration.requestObject ?? RequestObjectOptions()
        guard let key = options.signingKey ?? configuration.privateKey else {
            throw .client(
                .invalidConfiguration,
                "A signed backchannel authentication request needs a private key (RequestObjectOptions.signingKey or ClientConfiguration.privateKey).")
        }
        guard !key.algorithm.isHMAC else {
            throw .client(.invalidConfiguration, "A backchannel authentication request cannot be signed with a shared secret (CIBA Core §7.1.1).")
        }
        if let advertised = metadata.backchannelAuthenticationRequestSigningAlgValuesSupported, !advertised.isEmpty,
            !advertised.contains(key.algorithm.rawValue)
        {
            throw .client(
                .invalidConfiguration,
                "The server does not accept backchannel authentication requests signed with \(key.algorithm.rawValue); it lists \(advertised.joined(separator: ", ")).")
        }
        var claims = RequestObject(
            parameters: parameters, clientID: configuration.clientID, audience: metadata.issuer ?? "", issuedAt: now,
            lifetime: options.lifetime
        ).claims
        // requested_expiry is a number in the JWT (CIBA Core §7.1.1).
        if let expiry = claims["requested_expiry"]?.stringValue, let seconds = Int64(expiry) { claims["requested_expiry"] = .integer(seconds) }
        do {
            return try key.sign(claims: claims)
        } catch {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The backchannel authentication request cannot be signed: \(error.message)", underlyingError: error)
        }
    }

    /// Polls the token endpoint until the user approves or denies the backchannel
    /// authentication, or it expires (CIBA Core §7.3, §10, §11), on the system's
    /// continuous clock.
    ///
    /// See ``pollBackchannelToken(_:clock:progress:)`` for the rules and the errors.
    public func pollBackchannelToken(
        _ authentication: BackchannelAuthentication,
        progress: @escaping @Sendable (BackchannelPollEvent) async -> Void = { _ in }
    ) async throws -> TokenSet {
        try await pollBackchannelToken(authentication, clock: ContinuousClock(), progress: progress)
    }

    /// Polls the token endpoint until the user approves or denies the backchannel
    /// authentication, or it expires (CIBA Core §7.3, §10, §11) — poll mode, or ping mode
    /// without a notification endpoint.
    ///
    /// Polling goes as the device flow's (``pollDeviceToken(_:clock:progress:)``): the first
    /// poll one interval after the call, `authorization_pending` keeps polling, `slow_down`
    /// adds 5 seconds for good, a failure that may pass doubles the interval. The answer is
    /// checked as every grant's (DPoP binding; ID token signature, `iss`, `aud`, `exp`,
    /// `iat`, `at_hash`), plus what CIBA adds: a `urn:openid:params:jwt:claim:auth_req_id`
    /// claim must name this request, a `urn:openid:params:jwt:claim:rt_hash` claim must hash
    /// the refresh token, and after an `id_token_hint` the ID token must name its subject.
    /// An answer without an ID token is refused: CIBA is OpenID Connect authentication.
    ///
    /// - Parameters:
    ///   - authentication: the backchannel authentication response to poll for.
    ///   - clock: the clock that measures intervals and the request's lifetime; tests pass
    ///     a clock that does not wait.
    ///   - progress: told what happens (waiting, pending, slow down, retrying), for a
    ///     countdown; the poll waits for it to return.
    /// - Throws: ``OAuth2Error/Code/accessDenied`` when the user denied the request;
    ///   ``OAuth2Error/Code/expiredToken`` when the server says the request expired, or when
    ///   its `expires_in` has passed without an answer (then with source `.client`);
    ///   ``OAuth2Error/Code/cancelled`` as soon as the task is cancelled;
    ///   ``OAuth2Error/Code/invalidIDToken`` for an ID token that fails a check, or none;
    ///   any other error of the token endpoint (`invalid_grant`, `unauthorized_client`…).
    ///   No error message contains the `auth_req_id`.
    public func pollBackchannelToken<C: Clock>(
        _ authentication: BackchannelAuthentication,
        clock: C,
        progress: @escaping @Sendable (BackchannelPollEvent) async -> Void = { _ in }
    ) async throws -> TokenSet where C.Duration == Duration {
        try await pollTokenEndpoint(
            expiresAt: authentication.expiresAt, interval: authentication.interval, clock: clock, progress: progress,
            expired: "The backchannel authentication request expired before the user approved it.",
            cancelled: "Polling for the backchannel authentication's tokens was cancelled."
        ) {
            try await backchannelTokenAttempt(authentication)
        }
    }

    /// Starts a backchannel authentication in ping mode (CIBA Core §5, §7.1, §10.2): as
    /// ``startBackchannelAuthentication(_:)``, with a `client_notification_token` — the
    /// request's own, or 32 bytes from the system's CSPRNG — registered in `pingInbox`
    /// before the request is sent, so that a ping arriving at once is not lost.
    ///
    /// The client must be registered for ping mode (`backchannel_token_delivery_mode`
    /// `ping`, with a `backchannel_client_notification_endpoint` whose requests reach
    /// `pingInbox`). Then wait with
    /// ``waitForBackchannelPing(_:inbox:clock:fallbackPollInterval:progress:)``.
    ///
    /// - Parameters:
    ///   - request: who is asked, and what they are shown; its
    ///     ``BackchannelAuthenticationRequest/clientNotificationToken`` when set (a secret of
    ///     at least 128 bits, RFC 6750's `b64token` syntax).
    ///   - pingInbox: where the server's ping is received.
    /// - Throws: what ``startBackchannelAuthentication(_:)`` throws (the request is then
    ///   forgotten by the inbox); ``OAuth2Error/Code/invalidConfiguration`` for a given token
    ///   of the wrong syntax (22 to 1024 characters) or already pending;
    ///   ``OAuth2Error/Code/temporarilyUnavailable`` when the inbox is full.
    public func startBackchannelAuthentication(
        _ request: BackchannelAuthenticationRequest, pingInbox: BackchannelPingInbox
    ) async throws -> BackchannelAuthentication {
        var request = request
        let token = request.clientNotificationToken ?? SecureRandom.token(byteCount: 32)
        request.clientNotificationToken = token
        // Kept until the server's answer names the expiry (a request that hangs is bounded by
        // the exchange's deadline).
        try pingInbox.register(token: token, until: now().addingTimeInterval(TimeInterval(request.requestedExpiry ?? 3600) + 60))
        let started: BackchannelAuthentication
        do {
            started = try await startBackchannelAuthentication(request)
        } catch {
            pingInbox.remove(token: token)
            throw error
        }
        pingInbox.started(token: token, authenticationRequestID: started.authenticationRequestID, expiresAt: started.expiresAt)
        return BackchannelAuthentication(
            authenticationRequestID: started.authenticationRequestID, expiresAt: started.expiresAt, interval: started.interval,
            scopes: started.scopes, bindingMessage: started.bindingMessage, expectedSubject: started.expectedSubject,
            additionalFields: started.additionalFields, clientNotificationToken: token)
    }

    /// Waits for the server's ping, then gets the tokens (CIBA Core §10.2), on the system's
    /// continuous clock.
    ///
    /// See ``waitForBackchannelPing(_:inbox:clock:fallbackPollInterval:progress:)`` for the
    /// rules and the errors.
    public func waitForBackchannelPing(
        _ authentication: BackchannelAuthentication,
        inbox: BackchannelPingInbox,
        fallbackPollInterval: TimeInterval? = BackchannelPingInbox.defaultFallbackPollInterval,
        progress: @escaping @Sendable (BackchannelPollEvent) async -> Void = { _ in }
    ) async throws -> TokenSet {
        try await waitForBackchannelPing(
            authentication, inbox: inbox, clock: ContinuousClock(), fallbackPollInterval: fallbackPollInterval, progress: progress)
    }

    /// Waits for the server's ping, then gets the tokens (CIBA Core §10.2) — ping mode,
    /// for a request started with ``startBackchannelAuthentication(_:pingInbox:)``.
    ///
    /// A ping that `inbox` accepted (the request's bearer token, its `auth_req_id`) ends the
    /// wait at once with one token request, whose answer is handled and checked as
    /// ``pollBackchannelToken(_:clock:progress:)``'s: tokens (with CIBA's ID token rules)
    /// end it; `authorization_pending` waits for the next ping, `slow_down` lengthens the
    /// interval; a failure that may pass is retried, backing off, as polling does.
    ///
    /// A ping can be lost (the server sends it once, and may send none when the user
    /// cancels). A client in ping mode may also poll at the request's interval (CIBA Core
    /// §7.3: the `interval` is for poll and ping modes), so the wait polls every
    /// `fallbackPollInterval` seconds (never more often than the interval) without a ping;
    /// `nil` never polls before a ping. The request leaves `inbox` when the wait ends.
    ///
    /// - Parameters:
    ///   - authentication: the response of ``startBackchannelAuthentication(_:pingInbox:)``.
    ///   - inbox: the inbox it was started with, which the notification endpoint feeds.
    ///   - clock: the clock of intervals and of the request's lifetime.
    ///   - fallbackPollInterval: seconds between polls while no ping comes; `nil`: none.
    ///   - progress: told of each poll's outcome, as in polling.
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the request was not started
    ///   with `inbox` (or its wait already ended); otherwise as
    ///   ``pollBackchannelToken(_:clock:progress:)``: ``OAuth2Error/Code/accessDenied``,
    ///   ``OAuth2Error/Code/expiredToken`` (also when no ping came before the request
    ///   expired), ``OAuth2Error/Code/cancelled``, ``OAuth2Error/Code/invalidIDToken``, the
    ///   token endpoint's other errors. No message holds the token or the `auth_req_id`.
    public func waitForBackchannelPing<C: Clock>(
        _ authentication: BackchannelAuthentication,
        inbox: BackchannelPingInbox,
        clock: C,
        fallbackPollInterval: TimeInterval? = BackchannelPingInbox.defaultFallbackPollInterval,
        progress: @escaping @Sendable (BackchannelPollEvent) async -> Void = { _ in }
    ) async throws -> TokenSet where C.Duration == Duration {
        guard let token = authentication.clientNotificationToken, inbox.isPending(token: token) else {
            throw OAuth2Error.client(
                .invalidConfiguration, "This backchannel authentication is not pending in the ping inbox: start it with startBackchannelAuthentication(_:pingInbox:).")
        }
        defer { inbox.remove(token: token) }
        return try await pollTokenEndpoint(
            expiresAt: authentication.expiresAt, interval: authentication.interval, clock: clock, progress: progress,
            expired: "The backchannel authentication request expired before the user approved it.",
            cancelled: "Waiting for the backchannel authentication's ping was cancelled.",
            idleInterval: fallbackPollInterval.map { max($0, 1) },
            wake: { await inbox.nextPing(token: token) }
        ) {
            try await backchannelTokenAttempt(authentication)
        }
    }

    /// One token request with the `auth_req_id`.
    func backchannelTokenAttempt(_ authentication: BackchannelAuthentication) async throws -> TokenPollAttempt {
        let attempt = try await tokenPollAttempt(
            .ciba(authenticationRequestID: authentication.authenticationRequestID), scopes: authentication.scopes)
        guard case .tokens(let tokens) = attempt else { return attempt }
        guard tokens.idToken != nil else {
            throw OAuth2Error(.invalidIDToken, source: .server, message: "The token response to a backchannel authentication has no ID token.")
        }
        var expectations = IDTokenValidator.Expectations(accessToken: tokens.accessToken)
        expectations.authenticationRequestID = authentication.authenticationRequestID
        expectations.refreshToken = tokens.refreshToken
        expectations.subject = authentication.expectedSubject
        // Decrypted when encrypted, the signed ID token kept.
        return .tokens(try await validatingIDToken(in: tokens, expecting: expectations))
    }
}
