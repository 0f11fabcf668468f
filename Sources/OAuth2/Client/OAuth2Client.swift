import Foundation
import HTTPTypes
import Logging

/// The stateless OAuth 2.0 client: every operation against one authorization server, for
/// one client registration.
///
/// An `OAuth2Client` holds no tokens — it turns a grant into a ``TokenSet``, a token into
/// an introspection result, a callback URL into a checked ``AuthorizationResponse``. It is
/// an immutable `Sendable` value: share it freely between tasks.
///
/// ```swift
/// let client = try await OAuth2Client(
///     server: .issuer(URL(string: "https://accounts.example.com")!),
///     configuration: ClientConfiguration(clientID: "cli", clientSecret: "s3cret"))
/// let tokens = try await client.requestToken(.clientCredentials(scopes: ["read"]))
/// ```
///
/// Every method throws ``OAuth2Error`` (errors thrown by your own ``HTTPInterceptor``s
/// pass through unchanged).
public struct OAuth2Client: Sendable {
    /// Everything a client holds, in one immutable object that its copies share: a copy of
    /// a client (each ``Session`` keeps one) is one reference, not a copy of its metadata,
    /// configuration and transport. Changing the configuration of a copy gives
    /// it a storage of its own.
    final class Storage: Sendable {
        let metadata: ServerMetadata
        let configuration: ClientConfiguration
        let pipeline: HTTPPipeline
        let now: @Sendable () -> Date
        let keySet: JWKSCache?
        let dpopNonces: DPoPNonceCache
        /// The issuer a ``SessionKey`` of this client names: the metadata's `issuer`, else
        /// the token endpoint. Read once: every session computes its key from it.
        let sessionIssuer: String
        /// The ID-token validator of this metadata and configuration, built once (reading
        /// the advertised algorithms out of the metadata costs allocations on every call).
        let idTokenValidator: IDTokenValidator

        init(
            metadata: ServerMetadata, configuration: ClientConfiguration, pipeline: HTTPPipeline,
            now: @escaping @Sendable () -> Date, keySet: JWKSCache?, dpopNonces: DPoPNonceCache
        ) {
            self.metadata = metadata
            self.configuration = configuration
            self.pipeline = pipeline
            self.now = now
            self.keySet = keySet
            self.dpopNonces = dpopNonces
            self.sessionIssuer = metadata.issuer ?? metadata.tokenEndpoint?.absoluteString ?? ""
            let options = configuration.idTokenValidation
            self.idTokenValidator = IDTokenValidator(
                issuer: metadata.issuer ?? "",
                clientID: configuration.clientID,
                allowedAlgorithms: IDTokenValidator.allowedAlgorithms(
                    configured: options.allowedAlgorithms, advertised: metadata.idTokenSigningAlgValuesSupported),
                clientSecret: configuration.clientSecret,
                options: options)
        }

        /// This storage with another configuration, sharing the rest.
        func with(_ configuration: ClientConfiguration) -> Storage {
            Storage(
                metadata: metadata, configuration: configuration, pipeline: pipeline.configured(by: configuration), now: now,
                keySet: keySet, dpopNonces: dpopNonces)
        }
    }

    private var storage: Storage

    /// The server's metadata (discovered or built by hand).
    public var metadata: ServerMetadata { storage.metadata }
    /// The client's configuration.
    public internal(set) var configuration: ClientConfiguration {
        get { storage.configuration }
        set { storage = storage.with(newValue) }
    }
    var pipeline: HTTPPipeline { storage.pipeline }
    var now: @Sendable () -> Date { storage.now }
    /// The issuer of this client's session keys (``Session/key(for:account:)``).
    var sessionIssuer: String { storage.sessionIssuer }
    /// The provider's JWK set, shared by the copies of this client; `nil` without a `jwks_uri`.
    public var keySet: JWKSCache? { storage.keySet }
    /// The validator for this client's ID tokens: the provider's issuer, this client's id,
    /// the allowed algorithms (configured, else advertised, else RS256), the client secret
    /// as the HMAC key when HMAC is configured. Built once per metadata and configuration.
    public var idTokenValidator: IDTokenValidator { storage.idTokenValidator }
    /// The latest DPoP nonce of each server this client talked to, shared by its copies.
    package var dpopNonces: DPoPNonceCache { storage.dpopNonces }

