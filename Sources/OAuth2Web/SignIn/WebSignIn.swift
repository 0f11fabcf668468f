import Crypto
import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// OpenID Connect sign-in for a web app (a confidential client), independent of any web
/// framework: the routes that sign in and out, and the check that puts the signed-in user
/// in a request. A framework adapter (OAuth2Hummingbird, OAuth2Vapor) only translates its
/// requests into `HTTPRequest` and ``WebResponse`` into its responses.
///
/// ```swift
/// let client = try await OAuth2Client(server: .issuer(issuer), configuration: ClientConfiguration(
///     clientID: "web-app", clientSecret: secret, redirectURI: URL(string: "https://app.example.com/auth/callback")!))
/// let signIn = WebSignIn(client: client, configuration: WebSignInConfiguration(
///     publicBaseURL: URL(string: "https://app.example.com")!))
///
/// // In the app's request handling:
/// if let answer = await signIn.handle(request, body: body) { return answer }   // its own routes
/// switch await signIn.authorize(request, requiring: WebAccessRequirement(scopes: ["orders:read"])) {
/// case .granted(let user): // user.claims, user.tokenSession.perform(...)
/// case .denied(let answer): return answer                                       // a redirect to sign in, or 403
/// }
/// ```
///
/// What it guarantees:
/// - The browser holds an opaque 256-bit session id in one cookie (`HttpOnly`,
///   `SameSite=Lax`, `Path=/`, `Secure` unless the app is on plain-HTTP loopback), a new one
///   at every sign-in; the store keeps only its hash. Tokens stay on the server, in the
///   token store, so the cookie never grows.
/// - Every sign-in uses PKCE, `state` and `nonce` (and PAR, `private_key_jwt` and DPoP when
///   the client is configured so); its callback is checked by the library (state, `iss`, ID
///   token) and must come from the browser that started it (a second cookie binds them);
///   each tab's sign-in has its own `state`.
/// - `returnTo` is a path of the app or a URL of an allowed origin, never anything else.
/// - Sessions end after ``WebSignInConfiguration/idleLifetime`` without use, after
///   ``WebSignInConfiguration/absoluteLifetime`` in any case, at sign-out (a POST with the
///   session's CSRF token), and when the provider says so (back- or front-channel logout);
///   with a shared store, on every replica.
/// - Redirects and the redirect URI are built from
///   ``WebSignInConfiguration/publicBaseURL``, never from the request's `Host`.
/// - No token, code, cookie or CSRF value reaches a log line, a page or an error.
public struct WebSignIn: Sendable {
    /// The client of the provider users sign in with.
    public let client: OAuth2Client
    /// Routes, cookie and lifetimes.
    public let configuration: WebSignInConfiguration
    /// Where the sessions and pending sign-ins are kept.
    public let webSessions: any WebSessionStore
    /// Where the users' tokens are kept (one record per session).
    public let tokenStore: any TokenStore
    /// The options of each user's token `TokenSession`.
    public let tokenSessionOptions: TokenSession.Options
    /// The tokens the app gets for other services on its users' behalf, keyed by the user
    /// session `WebSessionRecord.account`: a session's end (sign-out, back- or front-channel
    /// logout) drops them, on every replica with a shared store.
    public let downstreamTokens: DownstreamTokens?
    private let backChannel: BackChannelLogoutEndpoint?
    private let logger: Logger
    private let now: @Sendable () -> Date
    /// How many sign-ins are starting now (shared by the copies of this value).
    private let startsInFlight = Locked(0)

    /// The answer of ``authorize(_:requiring:)``.
    public enum Access: Sendable {
        /// The request's user meets the requirement.
        case granted(WebUser)
        /// Send this instead of running the handler: a redirect to the provider (sign-in or
        /// step-up), 401 for a request that cannot be redirected, or 403.
        case denied(WebResponse)
    }

