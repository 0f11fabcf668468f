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
    /// a client (each ``TokenSession`` keeps one) is one reference, not a copy of its metadata,
    /// configuration and transport. Changing the configuration of a copy gives
    /// it a storage of its own.
    final class Storage: Sendable {
        let metadata: ServerMetadata
        let configuration: ClientConfiguration
        let pipeline: HTTPPipeline
        let now: @Sendable () -> Date
        let keySet: JWKSCache?
        let dpopNonces: DPoPNonceCache
        /// The issuer a ``TokenSessionKey`` of this client names: the metadata's `issuer`, else
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
                keySet: keySet, dpopNonces: configuration.dpop?.nonceStore.map { DPoPNonceCache(store: $0) } ?? dpopNonces)
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
    /// The issuer of this client's session keys (``TokenSession/key(for:account:)``).
    var sessionIssuer: String { storage.sessionIssuer }
    /// The provider's JWK set, shared by the copies of this client; `nil` without a `jwks_uri`.
    public var keySet: JWKSCache? { storage.keySet }
    /// The validator for this client's ID tokens: the provider's issuer, this client's id,
    /// the allowed algorithms (configured, else advertised, else RS256), the client secret
    /// as the HMAC key when HMAC is configured. Built once per metadata and configuration.
    public var idTokenValidator: IDTokenValidator { storage.idTokenValidator }
    /// The latest DPoP nonce of each server this client talked to, shared by its copies (and,
    /// through ``DPoPOptions/nonceStore``, by a fleet's replicas).
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
        try Self.checkTransport(of: pipeline, for: configuration)
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
            metadata: metadata, configuration: configuration, pipeline: pipeline, now: now, keySet: keySet,
            dpopNonces: DPoPNonceCache(store: configuration.dpop?.nonceStore ?? MemoryDPoPNonceStore()))
    }

    /// Refuses a transport that cannot do what `configuration` needs: a client certificate
    /// (mutual TLS) over `URLSessionTransport`, which presents none.
    static func checkTransport(of pipeline: HTTPPipeline, for configuration: ClientConfiguration) throws(OAuth2Error) {
        #if URLSession
        if configuration.usesMutualTLS, pipeline.transport is URLSessionTransport { throw URLSessionTransport.mutualTLSUnsupported() }
        #endif
    }

    /// The logger this client writes to.
    public var logger: Logger { pipeline.logger }

    /// The metadata's endpoint `name`, or its mTLS alias when the client uses mutual TLS
    /// (RFC 8705 §5).
    func endpoint(_ name: String) -> URL? {
        metadata.endpoint(name, mutualTLS: configuration.usesMutualTLS)
    }

    func endpoint(_ url: URL?, _ name: String) throws(OAuth2Error) -> URL {
        guard let url else {
            throw .client(.missingEndpoint, "The server has no \(name).")
        }
        return url
    }
}