    /// Whether `other` is this client or an unchanged copy of it (one storage).
    func isSameStorage(as other: OAuth2Client) -> Bool { storage === other.storage }

    /// Creates a client for a server whose metadata you have, synchronously: the package's
    /// own entry for tests and tools that build metadata by hand.
    /// ``init(server:configuration:environment:)`` is the public way.
    #if URLSession
    package init(metadata: ServerMetadata, configuration: ClientConfiguration, environment: HTTPEnvironment = HTTPEnvironment()) throws(OAuth2Error) {
        try self.init(
            metadata: metadata, configuration: configuration,
            pipeline: environment.pipeline().configured(by: configuration), now: { Date() })
    }
    #else
    package init(metadata: ServerMetadata, configuration: ClientConfiguration, environment: HTTPEnvironment) throws(OAuth2Error) {
        try self.init(
            metadata: metadata, configuration: configuration,
            pipeline: environment.pipeline().configured(by: configuration), now: { Date() })
    }
    #endif

    init(
        metadata: ServerMetadata,
        configuration: ClientConfiguration,
        pipeline: HTTPPipeline,
        now: @escaping @Sendable () -> Date
    ) throws(OAuth2Error) {
        try configuration.validate()
        for (name, kind) in ServerMetadata.knownFields where kind == .url {
            if let url = metadata.url(name) {
                try EndpointPolicy.validate(url, name: name.replacingOccurrences(of: "_", with: " "))
            }
        }
        let keySet = metadata.jwksURI.map { url in
            JWKSCache(url: url, policy: configuration.idTokenValidation.keySetPolicy) {
                try await Self.fetchKeySet(url, pipeline: pipeline)
            }
        }
        storage = Storage(
            metadata: metadata, configuration: configuration, pipeline: pipeline, now: now, keySet: keySet, dpopNonces: DPoPNonceCache())
    }

    /// The logger this client writes to.
    public var logger: Logger { pipeline.logger }

    /// The deadline set by ``withRequestDeadline(_:isolation:operation:)`` for the current task.
    @TaskLocal static var deadlineOverride: Duration?

    /// Runs `operation` with every exchange it makes — with any client, sessions included —
    /// bounded by `deadline` instead of the client's ``ClientConfiguration/requestDeadline``.
    ///
    /// ```swift
    /// let token = try await OAuth2Client.withRequestDeadline(.seconds(5)) {
    ///     try await session.freshAccessToken()
    /// }
    /// ```
    public static func withRequestDeadline<T>(
        _ deadline: Duration, isolation: isolated (any Actor)? = #isolation, operation: () async throws -> T
    ) async rethrows -> T {
        try await $deadlineOverride.withValue(deadline, operation: operation)
    }

    func endpoint(_ url: URL?, _ name: String) throws(OAuth2Error) -> URL {
        guard let url else {
            throw .client(.missingEndpoint, "The server has no \(name).")
        }
        return url
    }
}

// MARK: - Authorization code flow

extension OAuth2Client {
    /// Builds an authorization request: the URL to open in a browser, and the state, nonce
    /// and PKCE verifier to keep until the callback.
    ///
    /// PKCE (S256) and `state` are always on; a `nonce` is added when `openid` is among the
    /// scopes; `dpop_jkt` with ``ClientConfiguration/dpop``; the parameters go in a signed
    /// request object with ``ClientConfiguration/requestObject``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the request must be pushed
    ///   (``startAuthorization(_:)`` pushes it); ``OAuth2Error/Code/missingEndpoint``;
    ///   ``OAuth2Error/Code/insecureEndpoint``.
    package func authorizationRequest(_ options: AuthorizationOptions = AuthorizationOptions()) throws
        -> AuthorizationRequest
    {
        if pushesAuthorizationRequests {
            throw OAuth2Error.client(
                .invalidConfiguration, "Authorization requests to this server are pushed (RFC 9126): use startAuthorization(_:).")
        }
        return try AuthorizationRequest.make(metadata: metadata, configuration: configuration, options: options, now: now())
    }

    /// Checks a callback (state, `iss`, errors) and exchanges its code for tokens.
    ///
    /// - Parameters:
    ///   - callbackURL: the URL the browser was redirected to.
    ///   - request: the request that started the flow.
    /// - Throws: ``OAuth2Error/Code/stateMismatch``, ``OAuth2Error/Code/issuerMismatch``,
    ///   the authorization server's error (`access_denied`…), or the token endpoint's.
    ///   A callback that fails a check never reaches the token endpoint.
    public func completeAuthorization(callbackURL: URL, request: AuthorizationRequest) async throws -> TokenSet {
        let response = try AuthorizationResponse(callbackURL: callbackURL, request: request)
        return try await exchangeCode(response, request: request)
    }

