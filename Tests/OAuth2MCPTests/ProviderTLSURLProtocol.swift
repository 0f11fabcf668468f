#if MCP
import Foundation
import HTTPTypes
import OAuth2
import OAuth2AsyncHTTPClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Loads a `URLSession`'s `https` requests to one origin — the example server's embedded
/// provider on HTTPS — through AsyncHTTPClient trusting the run's own CA; every other request
/// goes to the session's own loading (libcurl on Linux).
///
/// Why: on Linux, FoundationNetworking's `URLSession` verifies servers against the system's CA
/// bundle only. libcurl is given the bundle it finds (`/etc/ssl/certs/ca-certificates.crt`…)
/// and reads no variable for another (`SSL_CERT_FILE` and `CURL_CA_BUNDLE` are read by the
/// curl tool, not the library); swift-corelibs-foundation's `URLSessionCertificateAuthorityInfoFile`
/// is read under `#if os(Android)` only (the 6.3 toolchain's libFoundationNetworking.so holds
/// no such string); there is no server-trust challenge for a delegate. A run's own CA can
/// therefore not be trusted by the SDK's `URLSession` on Linux short of changing the
/// machine's trust store. The SDK lets its `HTTPClientTransport` be given the session's
/// configuration, so the journey registers this protocol there: the SDK's OAuth code (its
/// discovery, PKCE, token requests, step-up) runs unchanged and its requests reach the real
/// provider over real TLS; only the bytes travel through AsyncHTTPClient instead of libcurl.
/// On Apple platforms a session delegate could trust the CA instead.
final class ProviderTLSURLProtocol: URLProtocol {
    /// Where requests are taken over, and through what.
    private struct Route {
        let scheme: String
        let host: String
        let port: Int
        let transport: AsyncHTTPClientTransport
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var route: Route?
    nonisolated(unsafe) private static var loaded = 0
    /// How many requests were taken over since ``with(origin:transport:_:)`` began.
    static var loadedRequests: Int { lock.withLock { loaded } }
    private let loading = NSLock()
    private var loadingTask: Task<Void, Never>?

    /// Takes over the requests to `origin`'s scheme, host and port (through `transport`)
    /// while `body` runs.
    static func with<T>(origin: URL, transport: AsyncHTTPClientTransport, _ body: () async throws -> T) async throws -> T {
        guard let scheme = origin.scheme?.lowercased(), let host = origin.host?.lowercased() else { throw URLError(.badURL) }
        lock.withLock {
            route = Route(scheme: scheme, host: host, port: origin.port ?? 443, transport: transport)
            loaded = 0
        }
        defer { lock.withLock { route = nil } }
        return try await body()
    }

    /// A session configuration that loads through this protocol first.
    static func sessionConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [ProviderTLSURLProtocol.self] + (configuration.protocolClasses ?? [])
        return configuration
    }

    private static func transport(for url: URL?) -> AsyncHTTPClientTransport? {
        guard let url, let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        return lock.withLock {
            guard let route, route.scheme == scheme, route.host == host, route.port == (url.port ?? 443) else { return nil }
            return route.transport
        }
    }

    override class func canInit(with request: URLRequest) -> Bool { transport(for: request.url) != nil }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        let request = self.request
        guard let url = request.url, let transport = Self.transport(for: url),
            let method = HTTPRequest.Method(request.httpMethod ?? "GET")
        else {
            client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
            return
        }
        Self.lock.withLock { Self.loaded += 1 }
        var outgoing = HTTPRequest(method: method, url: url)
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            if let field = HTTPField.Name(name) { outgoing.headerFields.append(HTTPField(name: field, value: value)) }
        }
        let body = request.httpBody ?? request.httpBodyStream.map(Self.readAll)
        let sent = outgoing
        // The URL loading system calls back on the protocol from any thread.
        let loader = UncheckedSendable(self)
        loading.withLock {
            loadingTask = Task {
                do {
                    let (response, data) = try await transport.send(sent, body: body)
                    var fields: [String: String] = [:]
                    for field in response.headerFields {
                        fields[field.name.rawName] = fields[field.name.rawName].map { "\($0), \(field.value)" } ?? field.value
                    }
                    guard let answer = HTTPURLResponse(url: url, statusCode: response.status.code, httpVersion: "HTTP/1.1", headerFields: fields) else {
                        loader.value.client?.urlProtocol(loader.value, didFailWithError: URLError(.badServerResponse))
                        return
                    }
                    loader.value.client?.urlProtocol(loader.value, didReceive: answer, cacheStoragePolicy: .notAllowed)
                    if !data.isEmpty { loader.value.client?.urlProtocol(loader.value, didLoad: data) }
                    loader.value.client?.urlProtocolDidFinishLoading(loader.value)
                } catch {
                    loader.value.client?.urlProtocol(loader.value, didFailWithError: error)
                }
            }
        }
    }

    override func stopLoading() {
        loading.withLock { loadingTask }?.cancel()
    }

    /// A value handed across tasks by someone who knows it is safe.
    private struct UncheckedSendable<Value>: @unchecked Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private static func readAll(_ stream: InputStream) -> Data {
        var data = Data()
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count <= 0 { break }
            data.append(buffer, count: count)
        }
        return data
    }
}
#endif
