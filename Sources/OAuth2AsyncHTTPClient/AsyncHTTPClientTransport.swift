import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOSSL
import OAuth2

/// An `HTTPTransport` over AsyncHTTPClient (SwiftNIO).
///
/// Redirects are never followed and the response body is bounded. Server trust can be
/// narrowed to a private CA: ``TLSOptions/caBundlePath`` names a PEM bundle, and when it is
/// not set the `SSL_CERT_FILE` environment variable is honoured the way OpenSSL-based tools
/// honour it; otherwise the system's trust store is used. The HTTP proxies of the
/// environment (`https_proxy`, `http_proxy`, `no_proxy`…) are used the way curl uses them:
/// see ``ProxyEnvironment``.
///
/// A transport created with ``init(options:tls:proxies:environment:)`` owns its `HTTPClient`: call
/// ``shutdown()`` when done, or use ``withTransport(options:tls:_:)``, which does it for you.
/// ``shared`` is one for the whole process that nobody shuts down.
public final class AsyncHTTPClientTransport: HTTPTransport {
    /// TLS settings.
    public struct TLSOptions: Sendable {
        /// A PEM file of the certificate authorities to trust instead of the system's.
        /// `nil` uses `SSL_CERT_FILE` when it is set, else the system trust store.
        public var caBundlePath: String?
        /// The lowest TLS version accepted. Default TLS 1.2.
        public var minimumTLSVersion: TLSVersion
        /// A PEM file of the client certificate to present when a server asks for one
        /// (mutual TLS, RFC 8705: `tls_client_auth`, `self_signed_tls_client_auth`,
        /// certificate-bound access tokens), with the chain to its CA after it if any.
        /// Set it with ``clientKeyPath``.
        public var clientCertificatePath: String?
        /// A PEM file of the client certificate's private key (unencrypted).
        public var clientKeyPath: String?

        /// Creates TLS settings.
        public init(
            caBundlePath: String? = nil, minimumTLSVersion: TLSVersion = .tlsv12, clientCertificatePath: String? = nil,
            clientKeyPath: String? = nil
        ) {
            self.caBundlePath = caBundlePath
            self.minimumTLSVersion = minimumTLSVersion
            self.clientCertificatePath = clientCertificatePath
            self.clientKeyPath = clientKeyPath
        }

        /// Checks that the client certificate and key come together and can be read: a
        /// certificate without its key (or the reverse), or a file that is not PEM, would
        /// otherwise fail at the first TLS handshake. (A key that is not the certificate's
        /// still fails there.)
        ///
        /// - Throws: `OAuth2Error.Code.invalidConfiguration` naming the file (never its content).
        public func validate() throws(OAuth2Error) {
            guard clientCertificatePath != nil || clientKeyPath != nil else { return }
            guard let certificatePath = clientCertificatePath, let keyPath = clientKeyPath else {
                throw OAuth2Error(
                    .invalidConfiguration, source: .client, message: "A client certificate needs its private key, and a key its certificate.")
            }
            let chain: [NIOSSLCertificate]
            do {
                chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
            } catch {
                throw OAuth2Error(.invalidConfiguration, source: .client, message: "The client certificate file \(certificatePath) holds no PEM certificate.")
            }
            guard !chain.isEmpty else {
                throw OAuth2Error(.invalidConfiguration, source: .client, message: "The client certificate file \(certificatePath) holds no PEM certificate.")
            }
            do {
                _ = try NIOSSLPrivateKey(file: keyPath, format: .pem)
            } catch {
                throw OAuth2Error(.invalidConfiguration, source: .client, message: "The client key file \(keyPath) holds no unencrypted PEM private key.")
            }
        }
    }

    private let client: HTTPClient
    /// With ``init(options:tls:proxies:environment:)``: the clients that go through the
    /// proxies of ``proxies`` (at most two), by proxy.
    private let proxied: [ProxyEnvironment.Proxy: HTTPClient]
    /// The proxies requests go through (none for a wrapped client).
    public let proxies: ProxyEnvironment
    private let ownsClient: Bool
    private let options: TransportOptions

