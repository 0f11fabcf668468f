import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2JOSE
import OAuth2AsyncHTTPClient

extension Context {
    /// What every command sends with: AsyncHTTPClient, whatever the package's traits, so
    /// that a build without the `URLSession` trait loads no libcurl at start (see
    /// Package.swift). `SSL_CERT_FILE` names the CAs to trust instead of the system's.
    static let transport: any HTTPTransport = HostRecordingTransport()
}

/// A transport that remembers the host of the last request it was given, so that an error
/// of the connection can name the server the tool could not reach ("cannot reach
/// idp.example.com"): the library's errors carry no URL. A command sends one request at a
/// time, so the last one started is the one that failed.
///
/// The AsyncHTTPClient transport behind it — its `HTTPClient` and event loop threads — is
/// made by the first request, not before: a command answered from the store (a cached
/// `oauth2 token`) starts no event loop.
struct HostRecordingTransport: HTTPTransport {
    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let host = request.url.flatMap { url in url.host.map { host in url.port.map { "\(host):\($0)" } ?? host } }
        Self.lastHost.withLock { $0 = host }
        return try await Self.base.send(request, body: body)
    }

    /// Made on first use (a static property is initialised lazily, once).
    private static let base: any HTTPTransport = AsyncHTTPClientTransport()

    /// The host of the last request sent in this process, if any.
    static let lastHost = Locked<String?>(nil)
}
