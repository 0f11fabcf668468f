// The entry points that take no transport use `URLSessionTransport.shared`. They exist only
// with the package's `URLSession` trait (on by default); without it every client names its
// transport, and a call that omits it does not compile. See Package.swift.
#if URLSession
import Foundation
import Logging

extension OAuth2Client {
    /// Creates a client for a server whose metadata you have, sending with
    /// ``URLSessionTransport/shared``.
    ///
    /// - Throws: what ``init(metadata:configuration:transport:interceptors:logger:userAgent:)`` throws.
    public init(
        metadata: ServerMetadata,
        configuration: ClientConfiguration,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = OAuth2Client.defaultLogger,
        userAgent: String = OAuth2Client.defaultUserAgent
    ) throws {
        try self.init(
            metadata: metadata, configuration: configuration, transport: URLSessionTransport.shared,
            interceptors: interceptors, logger: logger, userAgent: userAgent)
    }

    /// Discovers the issuer's metadata and creates a client for it, sending with
    /// ``URLSessionTransport/shared``.
    ///
    /// - Throws: what ``discover(issuer:configuration:transport:interceptors:logger:userAgent:cache:)`` throws.
    public static func discover(
        issuer: URL,
        configuration: ClientConfiguration,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = OAuth2Client.defaultLogger,
        userAgent: String = OAuth2Client.defaultUserAgent,
        cache: MetadataCache = .shared
    ) async throws -> OAuth2Client {
        try await discover(
            issuer: issuer, configuration: configuration, transport: URLSessionTransport.shared,
            interceptors: interceptors, logger: logger, userAgent: userAgent, cache: cache)
    }

    /// Creates a client for `server`, sending with ``URLSessionTransport/shared``.
    ///
    /// - Throws: what ``init(server:configuration:transport:interceptors:logger:userAgent:cache:)`` throws.
    public init(
        server: AuthorizationServer,
        configuration: ClientConfiguration,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = OAuth2Client.defaultLogger,
        userAgent: String = OAuth2Client.defaultUserAgent,
        cache: MetadataCache = .shared
    ) async throws {
        try await self.init(
            server: server, configuration: configuration, transport: URLSessionTransport.shared,
            interceptors: interceptors, logger: logger, userAgent: userAgent, cache: cache)
    }

    /// Creates a client for a provider preset, sending with ``URLSessionTransport/shared``.
    ///
    /// - Throws: what ``init(preset:configuration:transport:interceptors:logger:userAgent:cache:)`` throws.
    public init(
        preset: ProviderPreset,
        configuration: ClientConfiguration,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = OAuth2Client.defaultLogger,
        userAgent: String = OAuth2Client.defaultUserAgent,
        cache: MetadataCache = .shared
    ) async throws {
        try await self.init(
            preset: preset, configuration: configuration, transport: URLSessionTransport.shared,
            interceptors: interceptors, logger: logger, userAgent: userAgent, cache: cache)
    }

    /// Creates a client from settings read from a file, sending with
    /// ``URLSessionTransport/shared``.
    ///
    /// - Throws: what ``init(settings:transport:interceptors:logger:userAgent:cache:)`` throws.
    public init(
        settings: ClientSettings,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = OAuth2Client.defaultLogger,
        userAgent: String = OAuth2Client.defaultUserAgent,
        cache: MetadataCache = .shared
    ) async throws {
        try await self.init(
            settings: settings, transport: URLSessionTransport.shared,
            interceptors: interceptors, logger: logger, userAgent: userAgent, cache: cache)
    }
}

extension ClientRegistrar {
    /// Creates a registrar for a server whose metadata you have, sending with
    /// ``URLSessionTransport/shared``.
    ///
    /// - Throws: what ``init(metadata:transport:interceptors:logger:userAgent:)`` throws.
    public init(
        metadata: ServerMetadata,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = OAuth2Client.defaultLogger,
        userAgent: String = OAuth2Client.defaultUserAgent
    ) throws {
        try self.init(
            metadata: metadata, transport: URLSessionTransport.shared,
            interceptors: interceptors, logger: logger, userAgent: userAgent)
    }

    /// Discovers the issuer's metadata and creates a registrar for it, sending with
    /// ``URLSessionTransport/shared``.
    ///
    /// - Throws: what ``discover(issuer:transport:interceptors:logger:userAgent:cache:)`` throws.
    public static func discover(
        issuer: URL,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = OAuth2Client.defaultLogger,
        userAgent: String = OAuth2Client.defaultUserAgent,
        cache: MetadataCache = .shared
    ) async throws -> ClientRegistrar {
        try await discover(
            issuer: issuer, transport: URLSessionTransport.shared,
            interceptors: interceptors, logger: logger, userAgent: userAgent, cache: cache)
    }
}
#endif