    /// A transport for the whole process, for programs that do not want to own and shut down
    /// an `HTTPClient`: made on first use with the default settings
    /// (``init(options:tls:proxies:environment:)`` with its defaults, the process
    /// environment's proxies and `SSL_CERT_FILE`), on AsyncHTTPClient's shared event-loop
    /// group, and never shut down (``shutdown()`` does nothing on it).
    ///
    /// It is not AsyncHTTPClient's own `HTTPClient.shared`, whose settings follow up to 20
    /// redirects and retry failed connection attempts: this transport never follows a
    /// redirect (a token request's credentials would go along) and reports a failed TLS
    /// handshake as such, not as a timeout.
    ///
    /// ```swift
    /// let client = try await OAuth2Client(
    ///     server: .issuer(URL(string: "https://accounts.example.com")!),
    ///     configuration: ClientConfiguration(clientID: "my-service", clientSecret: secret),
    ///     environment: HTTPEnvironment(transport: AsyncHTTPClientTransport.shared))
    /// ```
    public static let shared = AsyncHTTPClientTransport(owningClient: false)

    /// Creates a transport with its own `HTTPClient` on the shared event-loop group.
    ///
    /// Requests go through the HTTP proxies that `proxies` names for their URL, through a
    /// CONNECT tunnel for `https` (by default the proxies of `environment`, read as curl
    /// reads them: see ``ProxyEnvironment``; pass `ProxyEnvironment()` for none).
    ///
    /// - Parameters:
    ///   - options: the connect timeout and the response size limit.
    ///   - tls: the certificate authorities to trust and the lowest TLS version.
    ///   - proxies: the HTTP proxies to use; `nil` reads them from `environment`.
    ///   - environment: where `SSL_CERT_FILE` and the proxy variables are read (the
    ///     process environment by default).
    public convenience init(
        options: TransportOptions = TransportOptions(),
        tls: TLSOptions = TLSOptions(),
        proxies: ProxyEnvironment? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.init(options: options, tls: tls, proxies: proxies, environment: environment, owningClient: true)
    }

