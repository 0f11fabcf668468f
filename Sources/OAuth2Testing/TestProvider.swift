import Foundation
import OAuth2Internals
import OAuth2JOSE

/// An OpenID provider on 127.0.0.1 for your own tests and demos: discovery, a JWK set with
/// key rotation, an authorization endpoint that signs a configured user in without a page
/// (PKCE S256 required, `iss` in the response), a token endpoint with every grant of the core
/// plus refresh and device, UserInfo, introspection, revocation, RP-initiated logout and
/// back-channel logout (logout tokens POSTed to clients that registered a URI). Failures, delays and token lifetimes are scriptable, and every request is counted.
///
/// ```swift
/// let provider = try await TestProvider.start(configuration: .demo)
/// let client = try await OAuth2Client(
///     server: .issuer(provider.issuer),
///     configuration: ClientConfiguration(
///         clientID: TestProvider.Demo.publicClientID,
///         redirectURI: URL(string: "http://127.0.0.1:8765/callback")!,
///         scopes: ["openid", "profile", "offline_access"]))
/// let request = try await client.startAuthorization()
/// let callback = try await provider.followRedirect(from: request.url)   // the "browser"
/// let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
///
/// provider.failNext(.token, with: .status(503))
/// // … the refresh your code does now sees a 503 …
/// #expect(provider.requestCount(.token) == 2)
/// await provider.shutdown()
/// ```
///
/// Shut a provider down when done with it (``shutdown()``), or let
/// ``withProvider(configuration:_:)`` do it.
///
/// The provider is a conformant, strict authorization server — never a mock of the
/// library: it decides every protocol question with its own code (only signing uses the
/// `OAuth2` module's JOSE). It keeps everything in memory, and listens on loopback only.
/// Tokens, codes and secrets never reach a log: it has none.
public final class TestProvider: Sendable {
    /// The issuer: `http://127.0.0.1:<port>` (`https` with ``Configuration/tls``) and the
    /// configured path.
    public let issuer: URL
    /// The port it listens on.
    public let port: Int
    let core: ProviderCore
    let server: HTTPServer

    private init(issuer: URL, port: Int, core: ProviderCore, server: HTTPServer) {
        self.issuer = issuer
        self.port = port
        self.core = core
        self.server = server
    }

    /// Starts a provider on 127.0.0.1 (a free port unless the configuration names one).
    ///
    /// - Throws: ``TestProviderError`` (`.invalidConfiguration`, `.keyGeneration`), or the
    ///   error of binding the port.
    public static func start(configuration: Configuration = .demo) async throws -> TestProvider {
        try configuration.validate()
        let firstKey: JWSSigningKey
        if let signingKey = configuration.signingKey {
            firstKey = keyed(signingKey)
        } else {
            // Generating an RSA key takes seconds in a debug build: off the cooperative pool
            // (BlockingIO), whose threads the test's other tasks (servers among them) need.
            let algorithm = configuration.signingAlgorithm
            firstKey = try await BlockingIO.run { try newKey(algorithm) }
        }
        // The handler needs the core, the core needs the issuer, the issuer needs the port.
        let box = Locked<ProviderCore?>(nil)
        let tls = try configuration.tls?.serverContext()
        let server = try await HTTPServer(host: "127.0.0.1", port: configuration.port, tls: tls) { request in
            guard let core = box.withLock({ $0 }) else {
                return .response(.serviceUnavailable, headers: [("Retry-After", "1")], body: [])
            }
            return await core.handle(request)
        }
        let issuerText = "\(tls == nil ? "http" : "https")://127.0.0.1:\(server.port)" + configuration.issuerPath
        guard let issuer = URL(string: issuerText) else {
            await server.shutdown()
            throw TestProviderError(.invalidConfiguration, "The issuer \(issuerText) is not a URL.")
        }
        let core = ProviderCore(issuer: issuerText, configuration: configuration, keys: [firstKey], group: server.group)
        box.withLock { $0 = core }
        return TestProvider(issuer: issuer, port: server.port, core: core, server: server)
    }

    /// Starts a provider, runs `body` with it, and shuts it down afterwards (also when
    /// `body` throws).
    public static func withProvider<T>(
        configuration: Configuration = .demo, _ body: (TestProvider) async throws -> T
    ) async throws -> T {
        let provider = try await start(configuration: configuration)
        do {
            let value = try await body(provider)
            await provider.shutdown()
            return value
        } catch {
            await provider.shutdown()
            throw error
        }
    }

    /// Stops listening and closes every connection. The provider answers nothing afterwards.
    public func shutdown() async {
        await server.shutdown()
    }

    /// The URL of an endpoint (for discovery, the OpenID document).
    public func url(for endpoint: Endpoint) -> URL {
        URL(string: core.url(endpoint))!
    }

    // MARK: - Users, clients and lifetimes

    /// The lifetimes of what is issued from now on.
    public var lifetimes: Lifetimes {
        get { core.state.withLock { $0.lifetimes } }
        set { core.state.withLock { $0.lifetimes = newValue } }
    }

    /// The user signed in when a request's `login_hint` names nobody; `nil` denies.
    /// Setting a name that is not among the users makes sign-ins fail with
    /// `access_denied`.
    public var autoApprovedUser: String? {
        get { core.state.withLock { $0.autoApprovedUser } }
        set { core.state.withLock { $0.autoApprovedUser = newValue } }
    }

    /// Registers a client, or replaces the one with its id.
    public func register(_ client: Client) {
        core.state.withLock { $0.clients[client.id] = client }
    }

    /// Adds a user, or replaces the one with its username.
    public func register(_ user: User) {
        core.state.withLock { $0.users[user.username] = user }
    }

    // MARK: - Keys

