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
    /// The transport requests go through; `nil`: the process's one, made on first use.
    var through: (any HTTPTransport)? = nil

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let host = request.url.flatMap { url in url.host.map { host in url.port.map { "\(host):\($0)" } ?? host } }
        Self.lastHost.withLock { $0 = host }
        return try await (through ?? Self.base).send(request, body: body)
    }

    /// A transport presenting the client certificate of `certificatePath` with the key of
    /// `keyPath` (mutual TLS, RFC 8705), one per pair in the process. The pair is read and
    /// matched first.
    ///
    /// - Throws: ``CLIError`` (a usage error) naming the file that is not usable.
    static func presenting(certificatePath: String, keyPath: String) throws -> HostRecordingTransport {
        let tls = AsyncHTTPClientTransport.TLSOptions(clientCertificatePath: certificatePath, clientKeyPath: keyPath)
        do {
            try tls.validate()
        } catch {
            throw CLIError.usage(error.message ?? "The client certificate is not usable.", hint: "check --client-certificate and --client-key")
        }
        let transport = mutualTLS.withLock { transports in
            let key = certificatePath + "\u{0}" + keyPath
            if let made = transports[key] { return made }
            let made = AsyncHTTPClientTransport(tls: tls)
            transports[key] = made
            return made
        }
        return HostRecordingTransport(through: transport)
    }

    /// The transports of ``presenting(certificatePath:keyPath:)``, by certificate and key path.
    private static let mutualTLS = Locked<[String: AsyncHTTPClientTransport]>([:])

    /// Made on first use (a static property is initialised lazily, once).
    private static let base: any HTTPTransport = AsyncHTTPClientTransport()

    /// The host of the last request sent in this process, if any.
    static let lastHost = Locked<String?>(nil)
}
