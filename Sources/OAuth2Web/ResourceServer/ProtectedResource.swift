import Foundation
import OAuth2
import OAuth2JOSE

/// An API as an OAuth 2.0 protected resource (RFC 9728): its resource identifier — the name
/// its tokens carry — and what it publishes about itself. Give it to
/// ``ResourceServer/init(resource:accessTokens:introspection:dpop:acceptsBearerTokens:clientCertificates:realm:logger:)``.
///
/// ```swift
/// let mcp = try ProtectedResource(
///     identifier: URL(string: "https://mcp.example.com/mcp")!,
///     scopesSupported: ["tools:read", "tools:call"],
///     name: "Example MCP server")
/// ```
///
/// With it the resource server
/// - serves the metadata document at ``metadataURL``
///   (`https://mcp.example.com/.well-known/oauth-protected-resource/mcp`, RFC 9728 §3.1), built
///   once from this value and the server's own settings (issuers, DPoP), never from a request;
/// - names that document in every challenge (`resource_metadata`, RFC 9728 §5.1);
/// - accepts a token whose `aud` (a JWT's claim or an introspection answer's member) names
///   ``identifier`` (RFC 8707: a client asks for a token with `resource=<identifier>`), besides
///   the audiences its issuers or introspector already name; a token for another resource
///   is refused.
public struct ProtectedResource: Sendable {
    /// How `signed_metadata` is made (RFC 9728 §2.2): the metadata's members as the claims of a
    /// JWS signed with ``key``, with ``issuer`` as its `iss` (the party that attests them).
    public struct MetadataSignature: Sendable {
        /// The key that signs.
        public let key: JWSSigningKey
        /// The `iss` of the signed metadata.
        public let issuer: String

        /// Creates a signature setting.
        public init(key: JWSSigningKey, issuer: String) {
            self.key = key
            self.issuer = issuer
        }
    }

    /// The resource identifier (RFC 9728 §1.2, RFC 8707 §2), scheme and host lower-cased and
    /// a default port dropped: the metadata's `resource`, and the `aud` a token for this API
    /// carries. Configured, never taken from a request (its `Host` header changes nothing).
    public let identifier: URL
    /// Where the metadata is served (`ProtectedResourceMetadata.metadataURL(for:)`), and
    /// the `resource_metadata` of the challenges.
    public let metadataURL: URL
    /// `authorization_servers`: the issuers a client may get a token from; empty: the
    /// resource server's trusted issuers (its verifier's and introspector's).
    public let authorizationServers: [String]
    /// `scopes_supported`: the scopes a client may ask for.
    public let scopesSupported: [String]?
    /// `resource_name`: a name for people.
    public let name: String?
    /// `resource_documentation`: a page for developers.
    public let documentation: URL?
    /// More members of the document (a registered member the resource server sets itself wins).
    public let additionalFields: [String: JSONValue]
    /// How `signed_metadata` is made; `nil`: no signed metadata.
    public let signature: MetadataSignature?

    /// The `aud` values that name ``identifier``: the identifier, and for an identifier
    /// without a path both `https://host` and `https://host/` (RFC 3986 §6.2.3: the same URL;
    /// clients differ in which they send).
    package let audienceNames: [String]
    /// ``metadataURL``'s path, which the resource server answers.
    package let metadataPath: String

    /// Creates a protected resource.
    ///
    /// - Parameters:
    ///   - identifier: the resource identifier: an HTTPS URL (HTTP on a loopback host) without
    ///     query, fragment or user information. For an MCP server, its endpoint's URL.
    ///   - authorizationServers: the issuer identifiers to advertise; empty (the default):
    ///     the resource server's trusted issuers.
    ///   - scopesSupported: the scopes to advertise, if any.
    ///   - name: a name for people.
    ///   - documentation: a page for developers.
    ///   - additionalFields: more members of the document.
    ///   - signature: signs the document into `signed_metadata`.
    /// - Throws: `OAuth2Error.Code.insecureEndpoint` for an identifier or authorization
    ///   server that is not HTTPS (or HTTP on a loopback host);
    ///   `OAuth2Error.Code.invalidConfiguration` for an identifier with a query, fragment or
    ///   user information, or a scope that is not an RFC 6749 §3.3 scope token.
    public init(
        identifier: URL, authorizationServers: [String] = [], scopesSupported: [String]? = nil, name: String? = nil, documentation: URL? = nil,
        additionalFields: [String: JSONValue] = [:], signature: MetadataSignature? = nil
    ) throws(OAuth2Error) {
        metadataURL = try ProtectedResourceMetadata.metadataURL(for: identifier)
        guard let components = try ResourceIdentifier.components(identifier), let canonical = components.url,
            let metadataPath = URLComponents(url: metadataURL, resolvingAgainstBaseURL: false)?.percentEncodedPath
        else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The resource identifier is not a valid URL.")
        }
        for server in authorizationServers {
            guard let url = URL(string: server) else {
                throw OAuth2Error(.invalidConfiguration, source: .client, message: "An authorization server is not a URL.")
            }
            try EndpointPolicy.validate(url, name: "authorization server")
        }
        for scope in scopesSupported ?? [] where !Self.isScopeToken(scope) {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "A supported scope is not a scope token (RFC 6749 §3.3).")
        }
        self.identifier = canonical
        self.metadataPath = metadataPath
        self.authorizationServers = authorizationServers
        self.scopesSupported = scopesSupported
        self.name = name
        self.documentation = documentation
        self.additionalFields = additionalFields
        self.signature = signature
        if components.percentEncodedPath.isEmpty || components.percentEncodedPath == "/" {
            var bare = components
            bare.percentEncodedPath = ""
            var slash = components
            slash.percentEncodedPath = "/"
            audienceNames = [bare.url, slash.url].compactMap { $0?.absoluteString }
        } else {
            audienceNames = [canonical.absoluteString]
        }
    }

    /// Whether `audience` names this resource.
    package func isNamed(by audience: String) -> Bool {
        audienceNames.contains { $0 == audience }
    }

    /// `1*NQCHAR` (RFC 6749 §3.3, A.4): %x21 / %x23-5B / %x5D-7E.
    package static func isScopeToken(_ scope: String) -> Bool {
        !scope.isEmpty && scope.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }
}
