// Only with the package's `URLSession` trait (on by default): see Package.swift.
#if URLSession
import Foundation
import HTTPTypes
import HTTPTypesFoundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An ``HTTPTransport`` over `URLSession` (FoundationNetworking on Linux).
///
/// The session is ephemeral: no cookies, no cache, no credential storage, and redirects
/// are not followed. Server trust is the platform's: on Linux that is the system CA bundle;
/// to trust a private CA use `AsyncHTTPClientTransport`, which takes a CA bundle.
///
/// It presents no client certificate: on Linux FoundationNetworking has none to present (its
/// `URLCredential` holds a user and a password only, and its sessions never ask the delegate
/// for a client certificate). A client that uses mutual TLS (RFC 8705:
/// ``ClientConfiguration/mutualTLS``, `tls_client_auth`, `self_signed_tls_client_auth`) over
/// this transport is refused when it is made, with ``OAuth2Error/Code/invalidConfiguration``
/// naming `AsyncHTTPClientTransport`, whose `TLSOptions` present a certificate.
public final class URLSessionTransport: HTTPTransport {
    /// The transport the library uses when none is given.
    public static let shared = URLSessionTransport()

    private let session: URLSession
    private let options: TransportOptions

    /// Creates a transport with its own ephemeral session.
    ///
    /// On Linux, FoundationNetworking leaves proxies to libcurl, which reads `http_proxy`,
    /// `https_proxy` and `all_proxy` and would send even loopback traffic through them. The
    /// first transport created therefore adds `localhost`, `127.0.0.0/8` and `::1` to the
    /// process's `no_proxy` when a proxy variable is set: traffic to this machine (a local
    /// authorization server, a loopback redirect) never goes through a proxy.
    public init(options: TransportOptions = TransportOptions()) {
        _ = Self.loopbackBypassesProxies
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCredentialStorage = nil
        // The exchange's one time limit is the request deadline, which cancels the task:
        // URLSession's own limits (60 s of silence by default) are put out of its way.
        configuration.timeoutIntervalForRequest = Self.noLimit
        configuration.timeoutIntervalForResource = Self.noLimit
        self.session = URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
        self.options = options
    }

    /// URLSession's time limits, set beyond any request deadline (a day).
    private static let noLimit: TimeInterval = 86_400

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Adds the loopback hosts to `no_proxy` (and `NO_PROXY`) once per process, when a proxy
    /// variable is set and `no_proxy` is not `*`. Linux only: elsewhere the platform's
    /// networking does not proxy loopback hosts.
    private static let loopbackBypassesProxies: Void = {
        #if os(Linux)
        let environment = ProcessInfo.processInfo.environment
        let proxied = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].contains {
            !(environment[$0] ?? "").trimmingCharacters(in: .whitespaces).isEmpty
        }
        guard proxied else { return }
        let loopback = "localhost,127.0.0.0/8,::1"
        for name in ["no_proxy", "NO_PROXY"] {
            let current = (environment[name] ?? "").trimmingCharacters(in: .whitespaces)
            guard current != "*" else { continue }
            setenv(name, current.isEmpty ? loopback : current + "," + loopback, 1)
        }
        #endif
    }()

    /// Sends the request; throws ``OAuth2Error`` with source `.transport` on failure.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        guard var urlRequest = URLRequest(httpRequest: request) else {
            throw OAuth2Error.client(.invalidConfiguration, "The request has no valid URL.")
        }
        urlRequest.httpBody = body
        urlRequest.timeoutInterval = Self.noLimit
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch {
            throw Self.map(error)
        }
        guard let http = response as? HTTPURLResponse, let httpResponse = http.httpResponse else {
            throw OAuth2Error.invalidResponse("The response is not HTTP.")
        }
        guard data.count <= options.maximumResponseSize else {
            throw OAuth2Error.invalidResponse(
                "The response body is larger than \(options.maximumResponseSize) bytes.",
                statusCode: httpResponse.status.code
            )
        }
        return (httpResponse, data)
    }

    /// The refusal of a client that uses mutual TLS over this transport.
    static func mutualTLSUnsupported() -> OAuth2Error {
        .client(
            .invalidConfiguration,
            "Mutual TLS needs a transport that presents a client certificate, which URLSessionTransport cannot (FoundationNetworking on Linux has no client certificates): use AsyncHTTPClientTransport with TLSOptions(clientCertificatePath:clientKeyPath:).")
    }

    static func map(_ error: any Error) -> OAuth2Error {
        if error is CancellationError {
            return OAuth2Error(.cancelled, source: .transport, message: "The request was cancelled.")
        }
        guard let urlError = error as? URLError else {
            return OAuth2Error(.network, source: .transport, message: "The request failed.")
        }
        let code: OAuth2Error.Code
        switch urlError.code {
        case .timedOut:
            code = .timeout
        case .cancelled:
            code = .cancelled
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot,
            .serverCertificateNotYetValid, .secureConnectionFailed, .clientCertificateRejected,
            .clientCertificateRequired:
            code = .tls
        case .unknown where isCurlTLSFailure(urlError.localizedDescription):
            code = .tls
        default:
            code = .network
        }
        return OAuth2Error(
            code,
            source: .transport,
            message: "\(urlError.localizedDescription) (URLError \(urlError.code.rawValue))",
            underlyingError: urlError
        )
    }
}

/// Whether a `URLError.unknown` is a TLS failure. On Linux, FoundationNetworking maps
/// libcurl's TLS errors (an untrusted, expired or misnamed certificate, a failed handshake)
/// to `.unknown` and keeps only curl's message, which names SSL or the certificate.
private func isCurlTLSFailure(_ message: String) -> Bool {
    #if canImport(FoundationNetworking)
    return message.contains("SSL") || message.localizedCaseInsensitiveContains("certificate")
    #else
    return false
    #endif
}

/// Refuses every redirect: the response of the first hop is returned as it is.
private final class NoRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
#endif
