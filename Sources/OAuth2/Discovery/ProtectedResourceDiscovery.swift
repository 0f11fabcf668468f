import Foundation
import HTTPTypes

/// Finding, from a protected resource's URL alone, whose tokens it takes (RFC 9728 §3 and
/// §5, the MCP authorization specification): the resource's metadata, then one of its
/// authorization servers, discovered and checked.
///
/// ```swift
/// let discovery = ProtectedResourceDiscovery()
/// let found = try await discovery.discover(resource: URL(string: "https://mcp.example.com/mcp")!)
/// let client = try await OAuth2Client(
///     server: found.server,
///     configuration: found.boundToResource(ClientConfiguration(clientID: "my-agent", redirectURI: redirect)))
/// ```
///
/// The steps, each of which refuses what would let another party impersonate the resource
/// or its authorization server:
/// 1. The metadata's place: the `resource_metadata` of the resource's `401` challenge
///    (RFC 9728 §5.1), which must be on the resource's own origin
///    (``OAuth2Error/Code/metadataOriginMismatch``); without one, the well-known places in
///    the order of the MCP specification — the path-inserted
///    `/.well-known/oauth-protected-resource/<path>` (``ProtectedResourceMetadata/metadataURL(for:)``),
///    then the origin's `/.well-known/oauth-protected-resource`.
/// 2. Every metadata URL is HTTPS, or plain HTTP on a loopback host
///    (``OAuth2Error/Code/insecureEndpoint``).
/// 3. The metadata's `resource` must be the URL's resource identifier (RFC 9728 §3.3;
///    scheme and host compared without case, a default port and an empty path's `/`
///    ignored): anything else is ``OAuth2Error/Code/resourceMismatch``.
/// 4. An authorization server is chosen from `authorization_servers` (the first, or the
///    one asked for); none there is ``OAuth2Error/Code/noAuthorizationServer``.
/// 5. It is discovered: RFC 8414 with the issuer's path inserted, then OpenID Connect
///    Discovery (path inserted, then appended), the first document found winning; its
///    `issuer` must be the listed one exactly (``OAuth2Error/Code/issuerMismatch``).
///
/// No token is sent anywhere during discovery.
public struct ProtectedResourceDiscovery: Sendable {
    /// How discovery talks HTTP: transport, deadline, logger, metadata cache.
    public var environment: HTTPEnvironment

    #if URLSession
    /// Creates a discovery that talks HTTP through `environment`.
    public init(environment: HTTPEnvironment = HTTPEnvironment()) {
        self.environment = environment
    }
    #else
    /// Creates a discovery that talks HTTP through `environment`.
    public init(environment: HTTPEnvironment) {
        self.environment = environment
    }
    #endif

    /// Discovers `resource`'s metadata and authorization server, first asking the resource
    /// itself (a `GET` without any token) for its challenge.
    ///
    /// A `401` answer's `WWW-Authenticate` challenge is read as in
    /// ``discover(resource:unauthorizedResponse:issuer:)``; any other answer leads to the
    /// well-known places.
    ///
    /// - Parameters:
    ///   - resource: the resource's URL (an MCP server's endpoint, an API's base URL).
    ///   - issuer: the authorization server to use, which must be listed in the metadata;
    ///     `nil` takes the first listed.
    /// - Throws: as ``discover(resource:unauthorizedResponse:issuer:)``, and transport
    ///   errors of the probe.
    public func discover(resource: URL, issuer: URL? = nil) async throws -> DiscoveredResource {
        _ = try ResourceIdentifier.components(resource)
        let pipeline = environment.pipeline()
        let (response, _) = try await pipeline.send(try HTTPRequest.make(method: .get, url: resource), body: nil, kind: .resource)
        return try await discover(resource: resource, unauthorizedResponse: response.status.code == 401 ? response : nil, issuer: issuer)
    }

