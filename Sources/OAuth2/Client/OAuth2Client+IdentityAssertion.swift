import Foundation

// MARK: - Identity Assertion JWT Authorization Grant (MCP enterprise-managed authorization, SEP-990)

extension OAuth2Client {
    /// Leg 1 of the identity assertion grant (draft-ietf-oauth-identity-assertion-authz-grant
    /// §4.3): at this client's server — the organisation's identity provider — exchanges the
    /// user's ID token (RFC 8693) for an ID-JAG addressed to another authorization server.
    ///
    /// Sends `grant_type` token exchange with `requested_token_type`
    /// `urn:ietf:params:oauth:token-type:id-jag`, `subject_token` the ID token
    /// (`subject_token_type` `…:id_token`), `audience`, `resource` and `scope`; the client
    /// authenticates as configured with the identity provider.
    ///
    /// ```swift
    /// let grant = try await identityProvider.requestIdentityAssertionGrant(
    ///     idToken: tokens.idToken!, audience: "https://auth.mcp.example.com",
    ///     resource: URL(string: "https://mcp.example.com/mcp"), scopes: ["mcp:read"])
    /// let mcpTokens = try await mcpAuthorizationServer.jwtBearer(grant)
    /// ```
    ///
    /// - Parameters:
    ///   - idToken: the user's ID token from this identity provider (the subject token).
    ///   - audience: the issuer identifier of the authorization server the grant is for.
    ///   - resource: the resource (RFC 8707) the grant is for, e.g. an MCP server's URL.
    ///   - scopes: the scopes asked for at that resource; empty sends none.
    /// - Returns: the grant, checked as ``IdentityAssertionGrant/init(_:audience:resource:)`` does.
    /// - Throws: ``OAuth2Error/Code/invalidRequest`` for an empty ID token or audience, or a
    ///   resource that is not absolute (before anything is sent); the identity provider's
    ///   error, typed (`invalid_grant` for a refused ID token, `invalid_target`,
    ///   `invalid_client`, `unsupported_grant_type`…); ``OAuth2Error/Code/invalidResponse``
    ///   for an answer that is no ID-JAG.
    public func requestIdentityAssertionGrant(
        idToken: String, audience: String, resource: URL? = nil, scopes: [String] = []
    ) async throws -> IdentityAssertionGrant {
        guard !audience.isEmpty else {
            throw OAuth2Error.client(.invalidRequest, "The audience of an identity assertion grant (the authorization server's issuer) is empty.")
        }
        let answer = try await exchangeToken(
            TokenExchangeRequest(
                subject: .init(idToken, type: .idToken), resources: resource.map { [$0] } ?? [], audiences: [audience],
                scopes: scopes, requestedTokenType: .identityAssertionGrant))
        return try IdentityAssertionGrant(answer, audience: audience, resource: resource)
    }

    /// Leg 2 of the identity assertion grant (draft-ietf-oauth-identity-assertion-authz-grant
    /// §4.4): presents an ID-JAG to this client's server — the authorization server it is
    /// addressed to — with the JWT bearer grant (RFC 7523 §2.1), and returns its tokens.
    ///
    /// Sends `grant_type` `urn:ietf:params:oauth:grant-type:jwt-bearer`, `assertion`, and
    /// `scope` and `resource` (RFC 8707) when there are some; the client authenticates as
    /// configured with this server. The assertion is sent nowhere else: a grant addressed
    /// to another server, or expired, is refused before anything is sent.
    ///
    /// - Parameters:
    ///   - grant: the grant from leg 1.
    ///   - scopes: the scopes to ask for; `nil` asks for the grant's (none when it has none).
    /// - Throws: ``OAuth2Error/Code/invalidRequest`` when the grant's audience is not this
    ///   server's issuer, when it has expired, or when the assertion is not a compact JWT;
    ///   ``OAuth2Error/Code/invalidConfiguration`` when this server's metadata names no
    ///   issuer; the server's error — `invalid_grant` for an assertion it refuses (untrusted
    ///   issuer, bad signature, wrong audience, expired, replayed, another client's),
    ///   `invalid_client`, `unsupported_grant_type`.
    public func jwtBearer(_ grant: IdentityAssertionGrant, scopes: [String]? = nil) async throws -> TokenSet {
        guard let issuer = metadata.issuer else {
            throw OAuth2Error.client(
                .invalidConfiguration, "The authorization server's metadata names no issuer: an identity assertion grant cannot be addressed to it.")
        }
        guard grant.audience == issuer else {
            throw OAuth2Error.client(
                .invalidRequest, "The identity assertion grant is for \(grant.audience), not for this authorization server (\(issuer)); it is not sent.")
        }
        guard !grant.isExpired(at: now()) else {
            throw OAuth2Error.client(.invalidRequest, "The identity assertion grant has expired; request a new one from the identity provider.")
        }
        let bearer = try Grant.jwtBearer(assertion: grant.assertion, scopes: scopes ?? grant.scopes ?? [])
        var parameters = bearer.parameters
        if let resource = grant.resource { parameters.append(("resource", resource.absoluteString)) }
        return try await requestToken(
            Grant(type: bearer.type, parameters: parameters, requestedScopes: bearer.requestedScopes))
    }
}

