import Foundation

/// Protected resource metadata (RFC 9728 §2): what an API (an OAuth 2.0 protected resource)
/// publishes about itself — its resource identifier, the authorization servers that issue
/// its tokens, the scopes it knows, how it takes tokens.
///
/// Every registered member has a typed property; members the library does not know are
/// kept (``fields`` holds the whole document). Decoding checks the type of every known
/// member and that `resource` is there (RFC 9728 §2: the one required member).
///
/// The document's place is ``metadataURL(for:)``: the resource identifier with
/// `/.well-known/oauth-protected-resource` inserted before its path (RFC 9728 §3.1).
public struct ProtectedResourceMetadata: Sendable, Hashable, Codable {
    /// The whole document, known and unknown members alike.
    public private(set) var fields: [String: JSONValue]

    /// The well-known path segment of RFC 9728 §3, `/.well-known/oauth-protected-resource`.
    public static let wellKnownPath = "/.well-known/oauth-protected-resource"

    /// Decodes and type-checks a metadata document.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidResponse`` when `resource` is missing or a known
    ///   member has the wrong type.
    public init(fields: [String: JSONValue]) throws(OAuth2Error) {
        guard fields["resource"]?.stringValue != nil else {
            throw OAuth2Error(.invalidResponse, source: .client, message: "The protected resource metadata has no resource (RFC 9728 §2).")
        }
        for (name, kind) in Self.knownFields {
            guard let value = fields[name], value != .null else { continue }
            guard kind.accepts(value) else {
                throw OAuth2Error(.invalidResponse, source: .client, message: "The metadata member \(name) is not a \(kind).")
            }
        }
        self.fields = fields
    }

    /// Decodes a metadata document from JSON.
    public init(from decoder: any Decoder) throws {
        let fields = try [String: JSONValue](from: decoder)
        try self.init(fields: fields)
    }

    /// Encodes the whole document, unknown members included.
    public func encode(to encoder: any Encoder) throws {
        try fields.encode(to: encoder)
    }

