import Foundation

/// Where a client finds its authorization server's endpoints: discovered from an issuer,
/// given one by one for servers that publish no metadata, or a provider's preset (GitHub,
/// Google, Keycloak…), which also completes the client's configuration.
///
/// ```swift
/// let okta = AuthorizationServer.issuer(URL(string: "https://dev-1.okta.com/oauth2/default")!)
/// let github = AuthorizationServer.metadata(ServerMetadata(
///     authorizationEndpoint: URL(string: "https://github.com/login/oauth/authorize")!,
///     tokenEndpoint: URL(string: "https://github.com/login/oauth/access_token")!))
/// let client = try await OAuth2Client(server: okta, configuration: configuration)
/// let gitHub = try await OAuth2Client(server: .preset(.github), configuration: configuration)
/// ```
///
/// Settings read from a file carry both halves: `OAuth2Client(server: settings.server,
/// configuration: settings.configuration)`.
public enum AuthorizationServer: Sendable, Hashable, CustomStringConvertible {
    /// Discover the metadata from this issuer: OpenID Connect Discovery, then RFC 8414 for
    /// the endpoints the first lacks; each document's `issuer` must equal this URL exactly.
    case issuer(URL)
    /// Use these endpoints as they are; nothing is fetched.
    case metadata(ServerMetadata)
    /// The preset's server; the preset also completes the client's configuration (see
    /// ``ProviderPreset/applied(to:)``).
    indirect case preset(ProviderPreset)

    /// The issuer, when one is known (the discovery URL, or the metadata's `issuer`).
    public var issuer: String? {
        switch self {
        case .issuer(let url): return url.absoluteString
        case .metadata(let metadata): return metadata.issuer
        case .preset(let preset): return preset.server.issuer
        }
    }

    /// `issuer(…)` or `metadata(…)` with the token endpoint, redacted as log lines are.
    public var description: String {
        switch self {
        case .issuer(let url): return "issuer(\(Redactor.url(url)))"
        case .metadata(let metadata):
            return "metadata(token endpoint: \(metadata.tokenEndpoint.map(Redactor.url) ?? "none"))"
        case .preset(let preset): return "preset(\(preset.name): \(preset.server))"
        }
    }

    /// The same server with every URL moved onto `baseURL`: its scheme, host and port
    /// replace each URL's, and its path is put in front of each URL's path. Query strings
    /// stay. Metadata members that are not URLs stay as they are.
    ///
    /// Use it to reach a provider through another origin — a GitHub Enterprise Server, a
    /// national cloud, a reverse proxy, or a local stand-in for the provider in your own
    /// tests.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when `baseURL` has no scheme or
    ///   host, or a URL cannot be rebuilt.
    public func rebased(onto baseURL: URL) throws(OAuth2Error) -> AuthorizationServer {
        switch self {
        case .issuer(let url):
            return .issuer(try Self.rebase(url, onto: baseURL))
        case .preset(var preset):
            preset.server = try preset.server.rebased(onto: baseURL)
            return .preset(preset)
        case .metadata(let metadata):
            var fields = metadata.fields
            for (name, value) in metadata.fields {
                let isURL = name == "issuer" || ServerMetadata.knownFields[name] == .url
                guard isURL, let text = value.stringValue, let url = URL(string: text), url.host != nil else { continue }
                fields[name] = .string(try Self.rebase(url, onto: baseURL).absoluteString)
            }
            do {
                return .metadata(try ServerMetadata(fields: fields))
            } catch {
                throw .client(.invalidConfiguration, "The rebased metadata is not valid: \(error.message ?? "").")
            }
        }
    }

    static func rebase(_ url: URL, onto baseURL: URL) throws(OAuth2Error) -> URL {
        guard let base = URLComponents(url: baseURL, resolvingAgainstBaseURL: false), base.scheme != nil,
            let host = base.host, !host.isEmpty
        else {
            throw .client(.invalidConfiguration, "The base URL \(Redactor.url(baseURL)) has no scheme or host.")
        }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw .client(.invalidConfiguration, "The URL \(Redactor.url(url)) cannot be parsed.")
        }
        components.scheme = base.scheme
        components.host = base.host
        components.port = base.port
        var prefix = base.percentEncodedPath
        while prefix.hasSuffix("/") { prefix.removeLast() }
        components.percentEncodedPath = prefix + components.percentEncodedPath
        guard let rebased = components.url else {
            throw .client(.invalidConfiguration, "The URL \(Redactor.url(url)) cannot be moved onto the base URL.")
        }
        return rebased
    }
}
