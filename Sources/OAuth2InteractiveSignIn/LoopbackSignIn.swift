import Foundation
import OAuth2

/// How a sign-in front end reaches the user's browser.
public enum BrowserChoice: Sendable {
    /// The system's browser through a ``BrowserLauncher`` (`$BROWSER`, `xdg-open`, `open`);
    /// the URL is printed too, and is all there is when no launcher works.
    case system(BrowserLauncher)
    /// No browser: the URL is printed for the user to open (`--no-browser`, an SSH session).
    case none
    /// Your own opener (an embedded web view, a test driving the provider's pages); it
    /// returns whether it opened the URL.
    case custom(@Sendable (URL) async -> Bool)

    /// The system's browser with the process's environment.
    public static var system: BrowserChoice { .system(BrowserLauncher()) }

    /// Opens `url`; `false` for ``none`` or when the opener failed.
    func open(_ url: URL) async -> Bool {
        switch self {
        case .system(let launcher): return await launcher.open(url)
        case .none: return false
        case .custom(let opener): return await opener(url)
        }
    }
}

/// Interactive sign-in with the authorization code flow through a loopback redirect (RFC
/// 8252 §7.3), for command-line tools and desktop programs.
///
/// ```swift
/// let tokens = try await LoopbackSignIn(timeout: .seconds(120)).signIn(client: client)
/// // or, saved in a store and kept fresh:
/// let session = try await LoopbackSignIn().signIn(client: client, store: store)
/// ```
///
/// It starts a ``LoopbackRedirectListener``, builds the authorization request with the
/// listener's redirect URI (PKCE, `state`, `nonce` as always), opens the browser (or only
/// prints the URL), waits for the response — a request without this sign-in's `state` is
/// answered and ignored — and exchanges the code with
/// `OAuth2Client.completeAuthorization(callbackURL:request:)`, which checks
/// everything else and verifies the ID token. The listener is closed and its port
/// released whichever way the sign-in ends.
public struct LoopbackSignIn: Sendable {
    /// The loopback address to listen on.
    public var host: LoopbackRedirectListener.Host
    /// The port: 0 for any free one (RFC 8252 §7.3); a fixed one for providers that compare
    /// redirect URIs exactly.
    public var port: Int
    /// The redirect URI's path.
    public var callbackPath: String
    /// The longest wait for the browser; `nil` waits until the task is cancelled.
    public var timeout: Duration?
    /// How the URL reaches the browser.
    public var browser: BrowserChoice
    /// Where the user's instructions are written.
    public var output: any TerminalOutput
    /// The pages the browser is shown.
    public var pages: LoopbackPages

    /// Creates a sign-in.
    ///
    /// - Parameters:
    ///   - host: the loopback address (``LoopbackRedirectListener/Host/ipv4``).
    ///   - port: the port (0: any free port).
    ///   - callbackPath: the redirect URI's path (`/callback`).
    ///   - timeout: the longest wait (5 minutes).
    ///   - browser: how to open the URL (the system's browser).
    ///   - output: where instructions go (standard error).
    ///   - pages: the browser's pages.
    public init(
        host: LoopbackRedirectListener.Host = .ipv4,
        port: Int = 0,
        callbackPath: String = "/callback",
        timeout: Duration? = .seconds(300),
        browser: BrowserChoice = .system,
        output: any TerminalOutput = StandardErrorOutput(),
        pages: LoopbackPages = LoopbackPages()
    ) {
        self.host = host
        self.port = port
        self.callbackPath = callbackPath
        self.timeout = timeout
        self.browser = browser
        self.output = output
        self.pages = pages
    }

