#if MCP && Hummingbird
import Foundation
import OAuth2Testing

/// The example MCP server's settings, read from its environment (see MCPServerExample.swift).
struct MCPExampleSettings: Sendable {
    /// The authorization server's issuer; `nil`: the embedded test provider.
    var issuer: URL?
    /// The server's own client id at ``issuer`` (it introspects tokens with it).
    var clientID: String?
    /// That client's secret.
    var clientSecret: String?
    /// The address to listen on.
    var host = "127.0.0.1"
    /// The port to listen on; 0: any free port.
    var port = 8090
    /// The server's address as clients reach it; `nil`: `http://host:port` with the real port.
    var publicURL: URL?
    /// Whether the embedded provider accepts clients identified by a Client ID Metadata
    /// Document (a `client_id` that is an https URL), and the roots it trusts fetching them;
    /// `nil`: it does not.
    var clientMetadataDocuments: TestProvider.ClientMetadataDocuments?
    /// The certificate and key the embedded provider serves HTTPS with; `nil`: plain HTTP on
    /// loopback.
    var providerTLS: TestProvider.TLS?
    /// A PEM file of the roots the server's own client trusts when it reaches the embedded
    /// provider over HTTPS; `nil`: the system's (or `SSL_CERT_FILE`'s).
    var providerTLSRootsPath: String?

    /// Settings with every default: the embedded provider, 127.0.0.1:8090.
    init() {}

    /// The settings of `environment`'s `OAUTH2_EXAMPLE_*` variables; an empty one counts as unset.
    ///
    /// - Throws: ``MCPExampleSettingsError`` for a malformed value, or an issuer without a client id.
    init(environment: [String: String]) throws {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        if let text = value("OAUTH2_EXAMPLE_ISSUER") {
            guard let url = URL(string: text), url.scheme != nil else { throw MCPExampleSettingsError("OAUTH2_EXAMPLE_ISSUER is not a URL") }
            issuer = url
            guard let id = value("OAUTH2_EXAMPLE_CLIENT_ID") else { throw MCPExampleSettingsError("OAUTH2_EXAMPLE_ISSUER needs OAUTH2_EXAMPLE_CLIENT_ID") }
            clientID = id
            clientSecret = value("OAUTH2_EXAMPLE_CLIENT_SECRET")
        }
        switch value("OAUTH2_EXAMPLE_CLIENT_METADATA_DOCUMENTS")?.lowercased() {
        case nil, "0", "false", "off": break
        case "1", "true", "on": clientMetadataDocuments = TestProvider.ClientMetadataDocuments()
        default: throw MCPExampleSettingsError("OAUTH2_EXAMPLE_CLIENT_METADATA_DOCUMENTS is not on or off")
        }
        if let path = value("OAUTH2_EXAMPLE_CLIENT_METADATA_DOCUMENTS_CA") {
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw MCPExampleSettingsError("OAUTH2_EXAMPLE_CLIENT_METADATA_DOCUMENTS_CA is not a readable file")
            }
            clientMetadataDocuments = TestProvider.ClientMetadataDocuments(trustedRootCertificatesPEM: [pem])
        }
        if clientMetadataDocuments != nil, issuer != nil {
            throw MCPExampleSettingsError("OAUTH2_EXAMPLE_CLIENT_METADATA_DOCUMENTS applies to the embedded provider only (not with OAUTH2_EXAMPLE_ISSUER)")
        }
        let certificatePath = value("OAUTH2_EXAMPLE_PROVIDER_TLS_CERTIFICATE")
        let keyPath = value("OAUTH2_EXAMPLE_PROVIDER_TLS_KEY")
        switch (certificatePath, keyPath) {
        case (nil, nil): break
        case (let certificatePath?, let keyPath?):
            guard let chain = try? String(contentsOfFile: certificatePath, encoding: .utf8) else {
                throw MCPExampleSettingsError("OAUTH2_EXAMPLE_PROVIDER_TLS_CERTIFICATE is not a readable file")
            }
            guard let key = try? String(contentsOfFile: keyPath, encoding: .utf8) else {
                throw MCPExampleSettingsError("OAUTH2_EXAMPLE_PROVIDER_TLS_KEY is not a readable file")
            }
            providerTLS = TestProvider.TLS(certificateChainPEM: chain, privateKeyPEM: key)
        default:
            throw MCPExampleSettingsError("OAUTH2_EXAMPLE_PROVIDER_TLS_CERTIFICATE and OAUTH2_EXAMPLE_PROVIDER_TLS_KEY go together")
        }
        if let path = value("OAUTH2_EXAMPLE_PROVIDER_TLS_CA") {
            guard providerTLS != nil else {
                throw MCPExampleSettingsError("OAUTH2_EXAMPLE_PROVIDER_TLS_CA needs OAUTH2_EXAMPLE_PROVIDER_TLS_CERTIFICATE and OAUTH2_EXAMPLE_PROVIDER_TLS_KEY")
            }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw MCPExampleSettingsError("OAUTH2_EXAMPLE_PROVIDER_TLS_CA is not a readable file")
            }
            providerTLSRootsPath = path
        }
        if providerTLS != nil, issuer != nil {
            throw MCPExampleSettingsError("OAUTH2_EXAMPLE_PROVIDER_TLS_* apply to the embedded provider only (not with OAUTH2_EXAMPLE_ISSUER)")
        }
        if let text = value("OAUTH2_EXAMPLE_HOST") { host = text }
        if let text = value("OAUTH2_EXAMPLE_PORT") {
            guard let number = Int(text), (0...65535).contains(number) else { throw MCPExampleSettingsError("OAUTH2_EXAMPLE_PORT is not a port number") }
            port = number
        }
        if let text = value("OAUTH2_EXAMPLE_PUBLIC_URL") {
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
                throw MCPExampleSettingsError("OAUTH2_EXAMPLE_PUBLIC_URL is not an http(s) URL")
            }
            publicURL = url
        }
    }

    /// The resource identifier: the public URL's `/mcp`.
    func resourceIdentifier(port: Int) -> URL {
        var base = (publicURL ?? defaultPublicURL(port: port)).absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + "/mcp")!
    }

    /// `http://host:port`, the host in brackets when it is an IPv6 address.
    func defaultPublicURL(port: Int) -> URL {
        let shown = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return URL(string: "http://\(shown):\(port)")!
    }
}

/// A setting the server cannot run with.
struct MCPExampleSettingsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
#endif