    /// Exchanges a checked authorization code for tokens.
    public func exchangeCode(_ response: AuthorizationResponse, request: AuthorizationRequest) async throws -> TokenSet {
        let grant = Grant.authorizationCode(
            code: response.code, redirectURI: request.redirectURI, codeVerifier: request.codeVerifier)
        let tokens = try await sendGrant(grant, requestedScopes: request.scopes)
        guard tokens.idToken != nil || request.nonce == nil else {
            // OIDC Core §3.1.3.3: a token response to an `openid` request carries an ID token.
            throw OAuth2Error(.invalidIDToken, source: .client, message: "The token response to an OpenID Connect request has no ID token.",
                underlyingError: JOSEError(.malformed, "missing id_token"))
        }
        try await validateIDToken(
            in: tokens,
            expecting: IDTokenValidator.Expectations(nonce: request.nonce, maxAge: request.maxAge, accessToken: tokens.accessToken, authorizationCode: response.code))
        return tokens
    }
}

// MARK: - Token endpoint

extension OAuth2Client {
    /// Sends a grant to the token endpoint and returns the tokens.
    ///
    /// The client authenticates with the configured method (or the one chosen from
    /// `token_endpoint_auth_methods_supported`); the configuration's extra token
    /// parameters and headers are added. With ``ClientConfiguration/dpop`` the request
    /// carries a DPoP proof (retried once with the server's nonce when it asks for one), and
    /// a `Bearer` answer is refused with ``OAuth2Error/Code/unboundToken`` unless
    /// ``DPoPOptions/allowsBearerTokens``.
    ///
    /// - Parameters:
    ///   - grant: the grant to send.
    ///   - requestedScopes: the scopes to assume when the response omits `scope`
    ///     (defaults to the grant's).
    ///
    /// An ID token in the response is verified (without a nonce: none was sent) before the
    /// tokens are returned; if it fails, the call throws and no token is returned.
    public func requestToken(_ grant: Grant, requestedScopes: [String]? = nil) async throws -> TokenSet {
        let tokens = try await sendGrant(grant, requestedScopes: requestedScopes)
        try await validateIDToken(in: tokens, expecting: IDTokenValidator.Expectations(accessToken: tokens.accessToken))
        return tokens
    }

    /// The token request itself, without ID-token validation.
    func sendGrant(_ grant: Grant, requestedScopes: [String]?) async throws -> TokenSet {
        let url = try endpoint(metadata.tokenEndpoint, "token endpoint")
        var parameters: [(String, String)] = [("grant_type", grant.type)]
        parameters += grant.parameters
        return try await post(
            url, parameters: parameters, kind: .token,
            authMethods: metadata.tokenEndpointAuthMethodsSupported, dpop: true
        ) { response, body, sentAt in
            let tokens = try TokenSet.parse(
                response: response,
                body: body,
                requestedScopes: requestedScopes ?? grant.requestedScopes,
                sentAt: sentAt,
                receivedAt: now(),
                quirks: configuration.quirks
            )
            try checkBinding(of: tokens, statusCode: response.status.code)
            return tokens
        }
    }

    /// RFC 9449 §5: a server that ignored the proof issued a token anyone holding it can
    /// use; refused unless ``DPoPOptions/allowsBearerTokens``.
    func checkBinding(of tokens: TokenSet, statusCode: Int) throws(OAuth2Error) {
        if let dpop = configuration.dpop, tokens.tokenType != .dpop, !dpop.allowsBearerTokens {
            throw OAuth2Error(
                .unboundToken, source: .server,
                message: "The token endpoint answered a DPoP token request with a \(tokens.tokenType) token; set DPoPOptions.allowsBearerTokens to accept it.",
                statusCode: statusCode)
        }
    }

    /// `client_credentials`: tokens for the client itself.
    public func clientCredentials(scopes: [String]? = nil) async throws -> TokenSet {
        try await requestToken(.clientCredentials(scopes: scopes ?? configuration.scopes))
    }