    /// Signs the user in and returns the tokens.
    ///
    /// - Parameters:
    ///   - client: the client; its configured redirect URI is replaced by the listener's.
    ///   - options: the authorization request's options (scopes, prompt, login hint…);
    ///     `redirectURI` is set to the listener's.
    ///
    /// The authorization request is made by `OAuth2Client.startAuthorization(_:)`:
    /// pushed (PAR) when the server requires it or the configuration asks for it, with
    /// `dpop_jkt` and a signed request object when the configuration has them.
    ///
    /// - Throws: what ``LoopbackRedirectListener/start(host:port:callbackPath:pages:relaysFragment:)`` throws
    ///   (`OAuth2Error.Code.network` for a port in use); what
    ///   `OAuth2Client.startAuthorization(_:)` throws;
    ///   `OAuth2Error.Code.timeout` when no response came in time;
    ///   `OAuth2Error.Code.cancelled` when the task is cancelled; the provider's
    ///   error (`access_denied`…) and everything
    ///   `OAuth2Client.completeAuthorization(callbackURL:request:)` throws.
    public func signIn(client: OAuth2Client, options: AuthorizationOptions = AuthorizationOptions()) async throws -> TokenSet {
        // A JWT-secured response in the fragment (JARM's fragment.jwt) needs the fragment relay.
        let relaysFragment = (options.responseMode ?? client.configuration.jarm?.responseMode) == "fragment.jwt"
        let listener = try await LoopbackRedirectListener.start(
            host: host, port: port, callbackPath: callbackPath, pages: pages, relaysFragment: relaysFragment)
        return try await signIn(client: client, options: options, listener: listener)
    }

    /// Signs the user in and keeps the sign-in: the tokens are saved in `store` under
    /// `account`, and the session that keeps them fresh is returned — one call from nothing
    /// to a stored `TokenSession`.
    ///
    /// ```swift
    /// let session = if let stored = try await TokenSession.restore(client: client, store: store) {
    ///     stored
    /// } else {
    ///     try await LoopbackSignIn().signIn(client: client, store: store)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - client: the client that signs in.
    ///   - store: where the tokens are saved (a keyring, a private directory, PostgreSQL).
    ///   - account: the name the tokens are saved under; `"default"` unless the program
    ///     keeps several identities.
    ///   - options: the authorization request's options, as in ``signIn(client:options:)``.
    ///   - sessionOptions: the session's options (refresh leeway, renewal, retries).
    /// - Returns: the session, its tokens already in `store`.
    /// - Throws: as ``signIn(client:options:)``; what `store` throws when saving.
    public func signIn(
        client: OAuth2Client,
        store: any TokenStore,
        account: String = "default",
        options: AuthorizationOptions = AuthorizationOptions(),
        sessionOptions: TokenSession.Options = TokenSession.Options()
    ) async throws -> TokenSession {
        let tokens = try await signIn(client: client, options: options)
        return try await TokenSession(client: client, tokens: tokens, store: store, account: account, options: sessionOptions)
    }

    /// Signs the user in with a client that may not exist yet: when `configuration` has no
    /// client id, registers one first (RFC 7591), as p2/OAuth2 does, then signs in with it.
    ///
    /// The listener starts first, so that the client is registered with the listener's
    /// redirect URI (`http://127.0.0.1:PORT/callback`, the port it got) unless `client`
    /// names its own redirect URIs; its scopes default to the configuration's. The
    /// registration is saved in `store` (`RegistrationStore.saveRegistration(_:issuer:)`)
    /// before the browser opens, so that a sign-in that fails later leaves no orphan
    /// credentials behind. With a client id in `configuration`, nothing is registered.
    ///
    /// ```swift
    /// let registrar = try await ClientRegistrar(server: .issuer(issuer))
    /// let result = try await LoopbackSignIn().signIn(
    ///     registrar: registrar, configuration: ClientConfiguration(clientID: "", scopes: ["openid"]), store: store)
    /// // keep result.registration?.clientID for the next run
    /// ```
    ///
    /// - Returns: the client that signed in, the registration when one was made, and the tokens.
    /// - Throws: what `ClientRegistrar.register(_:initialAccessToken:)` and the store
    ///   throw; as ``signIn(client:options:)``.
    public func signIn(
        registrar: ClientRegistrar,
        configuration: ClientConfiguration,
        registering client: RegistrationMetadata = RegistrationMetadata(),
        initialAccessToken: String? = nil,
        store: (any RegistrationStore)? = nil,
        options: AuthorizationOptions = AuthorizationOptions()
    ) async throws -> (client: OAuth2Client, registration: ClientRegistration?, tokens: TokenSet) {
        let relaysFragment = (options.responseMode ?? configuration.jarm?.responseMode) == "fragment.jwt"
        let listener = try await LoopbackRedirectListener.start(
            host: host, port: port, callbackPath: callbackPath, pages: pages, relaysFragment: relaysFragment)
        let prepared: (client: OAuth2Client, registration: ClientRegistration?)
        do {
            var configuration = configuration
            if configuration.clientID.isEmpty { configuration.redirectURI = listener.redirectURI }
            var wanted = client
            if wanted.grantTypes.isEmpty, configuration.clientID.isEmpty { wanted.grantTypes = ["authorization_code", "refresh_token"] }
            if wanted.responseTypes.isEmpty, configuration.clientID.isEmpty { wanted.responseTypes = ["code"] }
            prepared = try await registrar.client(
                for: configuration, registering: wanted, initialAccessToken: initialAccessToken, store: store)
        } catch {
            await listener.close()
            throw error
        }
        let tokens = try await signIn(client: prepared.client, options: options, listener: listener)
        return (prepared.client, prepared.registration, tokens)
    }