    /// Creates the sign-in of a web app.
    ///
    /// - Parameters:
    ///   - client: the provider's client; its redirect URI is replaced by
    ///     ``WebSignInConfiguration/redirectURI`` in every request.
    ///   - configuration: routes, cookie, lifetimes.
    ///   - webSessions: where browser sessions are kept; share one (`PostgresWebSessionStore`)
    ///     between replicas.
    ///   - tokenStore: where the users' tokens are kept; share one (`PostgresTokenStore`) between
    ///     replicas, so that a refresh happens once for all of them.
    ///   - replayStore: where the `jti` of each logout token is recorded; share one
    ///     (`PostgresReplayStore`) between replicas, or a replica may accept a replayed token.
    ///   - tokenSessionOptions: the options of each user's token session.
    ///   - downstreamTokens: the cache of tokens for other services, keyed by
    ///     ``WebSessionRecord/account``; every session that ends drops its entries.
    ///   - logger: sign-ins, sign-outs and refusals at debug level (reasons, never values).
    ///   - now: the clock of sessions and sign-ins (tests inject theirs).
    public init(
        client: OAuth2Client, configuration: WebSignInConfiguration,
        webSessions: any WebSessionStore = MemoryWebSessionStore(), tokenStore: any TokenStore = MemoryTokenStore(),
        replayStore: any ReplayStore = MemoryReplayStore(), tokenSessionOptions: TokenSession.Options = TokenSession.Options(),
        downstreamTokens: DownstreamTokens? = nil,
        logger: Logger = Logger(label: "swift-oauth2.web-sign-in"), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.client = client
        self.configuration = configuration
        self.webSessions = webSessions
        self.tokenStore = tokenStore
        self.tokenSessionOptions = tokenSessionOptions
        self.downstreamTokens = downstreamTokens
        self.logger = logger
        self.now = now
        if let keySet = client.keySet, let issuer = client.metadata.issuer {
            backChannel = BackChannelLogoutEndpoint(
                verifier: LogoutTokenVerifier(issuer: issuer, clientID: client.configuration.clientID, keys: .cache(keySet), replayStore: replayStore),
                logger: logger)
        } else {
            backChannel = nil
        }
    }

    // MARK: Routes

    /// The sign-in's own routes.
    public enum Route: Sendable, Hashable {
        /// ``WebSignInConfiguration/loginPath``.
        case login
        /// ``WebSignInConfiguration/callbackPath``.
        case callback
        /// ``WebSignInConfiguration/logoutPath``.
        case logout
        /// ``WebSignInConfiguration/backChannelLogoutPath``.
        case backChannelLogout
        /// ``WebSignInConfiguration/frontChannelLogoutPath``.
        case frontChannelLogout

        /// Whether the route reads the request's body (at most 32 KB): an adapter collects it
        /// for these only.
        public var readsBody: Bool { self == .logout || self == .backChannelLogout }
    }

    /// The sign-in route `request` is for, by its path; `nil` for any other.
    ///
    /// Paths are compared byte for byte: this runs on every request an app sees, and a
    /// path is ASCII (RFC 3986 percent-encodes the rest).
    public func route(of request: HTTPRequest) -> Route? {
        let path = Self.path(of: request).utf8
        if path.elementsEqual(configuration.loginPath.utf8) { return .login }
        if path.elementsEqual(configuration.callbackPath.utf8) { return .callback }
        if path.elementsEqual(configuration.logoutPath.utf8) { return .logout }
        if path.elementsEqual(configuration.backChannelLogoutPath.utf8) { return .backChannelLogout }
        if path.elementsEqual(configuration.frontChannelLogoutPath.utf8) { return .frontChannelLogout }
        return nil
    }

    /// The most sign-ins one browser may have pending at once.
    public static let maximumPendingSignInsPerBrowser = 4

    /// The most bytes of a request body that ``handle(_:body:)`` reads (a logout form, a
    /// logout token): an adapter collects at most this much, and answers 413 beyond it.
    public static let maximumBodySize = 32 * 1024