    /// The `kid`s of the published keys, oldest first; the last one signs.
    public var publishedKeyIDs: [String] {
        core.state.withLock { $0.keys.compactMap(\.keyID) }
    }

    /// The `kid` of the key that signs ID tokens now.
    public var signingKeyID: String {
        core.state.withLock { $0.signingKey.keyID ?? "" }
    }

    /// Adds a new key (same algorithm) to the JWK set and signs with it from now on. The
    /// old keys stay published until ``retireOldKeys()``, so tokens already issued still
    /// verify.
    ///
    /// - Returns: the new key's `kid`.
    /// - Throws: ``TestProviderError`` `.keyGeneration`.
    @discardableResult
    public func rotateKeys() throws -> String {
        let algorithm = core.state.withLock { $0.signingKey.algorithm }
        let key = try Self.newKey(algorithm)
        core.state.withLock { $0.keys.append(key) }
        return key.keyID ?? ""
    }

    /// Unpublishes every key but the signing one: tokens signed before the last rotation
    /// no longer verify.
    public func retireOldKeys() {
        core.state.withLock { state in state.keys = [state.signingKey] }
    }

    private static func newKey(_ algorithm: JWSAlgorithm) throws(TestProviderError) -> JWSSigningKey {
        do {
            return try keyed(JWSSigningKey.generate(algorithm))
        } catch {
            throw TestProviderError(.keyGeneration, "No \(algorithm) key could be generated: \(error.message)")
        }
    }

    /// The key with a `kid`: its own, or its RFC 7638 thumbprint.
    private static func keyed(_ key: JWSSigningKey) -> JWSSigningKey {
        guard key.keyID == nil, let publicKey = key.publicKey else { return key }
        return key.withKeyID(publicKey.thumbprint)
    }

    // MARK: - Scripting

    /// Answers the next `times` requests to `endpoint` with `failure` instead (queued after
    /// any failures already scripted for it). A `.delay` then answers normally.
    ///
    /// ```swift
    /// provider.failNext(.token, with: .error("temporarily_unavailable", status: 503))
    /// provider.failNext(.userInfo, with: .delay(.seconds(2)))
    /// provider.failNext(.jwks, with: .closeConnection, times: 3)
    /// ```
    public func failNext(_ endpoint: Endpoint, with failure: Failure, times: Int = 1) {
        guard times > 0 else { return }
        core.state.withLock { $0.failures[endpoint, default: []] += Array(repeating: failure, count: times) }
    }

    /// Drops every scripted failure not yet used.
    public func clearFailures() {
        core.state.withLock { $0.failures = [:] }
    }

    /// How many requests `endpoint` has received (scripted failures included).
    public func requestCount(_ endpoint: Endpoint) -> Int {
        core.state.withLock { $0.counts[endpoint] ?? 0 }
    }

    /// The request count of every endpoint that received any.
    public var requestCounts: [Endpoint: Int] {
        core.state.withLock { $0.counts }
    }

    /// Sets every request count back to zero.
    public func resetRequestCounts() {
        core.state.withLock { $0.counts = [:] }
    }

    /// Revokes every grant and token, and forgets pending codes and device authorizations
    /// (as if the server had lost its database): refreshes fail with `invalid_grant`,
    /// access tokens with `invalid_token`.
    public func revokeAll() {
        core.state.withLock { state in
            state.grants = [:]
            state.accessTokens = [:]
            state.refreshTokens = [:]
            state.codes = [:]
            state.devices = [:]
            state.userCodes = [:]
        }
    }

    /// Makes every access token issued so far expired, as if its lifetime had passed:
    /// UserInfo answers 401 `invalid_token`, introspection `active: false`. Refresh tokens
    /// still work.
    public func expireAccessTokens() {
        let past = Date().addingTimeInterval(-1)
        core.state.withLock { state in
            for token in state.accessTokens.keys { state.accessTokens[token]?.expiresAt = past }
        }
    }

    /// Whether a token (access or refresh) the provider issued would still be accepted.
    public func isActive(token: String) -> Bool {
        let now = Date()
        return core.state.withLock { state in
            if let record = state.accessTokens[token] { return now < record.expiresAt && state.grants[record.grantID] != nil }
            if let record = state.refreshTokens[token] {
                return !record.retired && (record.expiresAt.map { now < $0 } ?? true) && state.grants[record.grantID] != nil
            }
            return false
        }
    }

    /// Whether the browser session an ID token's `sid` names is still on (it ends at
    /// the end-session endpoint).
    public func isSessionActive(_ sessionID: String) -> Bool {
        core.state.withLock { $0.sessions[sessionID] != nil }
    }

    // MARK: - Device flow

    /// Approves a pending device authorization, as the user would on the verification page.
    ///
    /// - Parameters:
    ///   - userCode: the user code the device authorization response gave.
    ///   - username: who approves; `nil` for the auto-approved user.
    /// - Throws: ``TestProviderError`` `.unknownUserCode` (unknown or expired code) or
    ///   `.unknownUser`.
    public func approveDevice(userCode: String, as username: String? = nil) throws {
        try core.decideDevice(userCode: userCode, username: username, approve: true, now: Date())
    }

    /// Denies a pending device authorization: the next poll gets `access_denied`.
    ///
    /// - Throws: ``TestProviderError`` `.unknownUserCode`.
    public func denyDevice(userCode: String) throws {
        try core.decideDevice(userCode: userCode, username: nil, approve: false, now: Date())
    }

    /// The user codes of the device authorizations waiting for a decision.
    public var pendingDeviceUserCodes: [String] {
        let now = Date()
        return core.state.withLock { state in
            state.devices.values.filter { record in
                if case .pending = record.status { return now < record.expiresAt }
                return false
            }.map(\.userCode).sorted()
        }
    }
}
