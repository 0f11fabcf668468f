import Foundation
import HTTPTypes

/// What a client needs to know about one provider, as data: where its server is, the
/// scopes worth asking for, how it wants the client to authenticate, the parameters and
/// headers it expects, and the ``ServerQuirks`` it needs.
///
/// A preset is a plain value: read it, change any part of it, or build your own. It never
/// holds your client's identity — combine it with a ``ClientConfiguration``:
///
/// ```swift
/// let client = try await OAuth2Client(
///     server: .preset(.github),
///     configuration: ClientConfiguration(clientID: id, clientSecret: secret,
///                                        redirectURI: URL(string: "http://127.0.0.1:8080/cb")!))
///
/// let enterprise = try ProviderPreset.github(enterpriseServer: URL(string: "https://git.example.com")!)
/// let entra = try ProviderPreset.microsoft(tenant: "contoso.onmicrosoft.com")
/// ```
///
/// The known providers live in `KnownProviders.swift`: ``github``, ``google``,
/// ``microsoft(tenant:authority:)``, ``okta(domain:authorizationServerID:)``,
/// ``auth0(domain:audience:)``, ``keycloak(baseURL:realm:)``, ``gitlab(baseURL:)``,
/// ``facebook``, ``reddit`` and ``linkedIn``.
public struct ProviderPreset: Sendable, Hashable, CustomStringConvertible {
    /// A short name (`github`, `microsoft`…), for logs and settings files.
    public var name: String
    /// Where the provider's endpoints are: an issuer to discover, or fixed metadata.
    public var server: AuthorizationServer
    /// The scopes asked for when the configuration names none.
    public var scopes: [String]
    /// The client authentication method the provider expects, when it does not say so in
    /// its metadata (`nil`: chosen from the metadata, see ``ClientConfiguration``).
    public var authenticationMethod: ClientAuthenticationMethod?
    /// Parameters the provider expects on requests of a kind (Google's
    /// `access_type=offline`, Reddit's `duration=permanent`, Auth0's `audience`).
    public var additionalParameters: [RequestKind: [String: String]]
    /// Headers the provider expects on requests of a kind (GitHub's
    /// `Accept: application/json`).
    public var additionalHeaders: [RequestKind: HTTPFields]
    /// The provider's deviations from the RFCs.
    public var quirks: ServerQuirks

    /// Creates a preset.
    public init(
        name: String,
        server: AuthorizationServer,
        scopes: [String] = [],
        authenticationMethod: ClientAuthenticationMethod? = nil,
        additionalParameters: [RequestKind: [String: String]] = [:],
        additionalHeaders: [RequestKind: HTTPFields] = [:],
        quirks: ServerQuirks = []
    ) {
        self.name = name
        self.server = server
        self.scopes = scopes
        self.authenticationMethod = authenticationMethod
        self.additionalParameters = additionalParameters
        self.additionalHeaders = additionalHeaders
        self.quirks = quirks
    }

    /// `configuration` completed with what the preset knows. The configuration's own
    /// choices win: its scopes (the preset's only when it has none), its authentication
    /// method, and each of its extra parameters and headers over the preset's of the same
    /// name. Quirks add up.
    public func applied(to configuration: ClientConfiguration) -> ClientConfiguration {
        var result = configuration
        if result.scopes.isEmpty { result.scopes = scopes }
        if result.authenticationMethod == nil {
            result.authenticationMethod = authenticationMethod
            // A client without a secret is public: `none`, unless the provider bends
            // Basic authentication to an empty secret (Reddit).
            if authenticationMethod == .clientSecretBasic || authenticationMethod == .clientSecretPost,
                result.clientSecret?.isEmpty ?? true,
                !(authenticationMethod == .clientSecretBasic && quirks.contains(.basicAuthenticationWithEmptySecret))
            {
                result.authenticationMethod = ClientAuthenticationMethod.none
            }
        }
        for (kind, parameters) in additionalParameters {
            result.additionalParameters[kind] = parameters.merging(result.additionalParameters[kind] ?? [:]) { _, own in own }
        }
        for (kind, headers) in additionalHeaders {
            var merged = result.additionalHeaders[kind] ?? HTTPFields()
            for field in headers where merged[field.name] == nil { merged.append(field) }
            result.additionalHeaders[kind] = merged
        }
        result.quirks.formUnion(quirks)
        return result
    }

    /// A configuration for this provider: your client's identity plus the preset's
    /// defaults (see ``applied(to:)``).
    public func configuration(
        clientID: String,
        clientSecret: String? = nil,
        redirectURI: URL? = nil,
        scopes: [String] = []
    ) -> ClientConfiguration {
        applied(to: ClientConfiguration(clientID: clientID, clientSecret: clientSecret, redirectURI: redirectURI, scopes: scopes))
    }

    /// The same preset with every server URL moved onto `baseURL` (see
    /// ``AuthorizationServer/rebased(onto:)``): a GitHub Enterprise Server, a proxy, or a
    /// local stand-in for the provider in tests.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for a base URL without scheme or
    ///   host.
    public func rebased(onto baseURL: URL) throws(OAuth2Error) -> ProviderPreset {
        var copy = self
        copy.server = try server.rebased(onto: baseURL)
        return copy
    }

    /// The name and the server; a preset holds no secret.
    public var description: String { "ProviderPreset(\(name), \(server))" }
}

extension ProviderPreset {
    /// `https://{host}` for a host name given by the user (an Okta or Auth0 domain, an
    /// Entra tenant), refusing anything that is not a plain DNS name.
    static func httpsURL(host: String, path: String = "", what: String) throws(OAuth2Error) -> URL {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")
        guard !host.isEmpty, host.count <= 253, host.allSatisfy({ allowed.contains($0) }), !host.hasPrefix("."),
            !host.hasPrefix("-"), let url = URL(string: "https://\(host)\(path)")
        else {
            throw .client(.invalidConfiguration, "The \(what) \"\(Redactor.sanitizeServerText(host, limit: 80))\" is not a host name.")
        }
        return url
    }

    /// A single path segment, percent-encoded (a Keycloak realm, a tenant).
    static func pathSegment(_ text: String, what: String) throws(OAuth2Error) -> String {
        guard !text.isEmpty, text != ".", text != "..",
            let encoded = text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/;")))
        else {
            throw .client(.invalidConfiguration, "The \(what) must be a non-empty path segment.")
        }
        return encoded
    }

    /// `base` with `path` appended (`base`'s own path kept, one slash between).
    static func appending(_ path: String, to base: URL) throws(OAuth2Error) -> URL {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        guard base.scheme != nil, base.host != nil, base.query == nil, base.fragment == nil,
            let url = URL(string: text + path)
        else {
            throw .client(.invalidConfiguration, "The base URL \(Redactor.url(base)) must be absolute, without query or fragment.")
        }
        return url
    }
}