    /// `password`: the resource owner's credentials (legacy servers only; RFC 9700 forbids
    /// it for new deployments).
    public func password(username: String, password: String, scopes: [String]? = nil) async throws -> TokenSet {
        try await requestToken(.password(username: username, password: password, scopes: scopes ?? configuration.scopes))
    }

    /// Refreshes `tokens` and merges the answer into them: a response without a refresh
    /// token keeps the current one (Glewlwyd), one with a new refresh token replaces it
    /// (rotation, as django-oauth-toolkit does). A new ID token is verified and must name
    /// the same issuer and subject as the current one; if it fails, nothing is returned.
    ///
    /// Empty `scopes` keep the grant's scopes and send none — unless the configuration has
    /// ``ServerQuirks/scopesOnRefresh``, which sends the configuration's scopes.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidRequest`` when `tokens` has no refresh token;
    ///   `invalid_grant` (``OAuth2Error/requiresReauthorization``) — also for an HTTP 400
    ///   without an error object, Glewlwyd's answer — when the refresh token is
    ///   dead.
    package func refresh(_ tokens: TokenSet, scopes: [String] = []) async throws -> TokenSet {
        guard let refreshToken = tokens.refreshToken else {
            throw OAuth2Error.client(.invalidRequest, "The token set has no refresh token.")
        }
        var sentScopes = scopes
        if sentScopes.isEmpty, configuration.quirks.contains(.scopesOnRefresh) { sentScopes = configuration.scopes }
        let refreshed: TokenSet
        do {
            refreshed = try await sendGrant(
                .refreshToken(refreshToken, scopes: sentScopes), requestedScopes: scopes.nilIfEmpty ?? tokens.scopes)
        } catch let error as OAuth2Error where error.inferredFromStatus && error.statusCode == 400 {
            // Glewlwyd answers a revoked, expired or unknown refresh token with an empty 400,
            // as it answers a wrong secret with an empty 403 (read as invalid_client).
            var refused = error
            refused.code = .invalidGrant
            refused.message = "HTTP 400 without an error object in answer to a refresh: the server refused the refresh token."
            throw refused
        }
        // OIDC Core §12.2: a new ID token names the same issuer and subject as the first.
        try await validateIDToken(
            in: refreshed,
            expecting: IDTokenValidator.Expectations(accessToken: refreshed.accessToken, previous: tokens.idTokenClaims))
        return tokens.merging(refreshed: refreshed)
    }
}

// MARK: - Revocation and introspection

extension OAuth2Client {
    /// Revokes a token (RFC 7009). Revoking a refresh token usually revokes the access
    /// tokens issued with it.
    ///
    /// Per RFC 7009 §2.2 a server answers 200 for an unknown or already invalid token too,
    /// so success means "this token no longer works", not "this token existed".
    public func revoke(_ token: String, hint: TokenTypeHint? = nil) async throws {
        let url = try endpoint(metadata.revocationEndpoint, "revocation endpoint")
        var parameters = [("token", token)]
        if let hint { parameters.append(("token_type_hint", hint.rawValue)) }
        try await post(
            url, parameters: parameters, kind: .revocation,
            authMethods: metadata.revocationEndpointAuthMethodsSupported ?? metadata.tokenEndpointAuthMethodsSupported
        ) { response, body, _ in
            let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
            if let error = ResponseParsing.error(in: response, members: members, kind: .revocation, now: now()) {
                throw error
            }
        }
    }

    /// Asks the introspection endpoint (RFC 7662) whether a token is active, and what it
    /// grants.
    public func introspect(_ token: String, hint: TokenTypeHint? = nil) async throws -> IntrospectionResponse {
        let url = try endpoint(metadata.introspectionEndpoint, "introspection endpoint")
        var parameters = [("token", token)]
        if let hint { parameters.append(("token_type_hint", hint.rawValue)) }
        return try await post(
            url, parameters: parameters, kind: .introspection,
            authMethods: metadata.introspectionEndpointAuthMethodsSupported ?? metadata.tokenEndpointAuthMethodsSupported
        ) { response, body, _ in
            try IntrospectionResponse.parse(response: response, body: body, receivedAt: now())
        }
    }
}

// MARK: - Sending