    /// Discovers `resource`'s metadata and authorization server from the resource's
    /// unauthorized answer.
    ///
    /// - Parameters:
    ///   - resource: the resource's URL: the one the request was sent to.
    ///   - unauthorizedResponse: the resource's `401` (or `403`) answer; its first `Bearer` or
    ///     `DPoP` challenge's `resource_metadata` names the metadata, and its `scope` the
    ///     scopes to ask for (``DiscoveredResource/challengedScopes``). `nil`, or an answer
    ///     without `resource_metadata`, leads to the well-known places.
    ///   - issuer: the authorization server to use, which must be listed in the metadata;
    ///     `nil` takes the first listed.
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for a resource URL with a query,
    ///   a fragment or user information; ``OAuth2Error/Code/insecureEndpoint`` for a
    ///   resource or metadata URL neither HTTPS nor on a loopback host;
    ///   ``OAuth2Error/Code/metadataOriginMismatch`` for a challenge pointing to another
    ///   origin; ``OAuth2Error/Code/httpError`` when no metadata is found;
    ///   ``OAuth2Error/Code/invalidResponse`` for a document that is not valid metadata;
    ///   ``OAuth2Error/Code/resourceMismatch``; ``OAuth2Error/Code/noAuthorizationServer``;
    ///   ``OAuth2Error/Code/issuerMismatch``; transport errors.
    public func discover(resource: URL, unauthorizedResponse: HTTPResponse?, issuer: URL? = nil) async throws -> DiscoveredResource {
        let pipeline = environment.pipeline()
        let now: @Sendable () -> Date = { Date() }
        let challenge = unauthorizedResponse.flatMap(Self.challenge(in:))
        let identifier = try Self.identifier(of: resource)

        var candidates: [URL]
        if let pointed = challenge?.parameters["resource_metadata"] {
            guard let url = URL(string: pointed), url.scheme != nil, url.host != nil else {
                throw OAuth2Error.invalidResponse("The challenge's resource_metadata is not an absolute URL.")
            }
            try EndpointPolicy.validate(url, name: "protected resource metadata URL")
            guard Self.origin(of: url) == Self.origin(of: resource) else {
                throw OAuth2Error.client(
                    .metadataOriginMismatch,
                    "The resource at \(Redactor.url(resource)) points its metadata to another origin (\(Redactor.url(url))); refused.")
            }
            candidates = [url]
        } else {
            let pathInserted = try ProtectedResourceMetadata.metadataURL(for: resource)
            candidates = [pathInserted]
            if var root = URLComponents(url: pathInserted, resolvingAgainstBaseURL: false) {
                root.percentEncodedPath = ProtectedResourceMetadata.wellKnownPath
                if let url = root.url, url != pathInserted { candidates.append(url) }
            }
        }

        var found: (ProtectedResourceMetadata, URL)?
        for (index, url) in candidates.enumerated() {
            do {
                found = (try await Self.fetchMetadata(url, pipeline: pipeline, now: now), url)
                break
            } catch let error as OAuth2Error where error.code == .httpError && error.statusCode == 404 && index < candidates.count - 1 {
                continue  // MCP authorization: the root comes after the path-inserted place.
            }
        }
        guard let (metadata, metadataURL) = found else {
            throw OAuth2Error.client(.httpError, "The resource at \(Redactor.url(resource)) publishes no protected resource metadata.")
        }
        guard let named = URL(string: metadata.resource), (try? Self.identifier(of: named)) == identifier else {
            throw OAuth2Error.client(
                .resourceMismatch,
                "The metadata at \(Redactor.url(metadataURL)) names the resource \"\(Redactor.sanitizeServerText(metadata.resource, limit: 200))\", not \(Redactor.url(resource)) (RFC 9728 §3.3); refused.")
        }

        let listed = metadata.authorizationServers ?? []
        guard !listed.isEmpty else {
            throw OAuth2Error.client(
                .noAuthorizationServer, "The metadata at \(Redactor.url(metadataURL)) lists no authorization_servers.")
        }
        let chosen: String
        if let issuer {
            guard listed.contains(issuer.absoluteString) else {
                throw OAuth2Error.client(
                    .noAuthorizationServer, "The resource does not list the authorization server \(Redactor.url(issuer)).")
            }
            chosen = issuer.absoluteString
        } else {
            chosen = listed[0]
        }
        guard let issuerURL = URL(string: chosen), issuerURL.scheme != nil, issuerURL.host != nil else {
            throw OAuth2Error.client(
                .noAuthorizationServer,
                "The listed authorization server \"\(Redactor.sanitizeServerText(chosen, limit: 200))\" is not an absolute URL.")
        }
        let server = try await environment.metadataCache.metadata(for: issuerURL) {
            try await Discovery.fetchAuthorizationServerFirst(issuer: issuerURL, pipeline: pipeline, now: now)
        }
        guard server.issuer == chosen else {
            // A cached document of an issuer spelled another way cannot stand in for this one.
            throw OAuth2Error.client(.issuerMismatch, "The authorization server's metadata names another issuer than \(Redactor.url(issuerURL)).")
        }
        let scopes = challenge?.parameters["scope"].map { $0.split(separator: " ").map(String.init) }
        return DiscoveredResource(
            resource: named, metadata: metadata, metadataURL: metadataURL, issuer: issuerURL, authorizationServer: server,
            challengedScopes: scopes)
    }

    /// The first `Bearer` or `DPoP` challenge of `response`, preferring one that names
    /// `resource_metadata`.
    static func challenge(in response: HTTPResponse) -> WWWAuthenticate? {
        let challenges = response.headerFields[values: .wwwAuthenticate].compactMap(WWWAuthenticate.init)
            .filter { ["bearer", "dpop"].contains($0.scheme.lowercased()) }
        return challenges.first { $0.parameters["resource_metadata"] != nil } ?? challenges.first
    }

    /// The resource identifier of `url` as compared (RFC 9728 §3.3): scheme and host
    /// lower-cased, a default port dropped, an empty path and `/` alike.
    static func identifier(of url: URL) throws(OAuth2Error) -> String {
        guard var components = try ResourceIdentifier.components(url) else {
            throw .client(.invalidConfiguration, "The resource identifier is not a valid URL.")
        }
        if components.percentEncodedPath == "/" { components.percentEncodedPath = "" }
        return components.string ?? url.absoluteString
    }

    /// Scheme, host and port (default ports filled in), lower-cased.
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }

    /// Fetches and decodes one metadata document.
    static func fetchMetadata(_ url: URL, pipeline: HTTPPipeline, now: @Sendable () -> Date) async throws -> ProtectedResourceMetadata {
        try EndpointPolicy.validate(url, name: "protected resource metadata URL")
        let (response, body) = try await pipeline.send(try HTTPRequest.make(method: .get, url: url), body: nil, kind: .discovery)
        guard response.status.kind == .successful else {
            if let error = ResponseParsing.error(in: response, members: nil, kind: .discovery, now: now()), error.isTransient {
                throw error
            }
            throw OAuth2Error(
                .httpError, source: .server, message: "No protected resource metadata at \(Redactor.url(url)).",
                statusCode: response.status.code)
        }
        guard let fields = JSONValue.parseObject(body) else {
            throw OAuth2Error.invalidResponse("The protected resource metadata at \(Redactor.url(url)) is not a JSON object.")
        }
        return try ProtectedResourceMetadata(fields: fields)
    }
}
