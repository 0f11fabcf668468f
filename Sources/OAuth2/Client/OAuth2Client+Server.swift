import Foundation

extension OAuth2Client {
    #if URLSession
    /// Creates a client for `server` — an issuer to discover, metadata you have, or a
    /// provider's preset — with `configuration`, talking HTTP through `environment`.
    ///
    /// ```swift
    /// let client = try await OAuth2Client(
    ///     server: .issuer(URL(string: "https://accounts.example.com")!),
    ///     configuration: ClientConfiguration(clientID: "cli", clientSecret: secret))
    /// ```
    ///
    /// An issuer is discovered through the environment's ``HTTPEnvironment/metadataCache``
    /// (OpenID Connect Discovery, then RFC 8414 for the endpoints the first lacks); a
    /// preset's own server is used, and the preset completes `configuration` (see
    /// ``ProviderPreset/applied(to:)``). For settings read from a file, pass their
    /// ``SettingsFile/server`` and ``SettingsFile/configuration``.
    ///
    /// - Parameters:
    ///   - server: where the authorization server's endpoints are.
    ///   - configuration: the client's identity and choices.
    ///   - environment: the transport, interceptors, logger, `User-Agent` and metadata
    ///     cache; ``URLSessionTransport/shared`` and the defaults unless you say otherwise.
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for an unusable configuration;
    ///   ``OAuth2Error/Code/insecureEndpoint`` when an endpoint is neither HTTPS nor on a
    ///   loopback host; for an issuer, ``OAuth2Error/Code/issuerMismatch`` when a document
    ///   names another issuer, and transport and HTTP errors.
    public init(server: AuthorizationServer, configuration: ClientConfiguration, environment: HTTPEnvironment = HTTPEnvironment()) async throws {
        try await self.init(resolving: server, configuration: configuration, environment: environment)
    }
    #else
    /// Creates a client for `server` — an issuer to discover, metadata you have, or a
    /// provider's preset — with `configuration`, talking HTTP through `environment` (without
    /// the `URLSession` trait there is no default transport: name one).
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration``, ``OAuth2Error/Code/insecureEndpoint``;
    ///   for an issuer, ``OAuth2Error/Code/issuerMismatch``, transport and HTTP errors.
    public init(server: AuthorizationServer, configuration: ClientConfiguration, environment: HTTPEnvironment) async throws {
        try await self.init(resolving: server, configuration: configuration, environment: environment)
    }
    #endif

    private init(resolving server: AuthorizationServer, configuration: ClientConfiguration, environment: HTTPEnvironment) async throws {
        var configuration = configuration
        if case .preset(let preset) = server { configuration = preset.applied(to: configuration) }
        let pipeline = environment.pipeline().configured(by: configuration)
        // Before discovery: a configuration the transport cannot serve is refused at once.
        try Self.checkTransport(of: pipeline, for: configuration)
        let now: @Sendable () -> Date = { Date() }
        let metadata = try await environment.metadata(of: server, pipeline: pipeline, now: now)
        try self.init(metadata: metadata, configuration: configuration, pipeline: pipeline, now: now)
    }
}
