import Foundation

/// What ``ProtectedResourceDiscovery`` found: the resource's checked metadata and the
/// authorization server chosen from it, discovered and checked.
public struct DiscoveredResource: Sendable {
    /// The resource identifier, as the metadata names it (equal to the URL discovery began
    /// from): the `resource` parameter of every authorization and token request (RFC 8707)
    /// and the audience of the tokens.
    public let resource: URL
    /// The resource's metadata.
    public let metadata: ProtectedResourceMetadata
    /// Where the metadata was found.
    public let metadataURL: URL
    /// The chosen authorization server's issuer, as listed in `authorization_servers`.
    public let issuer: URL
    /// The chosen authorization server's metadata; its `issuer` is ``issuer``.
    public let authorizationServer: ServerMetadata
    /// The scopes the resource's challenge named (`scope`), if it named any.
    public let challengedScopes: [String]?

    /// The scopes to ask for: the challenge's, else the metadata's `scopes_supported`, else
    /// none (MCP authorization's scope selection).
    public var scopes: [String] { challengedScopes ?? metadata.scopesSupported ?? [] }

    /// The authorization server, for ``OAuth2Client/init(server:configuration:environment:)``
    /// (nothing fetched again).
    public var server: AuthorizationServer { .metadata(authorizationServer) }

    /// `configuration` with this resource's indicator (RFC 8707) on every authorization and
    /// token request, and with ``scopes`` when it names none.
    public func boundToResource(_ configuration: ClientConfiguration) -> ClientConfiguration {
        var configuration = configuration
        for kind in [RequestKind.authorization, .token, .deviceAuthorization] {
            configuration.additionalParameters[kind, default: [:]]["resource"] = resource.absoluteString
        }
        if configuration.scopes.isEmpty { configuration.scopes = scopes }
        return configuration
    }
}

// MARK: - The client's identity (MCP authorization, client registration)

/// How a client identifies itself to an authorization server it may never have met
/// (``DiscoveredResource/clientIdentity(configuredClientID:metadataDocument:)``).
public enum ClientIdentity: Sendable, Hashable {
    /// A client id the client already holds for this authorization server (registered
    /// beforehand by its operator, or dynamically on an earlier run).
    case configured(String)
    /// A Client ID Metadata Document: the `client_id` is the HTTPS URL where the client
    /// publishes its metadata (redirect URIs, name), which the server fetches.
    case metadataDocument(URL)
    /// Dynamic client registration (RFC 7591) at the server's `registration_endpoint`
    /// (``ClientRegistrar``, with ``DiscoveredResource/registrationMetadata(redirectURI:clientName:)``).
    case dynamicRegistration
}

extension DiscoveredResource {
    /// The client identity to use at the chosen authorization server, in the MCP
    /// authorization specification's order: a client id held for this server; else the
    /// Client ID Metadata Document at `metadataDocument`, when the server advertises
    /// `client_id_metadata_document_supported`; else dynamic registration, when it has a
    /// `registration_endpoint`.
    ///
    /// - Parameters:
    ///   - configuredClientID: a client id held for this very authorization server, if any.
    ///   - metadataDocument: where the client publishes its metadata document, if it does:
    ///     an HTTPS URL with a path (plain HTTP only on a loopback host, for tests).
    /// - Throws: ``OAuth2Error/Code/insecureEndpoint`` or
    ///   ``OAuth2Error/Code/invalidConfiguration`` for an unusable `metadataDocument`;
    ///   ``OAuth2Error/Code/invalidConfiguration`` when no way fits (no client id, the
    ///   server takes no metadata document the client has, and registers no clients).
    public func clientIdentity(configuredClientID: String? = nil, metadataDocument: URL? = nil) throws(OAuth2Error) -> ClientIdentity {
        if let configuredClientID, !configuredClientID.isEmpty { return .configured(configuredClientID) }
        if let metadataDocument, authorizationServer.clientIDMetadataDocumentSupported == true {
            try EndpointPolicy.validate(metadataDocument, name: "client id metadata document URL")
            let path = metadataDocument.path
            guard !path.isEmpty, path != "/", metadataDocument.query == nil else {
                throw .client(
                    .invalidConfiguration, "A client id metadata document URL has a path and no query (it is the client_id).")
            }
            return .metadataDocument(metadataDocument)
        }
        if authorizationServer.registrationEndpoint != nil { return .dynamicRegistration }
        throw .client(
            .invalidConfiguration,
            "The authorization server \(Redactor.url(issuer)) registers no clients and takes no client id metadata document this client has; configure a client id.")
    }

    /// What a client of this resource registers (RFC 7591): a public client
    /// (`token_endpoint_auth_method` `none`, PKCE) of the authorization-code and refresh
    /// grants with `redirectURI`, asking for ``scopes``; `application_type` `native` for a
    /// loopback or private-scheme redirect (RFC 8252, OIDC Registration §2), `web`
    /// otherwise.
    public func registrationMetadata(redirectURI: URL, clientName: String) -> RegistrationMetadata {
        let scheme = redirectURI.scheme?.lowercased()
        let native = (scheme != "https" && scheme != "http") || EndpointPolicy.isLoopback(host: redirectURI.host ?? "")
        return RegistrationMetadata(
            redirectURIs: [redirectURI], grantTypes: ["authorization_code", "refresh_token"], responseTypes: ["code"],
            tokenEndpointAuthMethod: ClientAuthenticationMethod.none, clientName: clientName, scopes: scopes,
            additionalMembers: ["application_type": .string(native ? "native" : "web")])
    }

    /// The account of this resource's sessions (``TokenSession/init(client:tokens:store:account:options:)``):
    /// its resource identifier, so that the tokens of two resources of one authorization
    /// server and client are kept apart, never shared.
    public var account: String { resource.absoluteString }
}
