import OAuth2
import OAuth2AsyncHTTPClient

extension Context {
    /// What every command sends with: AsyncHTTPClient, whatever the package's traits, so
    /// that a build without the `URLSession` trait loads no libcurl at start (see
    /// Package.swift). Created on first use, which a command answered from the store never
    /// reaches, and kept for the life of the process. `SSL_CERT_FILE` names the CAs to
    /// trust instead of the system's.
    static let transport: any HTTPTransport = AsyncHTTPClientTransport()
}