extension OAuth2Client {
    /// POSTs an authenticated form request: the client's authentication is applied, the
    /// configuration's extras for `kind` are added. `read` gets the response, its body and
    /// the time the request was sent; an ``OAuth2Error`` it throws leaves with every secret
    /// the request carried withheld from the server's text (see ``HeldSecrets``).
    ///
    /// With `dpop` (and ``ClientConfiguration/dpop`` set), the request carries a DPoP proof
    /// with the server's latest nonce; an answer asking for another nonce
    /// (`use_dpop_nonce` with a `DPoP-Nonce` header) is retried once with it. A retry is a
    /// new request: new client assertion, new proof.
    func post<Answer>(
        _ url: URL,
        parameters: [(String, String)],
        kind: RequestKind,
        authMethods: [String]?,
        dpop: Bool = false,
        read: (HTTPResponse, Data, Date) throws -> Answer
    ) async throws -> Answer {
        let key = dpop ? configuration.dpop?.key : nil
        var sentAt = now()
        let sent = try await sendRetryingDPoPNonce(to: url, dpop: key != nil, kind: kind) { nonce in
            var request = try HTTPRequest.make(method: .post, url: url)
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            var parameters = parameters
            let method = configuration.resolvedAuthenticationMethod(supported: authMethods)
            try ClientAuthentication.apply(
                method, configuration: configuration, endpoint: url, metadata: metadata, now: now(),
                to: &request, parameters: &parameters)
            parameters.appendExtras(configuration.additionalParameters[kind] ?? [:])
            if let key { request.headerFields[.dpop] = try Self.proof(key, method: .post, url: url, nonce: nonce, now: now()) }
            sentAt = now()
            return (request, Data(FormURLEncoding.encode(parameters).utf8))
        }
        do {
            return try read(sent.response, sent.responseBody, sentAt)
        } catch let error as OAuth2Error {
            throw error.withholding(HeldSecrets(request: sent.request, body: sent.body))
        }
    }

    /// Sends the request `make` builds for a DPoP nonce — the server's latest for `url`
    /// when `dpop` — and, when the answer refuses the proof for want of a new nonce
    /// (`use_dpop_nonce` with a `DPoP-Nonce` header, RFC 9449 §8 and §9), once more with the
    /// nonce it gave: a new request, so a new proof (and client assertion). Every nonce a
    /// response carries is remembered for the server's next requests.
    func sendRetryingDPoPNonce(
        to url: URL, dpop: Bool, kind: RequestKind, _ make: (_ nonce: String?) async throws -> (HTTPRequest, Data?)
    ) async throws -> (request: HTTPRequest, body: Data?, response: HTTPResponse, responseBody: Data) {
        var nonce = dpop ? await dpopNonces.nonce(for: url) : nil
        var retried = false
        while true {
            let (request, body) = try await make(nonce)
            let (response, responseBody) = try await pipeline.send(request, body: body, kind: kind)
            // (The cache is an actor: no hop to it for the usual response without a nonce.)
            let fresh = response.headerFields[.dpopNonce] == nil ? nil : await dpopNonces.remember(from: response, for: url)
            guard dpop, !retried, let fresh, fresh != nonce, Self.asksForDPoPNonce(response, body: responseBody) else {
                return (request, body, response, responseBody)
            }
            nonce = fresh
            retried = true
        }
    }

    /// A signed DPoP proof, or ``OAuth2Error/Code/invalidConfiguration`` when the key cannot sign.
    static func proof(
        _ key: DPoPKey, method: HTTPRequest.Method, url: URL, accessToken: String? = nil, nonce: String?, now: Date
    ) throws(OAuth2Error) -> String {
        do {
            return try key.proof(method: method, url: url, accessToken: accessToken, nonce: nonce, issuedAt: now)
        } catch {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The DPoP proof cannot be signed: \(error.message)", underlyingError: error)
        }
    }

    /// `true` when a response refuses a DPoP proof for want of a (new) nonce: the
    /// authorization server's `{"error": "use_dpop_nonce"}` (RFC 9449 §8) or a resource
    /// server's `WWW-Authenticate: DPoP error="use_dpop_nonce"` (§9).
    static func asksForDPoPNonce(_ response: HTTPResponse, body: Data) -> Bool {
        guard response.status.kind == .clientError else { return false }
        let code = OAuth2Error.Code.useDPoPNonce.rawValue
        for value in response.headerFields[values: .wwwAuthenticate] {
            if let challenge = WWWAuthenticate(value), challenge.scheme.lowercased() == "dpop", challenge.parameters["error"] == code {
                return true
            }
        }
        return ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])?["error"]?.stringValue == code
    }
}