    private func signIn(client: OAuth2Client, options: AuthorizationOptions, listener: LoopbackRedirectListener) async throws -> TokenSet {
        do {
            var options = options
            options.redirectURI = listener.redirectURI
            // Pushed (PAR) when the server requires it or the configuration asks for it.
            let request = try await client.startAuthorization(options)
            let callback = try await wait(on: listener, opening: request.url, purpose: "sign in") { url in
                request.asksForJWTResponse ? Self.jwtVerdict(url, request: request, client: client) : Self.verdict(url, request: request)
            }
            return try await client.completeAuthorization(callbackURL: callback, request: request)
        } catch {
            await listener.close()
            throw error
        }
    }

    /// Signs the user in with the legacy implicit grant and returns the tokens (never a
    /// refresh token).
    ///
    /// The listener relays the fragment (see ``LoopbackRedirectListener``): the browser
    /// lands on a page whose one inline script posts the fragment back, and the response is
    /// judged like a code flow's — a post without this sign-in's `state` is answered and
    /// ignored. Then `OAuth2Client.completeImplicitAuthorization(callbackURL:request:)`
    /// checks everything and verifies the ID token (`nonce` and `at_hash` required).
    ///
    /// - Parameters:
    ///   - client: the client, with `ClientConfiguration.allowsImplicitGrant` set.
    ///   - responseType: `token`, or `id_token token` for an ID token too.
    ///   - options: the request's options; `redirectURI` is set to the listener's.
    /// - Throws: `OAuth2Error.Code.invalidConfiguration` when the configuration does
    ///   not allow the implicit grant; the listener's errors as for
    ///   ``signIn(client:options:)``; what
    ///   `OAuth2Client.completeImplicitAuthorization(callbackURL:request:)` throws.
    @available(*, deprecated, message: "The implicit grant is insecure (RFC 9700 §2.1.2): use signIn(client:options:), the authorization code flow with PKCE.")
    public func implicitSignIn(
        client: OAuth2Client, responseType: ImplicitResponseType, options: AuthorizationOptions = AuthorizationOptions()
    ) async throws -> TokenSet {
        guard client.configuration.allowsImplicitGrant else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The implicit grant is off: set ClientConfiguration.allowsImplicitGrant to use it (RFC 9700 advises against it).")
        }
        let listener = try await LoopbackRedirectListener.start(
            host: host, port: port, callbackPath: callbackPath, pages: pages, relaysFragment: true)
        do {
            var options = options
            options.redirectURI = listener.redirectURI
            let request = try client.implicitAuthorizationRequest(responseType, options: options)
            let callback = try await wait(on: listener, opening: request.url, purpose: "sign in") { url in
                Self.implicitVerdict(url, request: request)
            }
            return try await client.completeImplicitAuthorization(callbackURL: callback, request: request)
        } catch {
            await listener.close()
            throw error
        }
    }

    /// The implicit grant's verdict: a response (relayed fragment, or an error in the query)
    /// with this request's `state` that passes every check but the ID token's is accepted;
    /// one with this `state` that fails ends the sign-in with a failure page; anything else
    /// is ignored.
    static func implicitVerdict(_ url: URL, request: AuthorizationRequest) -> LoopbackRedirectListener.Verdict {
        let states = LoopbackRedirectListener.parameters(of: url).filter { $0.0 == "state" }
        guard states.count == 1, constantTimeEqual(states[0].1, request.state) else { return .reject }
        do {
            _ = try ImplicitAuthorizationResponse(callbackURL: url, request: request)
            return .accept
        } catch {
            if error.code == .redirectMismatch { return .reject }
            return .acceptFailure(errorCode: error.source == .server ? (error.serverCode ?? error.code.rawValue) : nil)
        }
    }

    /// Ends the provider's session (OpenID Connect RP-Initiated Logout) and waits for the
    /// post-logout redirect on a loopback listener, whose `state` must be the one sent.
    ///
    /// The listener's redirect URI (``host``, ``port``, ``callbackPath``) must be one of the
    /// client's registered post-logout redirect URIs.
    ///
    /// - Parameters:
    ///   - client: the client whose provider session ends.
    ///   - options: the logout request's options (`idTokenHint`…);
    ///     `postLogoutRedirectURI` is set to the listener's.
    /// - Throws: `OAuth2Error.Code.missingEndpoint` when the provider has no
    ///   end-session endpoint; `OAuth2Error.Code.timeout`,
    ///   `OAuth2Error.Code.cancelled`, and the listener's errors as for
    ///   ``signIn(client:options:)``.
    public func signOut(client: OAuth2Client, options: EndSessionOptions = EndSessionOptions()) async throws {
        var pages = pages
        pages.successHeading = "Signed out"
        pages.successMessage = "You are signed out. You can close this window and return to the terminal."
        let listener = try await LoopbackRedirectListener.start(host: host, port: port, callbackPath: callbackPath, pages: pages)
        do {
            var options = options
            options.postLogoutRedirectURI = listener.redirectURI
            let logout = try client.endSessionRequest(options)
            let callback = try await wait(on: listener, opening: logout.url, purpose: "sign out") { url in
                (try? logout.validateCallback(url)) != nil ? .accept : .reject
            }
            try logout.validateCallback(callback)
        } catch {
            await listener.close()
            throw error
        }
    }

    /// Opens `url` while waiting on `listener`; says what happens on ``output``.
    private func wait(
        on listener: LoopbackRedirectListener,
        opening url: URL,
        purpose: String,
        verdict: @escaping @Sendable (URL) -> LoopbackRedirectListener.Verdict
    ) async throws -> URL {
        let browser = browser
        let output = output
        let redirect = listener.redirectURI
        async let announced: Void = {
            let opened = await browser.open(url)
            if Task.isCancelled { return }
            if opened {
                output.write("Your browser has been opened to \(purpose). If it did not open, visit:\n\n    \(url.absoluteString)\n\n")
            } else {
                output.write("To \(purpose), open this URL in a browser:\n\n    \(url.absoluteString)\n\n")
            }
            output.write("Waiting for the browser to return to \(redirect.absoluteString)…\n")
        }()
        let callback = try await listener.waitForCallback(timeout: timeout, verdict: verdict)
        await announced
        return callback
    }

    /// Accepts a response with this request's `state` (compared in constant time) that
    /// passes every check; ends with a failure page on one with this `state` that fails
    /// (an `error`, a foreign `iss`); ignores anything else, so a stray or forged request
    /// cannot end the sign-in.
    static func verdict(_ url: URL, request: AuthorizationRequest) -> LoopbackRedirectListener.Verdict {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        let states = items.filter { $0.name == "state" }
        guard states.count == 1, let state = states[0].value, constantTimeEqual(state, request.state) else { return .reject }
        do {
            _ = try AuthorizationResponse(callbackURL: url, request: request)
            return .accept
        } catch {
            if error.code == .redirectMismatch { return .reject }
            return .acceptFailure(errorCode: error.source == .server ? (error.serverCode ?? error.code.rawValue) : nil)
        }
    }

    /// The verdict on a callback to a request that asked for a JWT-secured response (JARM):
    /// one whose `response` JWT carries this request's `state` (read before the JWT is
    /// verified, as a plain callback's `state` is) is accepted, and
    /// `OAuth2Client.completeAuthorization(callbackURL:request:)` then checks everything;
    /// anything else is ignored.
    static func jwtVerdict(_ url: URL, request: AuthorizationRequest, client: OAuth2Client) -> LoopbackRedirectListener.Verdict {
        let pairs = LoopbackRedirectListener.parameters(of: url)
        guard pairs.filter({ $0.0 == "response" }).count == 1, let state = client.unverifiedState(ofCallback: pairs),
            constantTimeEqual(state, request.state)
        else { return .reject }
        return .accept
    }

    /// Compares two strings in time that depends only on their lengths.
    static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}