    private init(
        options: TransportOptions = TransportOptions(),
        tls: TLSOptions = TLSOptions(),
        proxies: ProxyEnvironment? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        owningClient: Bool
    ) {
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        tlsConfiguration.minimumTLSVersion = tls.minimumTLSVersion
        if let path = tls.caBundlePath ?? environment["SSL_CERT_FILE"].flatMap({ $0.isEmpty ? nil : $0 }) {
            tlsConfiguration.trustRoots = .file(path)
        }
        if let certificatePath = tls.clientCertificatePath, let keyPath = tls.clientKeyPath {
            // Read at the handshake: a file that cannot be read fails it (TLSOptions.validate()
            // checks them up front).
            tlsConfiguration.certificateChain = (try? NIOSSLCertificate.fromPEMFile(certificatePath))?.map { .certificate($0) }
                ?? [.file(certificatePath)]
            // Read as PEM whatever the file's extension (NIOSSL's `.file` goes by the
            // extension, and `client.key` has none it knows).
            tlsConfiguration.privateKey = (try? NIOSSLPrivateKey(file: keyPath, format: .pem)).map { .privateKey($0) } ?? .file(keyPath)
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tlsConfiguration,
            redirectConfiguration: .disallow,
            // The exchange's one time limit is the request deadline, which cancels the
            // request: no read timeout of the client's own.
            timeout: .init(connect: .nanoseconds(Self.nanoseconds(options.connectTimeout))),
            decompression: .enabled(limit: .size(options.maximumResponseSize))
        )
        configuration.httpVersion = .automatic
        // A refused connection or a failed TLS handshake is reported at once, not retried
        // until the connect timeout (AsyncHTTPClient's default): the caller learns what
        // failed (a certificate, not "timeout"), and RetryPolicy decides what is repeated.
        configuration.connectionPool.retryConnectionEstablishment = false
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let proxies = proxies ?? ProxyEnvironment(environment: environment)
        var proxied: [ProxyEnvironment.Proxy: HTTPClient] = [:]
        for proxy in Set([proxies.http, proxies.https].compactMap(\.self)) {
            var viaProxy = configuration
            viaProxy.proxy = .server(
                host: proxy.host, port: proxy.port,
                authorization: proxy.username.map { .basic(username: $0, password: proxy.password ?? "") })
            proxied[proxy] = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: viaProxy)
        }
        self.proxied = proxied
        self.proxies = proxies
        self.ownsClient = owningClient
        self.options = options
    }

    /// Wraps an `HTTPClient` you own (and shut down). Configure it not to follow redirects,
    /// not to retry establishing connections (`connectionPool.retryConnectionEstablishment
    /// = false`, or a TLS failure surfaces as a timeout), and with its proxy, if any
    /// (``proxies`` is empty).
    public init(client: HTTPClient, options: TransportOptions = TransportOptions()) {
        self.client = client
        self.proxied = [:]
        self.proxies = ProxyEnvironment()
        self.ownsClient = false
        self.options = options
    }

    /// Runs `body` with a new transport and shuts the transport down afterwards, whether
    /// `body` returns or throws.
    public static func withTransport<Result: Sendable>(
        options: TransportOptions = TransportOptions(),
        tls: TLSOptions = TLSOptions(),
        _ body: (AsyncHTTPClientTransport) async throws -> Result
    ) async throws -> Result {
        let transport = AsyncHTTPClientTransport(options: options, tls: tls)
        let result: Result
        do {
            result = try await body(transport)
        } catch {
            try? await transport.shutdown()
            throw error
        }
        try await transport.shutdown()
        return result
    }

    /// Shuts down the `HTTPClient` this transport created (no-op for a wrapped client and
    /// for ``shared``).
    public func shutdown() async throws {
        guard ownsClient else { return }
        for client in proxied.values { try await client.shutdown() }
        try await client.shutdown()
    }

    /// Sends the request; throws `OAuth2Error` with source `.transport` on failure.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        guard let url = request.url else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The request has no valid URL.")
        }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headerFields {
            outgoing.headers.add(name: field.name.rawName, value: field.value)
        }
        if let body {
            outgoing.body = .bytes(ByteBuffer(bytes: body))
        }
        do {
            let client = proxied.isEmpty ? self.client : proxies.proxy(for: url).flatMap { proxied[$0] } ?? self.client
            let response = try await client.execute(outgoing, deadline: .distantFuture)
            var fields = HTTPFields()
            for header in response.headers {
                if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
            }
            let buffer = try await response.body.collect(upTo: options.maximumResponseSize)
            let status = HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase)
            return (HTTPResponse(status: status, headerFields: fields), Data(buffer.readableBytesView))
        } catch {
            throw Self.map(error)
        }
    }

    static func map(_ error: any Error) -> OAuth2Error {
        if let error = error as? OAuth2Error { return error }
        if error is CancellationError {
            return OAuth2Error(.cancelled, source: .transport, message: "The request was cancelled.")
        }
        if error is NIOTooManyBytesError {
            return OAuth2Error(.invalidResponse, source: .client, message: "The response body is too large.")
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return OAuth2Error(.tls, source: .transport, message: "TLS failed: \(error)", underlyingError: error)
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded, .tlsHandshakeTimeout,
                .getConnectionFromPoolTimeout:
                return OAuth2Error(.timeout, source: .transport, message: error.shortDescription, underlyingError: error)
            case .cancelled, .requestStreamCancelled:
                return OAuth2Error(.cancelled, source: .transport, message: "The request was cancelled.", underlyingError: error)
            default:
                return OAuth2Error(.network, source: .transport, message: error.shortDescription, underlyingError: error)
            }
        }
        return OAuth2Error(.network, source: .transport, message: "The connection failed: \(error)", underlyingError: error)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
    }
}