/// The whole identity assertion grant flow (MCP enterprise-managed authorization, SEP-990;
/// draft-ietf-oauth-identity-assertion-authz-grant): the user's ID token from the
/// organisation's identity provider is exchanged there for an ID-JAG (leg 1), which the MCP
/// server's authorization server takes for an access token (leg 2).
///
/// ```swift
/// let authorization = IdentityAssertionAuthorization(
///     identityProvider: idpClient,             // signed the user in; knows the client
///     authorizationServer: mcpClient,          // the MCP server's authorization server
///     resource: URL(string: "https://mcp.example.com/mcp")!,
///     scopes: ["mcp:read"])
/// let tokens = try await authorization.tokens(idToken: idpTokens.idToken!)
/// ```
///
/// The two clients hold their own registrations (client ids and credentials); the
/// authorization server is configuration, not discovery — the ID-JAG goes only to the
/// token endpoint of the server whose issuer it names. Without a refresh token, get new
/// tokens by calling ``tokens(idToken:)`` again (with an ID token that is still valid).
public struct IdentityAssertionAuthorization: Sendable {
    /// The client of the organisation's identity provider (leg 1).
    public var identityProvider: OAuth2Client
    /// The client of the resource's authorization server (leg 2).
    public var authorizationServer: OAuth2Client
    /// The resource (RFC 8707) the tokens are for, e.g. an MCP server's URL.
    public var resource: URL?
    /// The scopes asked for; empty sends none.
    public var scopes: [String]

    /// A flow between an identity provider and an authorization server.
    public init(identityProvider: OAuth2Client, authorizationServer: OAuth2Client, resource: URL? = nil, scopes: [String] = []) {
        self.identityProvider = identityProvider
        self.authorizationServer = authorizationServer
        self.resource = resource
        self.scopes = scopes
    }

    /// The ID-JAG's audience: the authorization server's issuer identifier.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when its metadata names no issuer.
    public func audience() throws(OAuth2Error) -> String {
        guard let issuer = authorizationServer.metadata.issuer else {
            throw .client(.invalidConfiguration, "The authorization server's metadata names no issuer: an identity assertion grant cannot be addressed to it.")
        }
        return issuer
    }

    /// Leg 1 only: an ID-JAG for the authorization server, from the identity provider.
    ///
    /// - Throws: as ``audience()``, then as
    ///   ``OAuth2Client/requestIdentityAssertionGrant(idToken:audience:resource:scopes:)``.
    public func grant(idToken: String) async throws -> IdentityAssertionGrant {
        try await identityProvider.requestIdentityAssertionGrant(
            idToken: idToken, audience: try audience(), resource: resource, scopes: scopes)
    }

    /// Both legs: the authorization server's tokens for the user the ID token names.
    ///
    /// - Throws: as ``grant(idToken:)``, then as ``OAuth2Client/jwtBearer(_:scopes:)``.
    public func tokens(idToken: String) async throws -> TokenSet {
        let grant = try await grant(idToken: idToken)
        return try await authorizationServer.jwtBearer(grant, scopes: scopes.isEmpty ? nil : scopes)
    }
}