    /// Where the metadata of the resource `resource` is published (RFC 9728 §3.1): its
    /// origin, then `/.well-known/oauth-protected-resource`, then its path, if any. For
    /// `https://api.example.com/mcp` it is
    /// `https://api.example.com/.well-known/oauth-protected-resource/mcp`; for
    /// `https://api.example.com` and `https://api.example.com/` it is
    /// `https://api.example.com/.well-known/oauth-protected-resource`. A trailing slash of a
    /// longer path is kept (`/mcp/` is another resource than `/mcp`).
    ///
    /// - Throws: ``OAuth2Error/Code/insecureEndpoint`` unless `resource` is an absolute
    ///   HTTPS URL (plain HTTP only on a loopback host);
    ///   ``OAuth2Error/Code/invalidConfiguration`` when it has a fragment, a query or user
    ///   information: a resource identifier has no fragment (RFC 9728 §1.2), and this
    ///   library takes none with a query (RFC 8707 §2 says it should not have one, and the
    ///   metadata's place would then depend on it).
    public static func metadataURL(for resource: URL) throws(OAuth2Error) -> URL {
        guard var components = try ResourceIdentifier.components(resource) else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The resource identifier is not a valid URL.")
        }
        let path = components.percentEncodedPath == "/" ? "" : components.percentEncodedPath
        components.percentEncodedPath = wellKnownPath + path
        guard let url = components.url else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The resource identifier is not a valid URL.")
        }
        return url
    }

    // MARK: - Accessors

    /// A member as a string.
    public func string(_ name: String) -> String? { fields[name]?.stringValue }

    /// A member as a URL.
    public func url(_ name: String) -> URL? { string(name).flatMap(URL.init(string:)) }

    /// A member as an array of strings.
    public func strings(_ name: String) -> [String]? { fields[name]?.arrayValue?.compactMap(\.stringValue) }

    /// A member as a boolean.
    public func bool(_ name: String) -> Bool? { fields[name]?.boolValue }

    /// `resource`: the protected resource's resource identifier (always present).
    public var resource: String { string("resource") ?? "" }
    /// `authorization_servers`: the issuer identifiers of the authorization servers whose
    /// tokens the resource accepts.
    public var authorizationServers: [String]? { strings("authorization_servers") }
    /// `jwks_uri`: the resource's own public keys (for signed responses).
    public var jwksURI: URL? { url("jwks_uri") }
    /// `scopes_supported`: the scopes a client may request for the resource.
    public var scopesSupported: [String]? { strings("scopes_supported") }
    /// `bearer_methods_supported`: how a bearer token may be sent (`header`, `body`, `query`).
    public var bearerMethodsSupported: [String]? { strings("bearer_methods_supported") }
    /// `resource_signing_alg_values_supported`
    public var resourceSigningAlgValuesSupported: [String]? { strings("resource_signing_alg_values_supported") }
    /// `resource_name`: a name for people.
    public var resourceName: String? { string("resource_name") }
    /// `resource_documentation`: a page for developers.
    public var resourceDocumentation: URL? { url("resource_documentation") }
    /// `resource_policy_uri`
    public var resourcePolicyURI: URL? { url("resource_policy_uri") }
    /// `resource_tos_uri`
    public var resourceTosURI: URL? { url("resource_tos_uri") }
    /// `tls_client_certificate_bound_access_tokens` (RFC 8705)
    public var tlsClientCertificateBoundAccessTokens: Bool? { bool("tls_client_certificate_bound_access_tokens") }
    /// `authorization_details_types_supported` (RFC 9396)
    public var authorizationDetailsTypesSupported: [String]? { strings("authorization_details_types_supported") }
    /// `dpop_signing_alg_values_supported` (RFC 9449): the DPoP proof algorithms accepted.
    public var dpopSigningAlgValuesSupported: [String]? { strings("dpop_signing_alg_values_supported") }
    /// `dpop_bound_access_tokens_required` (RFC 9449): whether only DPoP-bound tokens are accepted.
    public var dpopBoundAccessTokensRequired: Bool? { bool("dpop_bound_access_tokens_required") }
    /// `signed_metadata`: a JWT whose claims are metadata values, attested by its `iss`
    /// (RFC 9728 §2.2).
    public var signedMetadata: String? { string("signed_metadata") }

    static let knownFields: [String: ServerMetadata.FieldKind] = {
        var kinds: [String: ServerMetadata.FieldKind] = ["resource": .string, "resource_name": .string, "signed_metadata": .string]
        for name in ["jwks_uri", "resource_documentation", "resource_policy_uri", "resource_tos_uri"] { kinds[name] = .url }
        for name in [
            "authorization_servers", "scopes_supported", "bearer_methods_supported", "resource_signing_alg_values_supported",
            "authorization_details_types_supported", "dpop_signing_alg_values_supported",
        ] { kinds[name] = .strings }
        for name in ["tls_client_certificate_bound_access_tokens", "dpop_bound_access_tokens_required"] { kinds[name] = .bool }
        return kinds
    }()
}

/// The rules of a resource identifier (RFC 9728 §1.2, RFC 8707 §2), shared by the metadata's
/// place and the resource server's configuration.
package enum ResourceIdentifier {
    /// `resource`'s components, scheme and host lower-cased and a default port dropped;
    /// `nil` when they cannot be read.
    ///
    /// - Throws: ``OAuth2Error/Code/insecureEndpoint`` unless HTTPS (or HTTP on a loopback
    ///   host); ``OAuth2Error/Code/invalidConfiguration`` for a fragment, a query or user
    ///   information.
    package static func components(_ resource: URL) throws(OAuth2Error) -> URLComponents? {
        try EndpointPolicy.validate(resource, name: "resource identifier")
        guard var components = URLComponents(url: resource, resolvingAgainstBaseURL: false) else { return nil }
        guard components.percentEncodedQuery == nil else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The resource identifier must not have a query (RFC 8707 §2).")
        }
        guard components.percentEncodedUser == nil, components.percentEncodedPassword == nil else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The resource identifier must not have user information.")
        }
        components.scheme = components.scheme?.lowercased()
        components.percentEncodedHost = components.percentEncodedHost?.lowercased()
        if (components.scheme == "https" && components.port == 443) || (components.scheme == "http" && components.port == 80) {
            components.port = nil
        }
        return components
    }
}
