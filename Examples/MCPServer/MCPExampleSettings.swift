#if MCP && Hummingbird
import Foundation

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
