import Foundation
import HTTPTypes
import Logging

/// How a client or a registrar talks HTTP: what sends the requests, how long one exchange
/// may take, which exchanges are repeated after a transient failure, the hooks around them,
/// where they are logged, the `User-Agent` they carry, and where discovered metadata is
/// kept.
///
/// One value for all of it, given to ``OAuth2Client/init(server:configuration:environment:)``
/// and ``ClientRegistrar/init(server:environment:)``; every member has a default. The
/// ``requestDeadline`` is the one time limit of an exchange: the transport's own settings
/// (``TransportOptions``) bound only the connection and the size of a response.
///
/// ```swift
/// var environment = HTTPEnvironment(transport: AsyncHTTPClientTransport.shared)
/// environment.requestDeadline = .seconds(10)
/// environment.interceptors = [TraceHeaders()]   // your own HTTPInterceptor
/// environment.logger = Logger(label: "auth")
/// let client = try await OAuth2Client(server: .issuer(issuer), configuration: configuration, environment: environment)
/// ```
///
/// The default transport is ``URLSessionTransport/shared``, with the package's `URLSession`
/// trait (on by default). Without it, name a transport: a call that omits it does not compile.
public struct HTTPEnvironment: Sendable {
    /// What sends the requests.
    public var transport: any HTTPTransport
    /// The longest one exchange with a server may take: connecting, the response's head,
    /// its whole body, and the retries of ``retryPolicy``. Past it the exchange is abandoned
    /// (the transport's work is cancelled and its connection closed) and the caller gets
    /// ``OAuth2Error/Code/timeout`` (transient), with ``OAuth2Error/deadline`` set. A server
    /// that answers one byte at a time cannot hold a call longer than this. Default 30 s
    /// (``defaultRequestDeadline``).
    public var requestDeadline: Duration
    /// Which exchanges are repeated after a transient failure (discovery, JWK set, UserInfo
    /// and introspection by default; token requests never), and how often; every attempt
    /// stays inside ``requestDeadline``.
    public var retryPolicy: RetryPolicy
    /// Hooks around every request, in order (see ``HTTPInterceptor``).
    public var interceptors: [any HTTPInterceptor]
    /// Where requests and failures are logged (never a token, code or secret).
    public var logger: Logger
    /// The `User-Agent` sent when a request has none.
    public var userAgent: String
    /// Where discovered metadata is kept; concurrent discoveries of one issuer share one
    /// fetch.
    public var metadataCache: MetadataCache

    /// The default ``requestDeadline``: 30 s.
    public static let defaultRequestDeadline: Duration = .seconds(30)

    /// The `User-Agent` sent when the request has none.
    public static let defaultUserAgent = "swift-oauth2/1.0"

    /// The logger used when none is given: label `swift-oauth2`.
    public static var defaultLogger: Logger { Logger(label: "swift-oauth2") }

    #if URLSession
    /// Creates an environment; the transport is ``URLSessionTransport/shared`` unless you
    /// name another.
    public init(
        transport: any HTTPTransport = URLSessionTransport.shared,
        requestDeadline: Duration = HTTPEnvironment.defaultRequestDeadline,
        retryPolicy: RetryPolicy = RetryPolicy(),
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = HTTPEnvironment.defaultLogger,
        userAgent: String = HTTPEnvironment.defaultUserAgent,
        metadataCache: MetadataCache = .shared
    ) {
        self.init(transport, requestDeadline, retryPolicy, interceptors, logger, userAgent, metadataCache)
    }
    #else
    /// Creates an environment sending with `transport`.
    public init(
        transport: any HTTPTransport,
        requestDeadline: Duration = HTTPEnvironment.defaultRequestDeadline,
        retryPolicy: RetryPolicy = RetryPolicy(),
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = HTTPEnvironment.defaultLogger,
        userAgent: String = HTTPEnvironment.defaultUserAgent,
        metadataCache: MetadataCache = .shared
    ) {
        self.init(transport, requestDeadline, retryPolicy, interceptors, logger, userAgent, metadataCache)
    }
    #endif

    private init(
        _ transport: any HTTPTransport, _ requestDeadline: Duration, _ retryPolicy: RetryPolicy,
        _ interceptors: [any HTTPInterceptor], _ logger: Logger, _ userAgent: String, _ metadataCache: MetadataCache
    ) {
        self.transport = transport
        self.requestDeadline = requestDeadline
        self.retryPolicy = retryPolicy
        self.interceptors = interceptors
        self.logger = logger
        self.userAgent = userAgent
        self.metadataCache = metadataCache
    }

    /// The pipeline every exchange of a client or registrar goes through.
    func pipeline(additionalHeaders: [RequestKind: HTTPFields] = [:]) -> HTTPPipeline {
        var pipeline = HTTPPipeline(
            transport: transport, interceptors: interceptors, logger: logger, userAgent: userAgent, additionalHeaders: additionalHeaders)
        pipeline.deadline = requestDeadline
        pipeline.retryPolicy = retryPolicy
        return pipeline
    }

    /// The metadata of `server`: discovered (through ``metadataCache``) for an issuer, as
    /// given otherwise.
    func metadata(of server: AuthorizationServer, pipeline: HTTPPipeline, now: @escaping @Sendable () -> Date) async throws -> ServerMetadata {
        switch server {
        case .issuer(let issuer):
            return try await metadataCache.metadata(for: issuer) {
                try await Discovery.fetch(issuer: issuer, pipeline: pipeline, now: now)
            }
        case .metadata(let metadata):
            return metadata
        case .preset(let preset):
            return try await metadata(of: preset.server, pipeline: pipeline, now: now)
        }
    }
}