    /// Whether ``handle(_:body:)`` reads the body of `request`: a POST to the logout or
    /// back-channel logout route. An adapter collects a body only then.
    public func readsBody(_ request: HTTPRequest) -> Bool {
        request.method == .post && route(of: request)?.readsBody == true
    }

    /// Answers a request to one of the sign-in routes (login, callback, logout, back- and
    /// front-channel logout); `nil` for any other path.
    ///
    /// - Parameters:
    ///   - request: the request's head.
    ///   - body: its body (read by the logout routes, at most 32 KB; see
    ///     ``Route/readsBody``).
    public func handle(_ request: HTTPRequest, body: some Sequence<UInt8> = [UInt8]()) async -> WebResponse? {
        switch route(of: request) {
        case .login: await login(request)
        case .callback: await callback(request)
        case .logout: await logout(request, body: body)
        case .backChannelLogout: await backChannelLogout(request, body: body)
        case .frontChannelLogout: await frontChannelLogout(request)
        case nil: nil
        }
    }

    /// The login route: a GET starts a sign-in and redirects to the provider; `returnTo`
    /// (a path of the app or a URL of an allowed origin) is where the browser goes after it.
    public func login(_ request: HTTPRequest) async -> WebResponse {
        guard request.method == .get || request.method == .head else { return Self.methodNotAllowed("GET") }
        let returnTo = ReturnTo.checked(Self.query(of: request)["returnTo"], configuration: configuration) ?? "/"
        return await startSignIn(request, returnTo: returnTo, requirement: WebAccessRequirement())
    }

    /// The callback route (the redirect URI): checks the provider's answer, exchanges the
    /// code, creates the session (a new cookie), ends the browser's previous session, and
    /// redirects to the sign-in's `returnTo`.
    public func callback(_ request: HTTPRequest) async -> WebResponse {
        guard request.method == .get else { return Self.methodNotAllowed("GET") }
        let query = Self.query(of: request)
        let now = now()
        let pending: PendingSignIn
        do {
            // A JWT-secured response (JARM) carries its state inside the `response` JWT, read
            // here only to find the sign-in: completeAuthorization verifies the JWT.
            let state = query["state"] ?? query["response"].flatMap { client.unverifiedState(ofCallback: [("response", $0)]) }
            guard let state, let found = try await webSessions.takePendingSignIn(state: state, now: now) else {
                logger.debug("Sign-in callback refused: unknown state")
                return .failure(WebSignInError(.unknownSignIn, "This sign-in is unknown, already completed or expired. Please sign in again."))
            }
            pending = found
        } catch {
            return unavailable(error)
        }
        let bindingName = configuration.bindingCookieName(state: pending.request.state)
        let clearBinding = WebCookies.setCookie(name: bindingName, value: "", maxAge: 0, secure: configuration.securesCookies)
        let bindings = WebCookies.ids(named: bindingName, in: request.headerFields, limit: 2).map(Self.hash)
        guard bindings.contains(where: { constantTimeEquals($0, pending.browserBindingHash) }) else {
            logger.debug("Sign-in callback refused: another browser")
            return .failure(WebSignInError(.browserMismatch, "This sign-in was started in another browser. Please sign in again."))
        }

        // The query comes from the browser: a URL Foundation will not make of it is a failed
        // sign-in, never a crash.
        guard let callbackURL = URL(string: configuration.redirectURI.absoluteString + "?" + (Self.rawQuery(of: request) ?? "")) else {
            return .failure(WebSignInError(.signInFailed, "The sign-in failed: the callback's query is malformed."))
        }
        let tokenSet: TokenSet
        do {
            tokenSet = try await client.completeAuthorization(callbackURL: callbackURL, request: pending.request)
        } catch let error as OAuth2Error {
            // The code may be the provider's own word, which anyone can put in the callback's
            // query: only a code the library declares is named, never echoed as it came.
            let named = error.code.isDeclared
            logger.debug("Sign-in failed", metadata: ["code": "\(named ? error.code.rawValue : "unregistered")"])
            let message = named ? "The sign-in failed: \(error.code.rawValue)." : "The sign-in failed: the provider refused it."
            return .failure(WebSignInError(.signInFailed, message, underlyingCode: error.code), cookies: [clearBinding])
        } catch {
            return unavailable(error)
        }
        guard let idToken = tokenSet.idTokenClaims else {
            return .failure(WebSignInError(.missingIdentity, "The provider did not say who signed in (no ID token)."), cookies: [clearBinding])
        }

        let cookieValue = SecureRandom.token()
        var record = WebSessionRecord(
            idHash: Self.hash(cookieValue), account: "web-" + SecureRandom.token(byteCount: 18), issuer: idToken.issuer,
            subject: idToken.subject, providerSessionID: idToken.sessionID, claims: idToken.claims,
            scopes: tokenSet.scopes ?? pending.request.scopes, csrfToken: SecureRandom.token(),
            createdAt: now, lastSeenAt: now, absoluteExpiry: now.addingTimeInterval(configuration.absoluteLifetime))
        record.authorizationDetails = tokenSet.authorizationDetails
        do {
            _ = try await TokenSession(client: client, tokens: tokenSet, store: tokenStore, account: record.account, options: tokenSessionOptions)
            try await webSessions.save(record)
        } catch {
            return unavailable(error)
        }
        // The browser's previous session (a step-up, or another user) ends: one browser, one
        // session. Best effort: the new session stands whatever happens to the old one, which
        // its own lifetime ends otherwise.
        do {
            for previous in try await currentRecords(request) where previous.idHash != record.idHash {
                try await end([previous])
            }
        } catch {
            logger.debug("Sign-in: the previous session could not be ended", metadata: ["error": "\(type(of: error))"])
        }
        logger.debug("Signed in", metadata: ["sub": "\(record.subject)"])
        let cookie = WebCookies.setCookie(
            name: configuration.cookieName, value: cookieValue, maxAge: Int(configuration.absoluteLifetime), secure: configuration.securesCookies)
        guard pending.requirement.shortfall(of: record, now: now) == .none else {
            // The provider did not deliver what the route asked for: no new redirect (a loop).
            return .failure(WebSignInError(.forbidden, "This page needs a sign-in the provider did not give."), cookies: [cookie, clearBinding])
        }
        return .redirect(to: location(pending.returnTo), cookies: [cookie, clearBinding])
    }

