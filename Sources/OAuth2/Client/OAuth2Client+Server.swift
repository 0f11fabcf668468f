import Foundation
import Logging

extension OAuth2Client {
    /// Creates a client for `server`: discovers the metadata when `server` is an issuer
    /// (through `cache`, see ``discover(issuer:configuration:transport:interceptors:logger:userAgent:cache:)``),
    /// uses the given metadata otherwise.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for an unusable configuration;
    ///   ``OAuth2Error/Code/insecureEndpoint`` when an endpoint is neither HTTPS nor on a
    ///   loopback host; for an issuer, everything discovery throws
    ///   (``OAuth2Error/Code/issuerMismatch``, transport and HTTP errors).
    public init(
        server: AuthorizationServer,
        configuration: ClientConfiguration,
        transport: any HTTPTransport,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = OAuth2Client.defaultLogger,
        userAgent: String = OAuth2Client.defaultUserAgent,
        cache: MetadataCache = .shared
    ) async throws {
        switch server {
        case .issuer(let issuer):
            self = try await OAuth2Client.discover(
                issuer: issuer, configuration: configuration, transport: transport, interceptors: interceptors,
                logger: logger, userAgent: userAgent, cache: cache)
        case .metadata(let metadata):
            try self.init(
                metadata: metadata, configuration: configuration, transport: transport, interceptors: interceptors,
                logger: logger, userAgent: userAgent)
        }
    }

    /// Creates a client for a provider: `configuration` completed by the preset (see
    /// ``ProviderPreset/applied(to:)``), against the preset's server (discovered when it
    /// is an issuer).
    ///
    /// ```swift
    /// let client = try await OAuth2Client(
    ///     preset: try .keycloak(baseURL: URL(string: "https://sso.example.com")!, realm: "main"),
    ///     configuration: ClientConfiguration(clientID: "worker", clientSecret: secret))
    /// ```
    ///
    /// - Throws: what ``init(server:configuration:transport:interceptors:logger:userAgent:cache:)``
    ///   throws.
    public init(
        preset: ProviderPreset,
        configuration: ClientConfiguration,
        transport: any HTTPTransport,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = OAuth2Client.defaultLogger,
        userAgent: String = OAuth2Client.defaultUserAgent,
        cache: MetadataCache = .shared
    ) async throws {
        try await self.init(
            server: preset.server, configuration: preset.applied(to: configuration), transport: transport,
            interceptors: interceptors, logger: logger, userAgent: userAgent, cache: cache)
    }

    /// Creates a client from settings read from a file (see ``ClientSettings``): their
    /// configuration, against their server (discovered when the settings give only an
    /// issuer).
    ///
    /// ```swift
    /// let settings = try ClientSettings(contentsOf: URL(fileURLWithPath: "oauth2.json"))
    /// let client = try await OAuth2Client(settings: settings)
    /// ```
    ///
    /// - Throws: what ``init(server:configuration:transport:interceptors:logger:userAgent:cache:)``
    ///   throws.
    public init(
        settings: ClientSettings,
        transport: any HTTPTransport,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = OAuth2Client.defaultLogger,
        userAgent: String = OAuth2Client.defaultUserAgent,
        cache: MetadataCache = .shared
    ) async throws {
        try await self.init(
            server: settings.server, configuration: settings.configuration, transport: transport,
            interceptors: interceptors, logger: logger, userAgent: userAgent, cache: cache)
    }
}