    /// The logout route: a POST carrying the session's CSRF token (`csrf`, form encoded)
    /// ends the session here, revokes its tokens, and redirects to the provider's
    /// end-session endpoint (with `id_token_hint` and the post-logout redirect), or, when it
    /// has none, to ``WebSignInConfiguration/postLogoutPath``.
    public func logout(_ request: HTTPRequest, body: some Sequence<UInt8>) async -> WebResponse {
        guard request.method == .post else { return Self.methodNotAllowed("POST") }
        let clearCookie = WebCookies.setCookie(name: configuration.cookieName, value: "", maxAge: 0, secure: configuration.securesCookies)
        if let origin = request.headerFields[.origin], origin != "null", ReturnTo.origin(URL(string: origin) ?? configuration.publicBaseURL) != ReturnTo.origin(configuration.publicBaseURL) {
            return .failure(WebSignInError(.forgedRequest, "This sign-out came from another site."))
        }
        let records: [WebSessionRecord]
        do {
            records = try await currentRecords(request)
        } catch {
            return unavailable(error)
        }
        guard let record = records.first else {
            return .redirect(to: configuration.url(configuration.postLogoutPath), cookies: [clearCookie])
        }
        let form = Self.form(body)
        guard let csrf = form?["csrf"], constantTimeEquals(csrf, record.csrfToken) else {
            logger.debug("Sign-out refused: no or wrong CSRF token")
            return .failure(WebSignInError(.forgedRequest, "This sign-out form is not this session's. Please try again from the app."))
        }
        let stored = try? await tokenStore.load(tokenKey(record.account))
        do {
            try await end([record])
        } catch {
            return unavailable(error)
        }
        if configuration.revokesTokensAtSignOut, client.metadata.revocationEndpoint != nil, let tokenSet = stored?.tokens {
            // Best effort: the session has ended here whatever the provider answers.
            if let refresh = tokenSet.refreshToken {
                try? await client.revoke(refresh, hint: .refreshToken)
            } else {
                try? await client.revoke(tokenSet.accessToken, hint: .accessToken)
            }
        }
        logger.debug("Signed out", metadata: ["sub": "\(record.subject)"])
        let afterwards = configuration.url(configuration.postLogoutPath)
        if client.metadata.endSessionEndpoint != nil,
            let endSession = try? client.endSessionRequest(EndSessionOptions(idTokenHint: stored?.tokens.idToken, postLogoutRedirectURI: afterwards))
        {
            return .redirect(to: endSession.url, cookies: [clearCookie])
        }
        return .redirect(to: afterwards, cookies: [clearCookie])
    }

    /// The back-channel logout route: verifies the provider's logout token (signature with
    /// the client's JWK set cache, `iss`, `aud`, `iat`, `events`, `sid`/`sub`, no `nonce`, a
    /// `jti` not seen before by the replay store) and ends the sessions it names — on every
    /// replica when the session store is shared. Answers as ``BackChannelLogoutEndpoint``.
    public func backChannelLogout(_ request: HTTPRequest, body: some Sequence<UInt8>) async -> WebResponse {
        guard let backChannel else {
            return .failure(WebSignInError(.unavailable, "Back-channel logout needs the provider's issuer and JWK set (discovery)."))
        }
        let answer = await backChannel.handle(request, body: body) { logout in
            let ended = try await endProviderSession(issuer: logout.issuer, subject: logout.subject, providerSessionID: logout.sessionID)
            logger.debug("Back-channel logout", metadata: ["sessions": "\(ended)"])
        }
        return WebResponse(status: answer.status, headerFields: answer.headerFields, body: answer.body)
    }

    /// The front-channel logout route (OpenID Connect Front-Channel Logout 1.0), loaded by
    /// the provider in a hidden frame: with `iss` (this provider's) and `sid`, it ends the
    /// sessions of that provider session, and only those (the cookie a same-site frame
    /// carries decides nothing). Without them the request is refused (403), since any site
    /// could send it; with ``WebSignInConfiguration/acceptsFrontChannelLogoutWithoutSessionID``
    /// it ends the session of the request's cookie instead. The answer clears the session
    /// cookie unless it names a session that lives on: a frame for another provider session
    /// never leaves the browser signed out of a session the app still keeps.
    public func frontChannelLogout(_ request: HTTPRequest) async -> WebResponse {
        guard request.method == .get else { return Self.methodNotAllowed("GET") }
        let query = Self.query(of: request)
        let living: [WebSessionRecord]
        do {
            if let issuer = query["iss"], let sid = query["sid"] {
                guard issuer == client.metadata.issuer else {
                    logger.debug("Front-channel logout refused: another issuer")
                    return .failure(WebSignInError(.forgedRequest, "This logout is for another provider."))
                }
                let ended = try await endProviderSession(issuer: issuer, subject: nil, providerSessionID: sid)
                logger.debug("Front-channel logout", metadata: ["sessions": "\(ended)", "by": "sid"])
            } else if query["iss"] != nil || query["sid"] != nil || !configuration.acceptsFrontChannelLogoutWithoutSessionID {
                // Without both, the request could come from any site: a top-level GET carries
                // the SameSite=Lax cookie, and would sign the user out.
                logger.debug("Front-channel logout refused: no iss and sid")
                return .failure(WebSignInError(.forgedRequest, "A front-channel logout must carry iss and sid."))
            } else {
                let ended = try await currentRecords(request)
                try await end(ended)
                logger.debug("Front-channel logout", metadata: ["sessions": "\(ended.count)", "by": "cookie"])
            }
            living = try await currentRecords(request)
        } catch {
            return unavailable(error)
        }
        var headerFields: HTTPFields = [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"]
        if living.isEmpty {
            headerFields[.setCookie] = WebCookies.setCookie(name: configuration.cookieName, value: "", maxAge: 0, secure: configuration.securesCookies)
        }
        return WebResponse(status: .ok, headerFields: headerFields, body: Array("<!doctype html><title>Signed out</title>".utf8))
    }

    // MARK: Protected routes

    /// The signed-in user of `request`, if its cookie names a live session; never
    /// redirects. Use ``authorize(_:requiring:)`` for a route that requires a sign-in.
    public func user(for request: HTTPRequest) async throws -> WebUser? {
        guard let record = try await currentRecord(request) else { return nil }
        try await touchIfDue(record)
        return webUser(record)
    }

    /// Checks `request` against `requirement`: its user, or the response to send instead.
    ///
    /// - Not signed in: a GET (or HEAD) is redirected to the provider, to come back to the
    ///   same path; any other method gets 401 (a form's body cannot survive the trip).
    /// - Signed in, short of a scope, an `acr` or a recent enough sign-in: the same, asking
    ///   the provider for what is missing (step-up).
    /// - A claim that does not match: 403.
    public func authorize(_ request: HTTPRequest, requiring requirement: WebAccessRequirement = WebAccessRequirement()) async -> Access {
        let record: WebSessionRecord?
        do {
            record = try await currentRecord(request)
        } catch {
            return .denied(unavailable(error))
        }
        if let record {
            switch requirement.shortfall(of: record, now: now()) {
            case .none:
                try? await touchIfDue(record)
                return .granted(webUser(record))
            case .forbidden:
                return .denied(.failure(WebSignInError(.forbidden, "You are signed in, but this page is not for you.")))
            case .stepUp:
                break
            }
        }
        guard request.method == .get || request.method == .head else {
            var answer = WebResponse.failure(WebSignInError(.forbidden, "Please sign in first."))
            answer.status = .unauthorized
            return .denied(answer)
        }
        var answer = await startSignIn(request, returnTo: ReturnTo.checked(Self.pathAndQuery(of: request), configuration: configuration) ?? "/", requirement: requirement)
        if record == nil, !WebCookies.ids(named: configuration.cookieName, in: request.headerFields, limit: 1).isEmpty {
            // The cookie names no session (ended, expired, or a row that could not be read):
            // the browser forgets it.
            answer.headerFields.append(HTTPField(
                name: .setCookie, value: WebCookies.setCookie(name: configuration.cookieName, value: "", maxAge: 0, secure: configuration.securesCookies)))
        }
        return .denied(answer)
    }

    // MARK: Inside

    /// Starts a sign-in: keeps its pending record and redirects to the provider.
    ///
    /// Each sign-in gets a new binding, in a cookie of its own (named after its `state`): no
    /// value the request brings is taken over, so a cookie planted by someone else binds
    /// nothing. A browser keeps at most ``maximumPendingSignInsPerBrowser`` bindings; the
    /// answer clears the others it carries.
    func startSignIn(_ request: HTTPRequest, returnTo: String, requirement: WebAccessRequirement) async -> WebResponse {
        // Anyone can start a sign-in, and with PAR each start is a call to the provider, with
        // a store each is a write: past the bound, a start is shed rather than queued.
        let admitted = startsInFlight.withLock { count in
            guard count < Self.maximumConcurrentSignInStarts else { return false }
            count += 1
            return true
        }
        guard admitted else {
            logger.debug("Sign-in start shed: \(Self.maximumConcurrentSignInStarts) already in progress")
            var answer = WebResponse.failure(WebSignInError(.unavailable, "Too many sign-ins are starting. Please try again in a moment."))
            answer.headerFields[.retryAfter] = "1"
            return answer
        }
        defer { startsInFlight.withLock { $0 -= 1 } }
        let binding = SecureRandom.token()
        var scopes = configuration.scopes
        for scope in requirement.scopes.sorted() where !scopes.contains(scope) { scopes.append(scope) }
        do {
            let authorization = try await client.startAuthorization(AuthorizationOptions(
                scopes: scopes, maxAge: requirement.maxAge, acrValues: requirement.acrValues,
                authorizationDetails: requirement.authorizationDetails, redirectURI: configuration.redirectURI))
            try await webSessions.insert(PendingSignIn(
                request: authorization, browserBindingHash: Self.hash(binding), returnTo: returnTo, requirement: requirement,
                expiresAt: now().addingTimeInterval(configuration.signInLifetime)))
            var cookies = [WebCookies.setCookie(
                name: configuration.bindingCookieName(state: authorization.state), value: binding, maxAge: Int(configuration.signInLifetime),
                secure: configuration.securesCookies)]
            let carried = WebCookies.names(startingWith: configuration.bindingCookieName + "-", in: request.headerFields)
            for name in carried.dropLast(Self.maximumPendingSignInsPerBrowser - 1) {
                cookies.append(WebCookies.setCookie(name: name, value: "", maxAge: 0, secure: configuration.securesCookies))
            }
            return .redirect(to: authorization.url, cookies: cookies)
        } catch let error as OAuth2Error {
            logger.debug("Sign-in could not start", metadata: ["code": "\(error.code)"])
            return .failure(WebSignInError(.unavailable, "The sign-in could not start: \(error.code.rawValue).", underlyingCode: error.code))
        } catch {
            return unavailable(error)
        }
    }

    /// The most sign-ins one app value starts at once (each a pending record written and,
    /// with PAR, a call to the provider, caused by anyone who can reach the login route):
    /// beyond it a start is answered 503 with `Retry-After: 1`, so that a login flood holds
    /// at most this many of the store's connections and of the provider's.
    public static let maximumConcurrentSignInStarts = 32

    /// The most session-cookie values of one request looked up in the store: a browser
    /// sends one (two at most, when an older cookie of another path or domain lingers);
    /// an attacker may send hundreds, each a query.
    static let maximumSessionCookieLookups = 2

    /// The live sessions the request's cookies name (normally one), from its first
    /// ``maximumSessionCookieLookups`` well-formed values.
    func currentRecords(_ request: HTTPRequest) async throws -> [WebSessionRecord] {
        var found: [WebSessionRecord] = []
        for value in WebCookies.ids(named: configuration.cookieName, in: request.headerFields, limit: Self.maximumSessionCookieLookups) {
            if let record = try await webSessions.session(Self.hash(value), idleLifetime: configuration.idleLifetime, now: now()) {
                found.append(record)
            }
        }
        return found
    }

    /// The first live session the request's cookies name, from its first
    /// ``maximumSessionCookieLookups`` well-formed values: ``currentRecords(_:)``'s first,
    /// without the lookups after it (this runs for every signed-in request).
    func currentRecord(_ request: HTTPRequest) async throws -> WebSessionRecord? {
        for value in WebCookies.ids(named: configuration.cookieName, in: request.headerFields, limit: Self.maximumSessionCookieLookups) {
            if let record = try await webSessions.session(Self.hash(value), idleLifetime: configuration.idleLifetime, now: now()) {
                return record
            }
        }
        return nil
    }

    /// Records a use of the session, at most once a minute (or a tenth of the idle lifetime).
    func touchIfDue(_ record: WebSessionRecord) async throws {
        let now = now()
        if now.timeIntervalSince(record.lastSeenAt) >= min(60, configuration.idleLifetime / 10) {
            try await webSessions.touch(record.idHash, now: now)
        }
    }

    /// Ends sessions: their records and their tokens.
    /// Ends `records`: their tokens first, then the sessions, so that a failure half-way
    /// leaves a session to end again, never tokens that no session names.
    func end(_ records: [WebSessionRecord]) async throws {
        try await removeTokens(of: records)
        for record in records { try await webSessions.remove(record.idHash) }
    }

    /// Ends the sessions a provider's logout names (back- or front-channel): the tokens of
    /// those it finds, then the sessions, then the tokens of any that a sign-in added in
    /// between. Returns the number of sessions ended.
    @discardableResult
    func endProviderSession(issuer: String, subject: String?, providerSessionID: String?) async throws -> Int {
        let found = try await webSessions.sessions(issuer: issuer, subject: subject, providerSessionID: providerSessionID)
        try await removeTokens(of: found)
        let removed = try await webSessions.removeSessions(issuer: issuer, subject: subject, providerSessionID: providerSessionID)
        let accounts = Set(found.map(\.account))
        try await removeTokens(of: removed.filter { !accounts.contains($0.account) })
        return removed.count
    }

    func removeTokens(of records: [WebSessionRecord]) async throws {
        for record in records {
            try await tokenStore.remove(tokenKey(record.account))
            try await downstreamTokens?.endSession(record.account)
        }
    }

    func tokenKey(_ account: String) -> TokenSessionKey { TokenSession.key(for: client, account: account) }

    func webUser(_ record: WebSessionRecord) -> WebUser {
        WebUser(record: record, client: client, store: tokenStore, options: tokenSessionOptions)
    }

    /// A path of the app (or an allowed URL) as an absolute URL for `Location`.
    package func location(_ returnTo: String) -> URL {
        returnTo.hasPrefix("/") ? configuration.url(returnTo) : (URL(string: returnTo) ?? configuration.url("/"))
    }

    func unavailable(_ error: any Error) -> WebResponse {
        logger.debug("Web sign-in unavailable", metadata: ["error": "\(type(of: error))"])
        return .failure(WebSignInError(.unavailable, "The sign-in service is unavailable. Please try again shortly."))
    }

    static func methodNotAllowed(_ allowed: String) -> WebResponse {
        var answer = WebResponse.failure(WebSignInError(.methodNotAllowed, "This route accepts \(allowed) only."))
        answer.headerFields[.allow] = allowed
        return answer
    }

    /// The SHA-256 of `value`, base64url: how ids and bindings are stored. (One allocation,
    /// the string: this runs for every signed-in request.)
    static func hash(_ value: String) -> String {
        var value = value
        let digest = value.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
        return digest.withUnsafeBytes { bytes in
            String(unsafeUninitializedCapacity: (SHA256.byteCount * 4 + 2) / 3) { Base64URL.encode(bytes, into: $0) }
        }
    }

    /// The request's path without its query and fragment.
    static func path(of request: HTTPRequest) -> Substring {
        let full = request.path ?? "/"
        let end = full.utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? full.utf8.endIndex
        return full[..<end]
    }

    static func pathAndQuery(of request: HTTPRequest) -> String { request.path ?? "/" }

    static func rawQuery(of request: HTTPRequest) -> String? {
        guard let full = request.path, let mark = full.firstIndex(of: "?") else { return nil }
        return String(full[full.index(after: mark)...].prefix { $0 != "#" })
    }

    /// The query's parameters; of a repeated name, the first.
    package static func query(of request: HTTPRequest) -> [String: String] {
        guard let raw = rawQuery(of: request), let pairs = FormURLEncoding.decode(raw) else { return [:] }
        var result: [String: String] = [:]
        for (name, value) in pairs where result[name] == nil { result[name] = value }
        return result
    }

    /// A form-encoded body's parameters (at most 32 KB); `nil` when it is not one.
    package static func form(_ body: some Sequence<UInt8>) -> [String: String]? {
        var bytes: [UInt8] = []
        for byte in body {
            guard bytes.count < maximumBodySize else { return nil }
            bytes.append(byte)
        }
        guard let text = String(validating: bytes, as: UTF8.self), let pairs = FormURLEncoding.decode(text) else { return nil }
        var result: [String: String] = [:]
        for (name, value) in pairs where result[name] == nil { result[name] = value }
        return result
    }
}
