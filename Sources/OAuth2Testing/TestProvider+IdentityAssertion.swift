import Foundation
import OAuth2JOSE

// MARK: - Identity Assertion JWT Authorization Grant (MCP enterprise-managed authorization, SEP-990)

extension TestProvider.GrantType {
    /// `urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693): as the organisation's
    /// identity provider, the provider exchanges an ID token it issued for an Identity
    /// Assertion JWT Authorization Grant (ID-JAG) for another authorization server
    /// (``TestProvider/IdentityAssertions``). Confidential clients only.
    public static let tokenExchange = TestProvider.GrantType(rawValue: "urn:ietf:params:oauth:grant-type:token-exchange")
    /// `urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523 §2.1): as an MCP server's
    /// authorization server, the provider takes an ID-JAG from a trusted identity provider
    /// for an access token (``TestProvider/IdentityAssertions/trustedIssuers``).
    /// Confidential clients only.
    public static let jwtBearer = TestProvider.GrantType(rawValue: "urn:ietf:params:oauth:grant-type:jwt-bearer")
}

extension TestProvider {
    /// The identity assertion grant (draft-ietf-oauth-identity-assertion-authz-grant; the
    /// MCP enterprise-managed authorization, SEP-990), on both sides: a provider is the
    /// identity provider that issues ID-JAGs, the authorization server that takes them, or
    /// both (but never takes an ID-JAG it issued itself, draft §9.3).
    ///
    /// ```swift
    /// var idpConfiguration = TestProvider.Configuration.demo
    /// idpConfiguration.clients[0].grantTypes.insert(.tokenExchange)    // leg 1
    /// let idp = try await TestProvider.start(configuration: idpConfiguration)
    ///
    /// var asConfiguration = TestProvider.Configuration(clients: [.init(id: "agent", secret: "s",
    ///     grantTypes: [.jwtBearer])], users: [])                        // leg 2
    /// asConfiguration.identityAssertions.trustedIssuers = [
    ///     .init(issuer: idp.issuer.absoluteString, keys: idp.publicKeys)]
    /// let authorizationServer = try await TestProvider.start(configuration: asConfiguration)
    /// ```
    ///
    /// As the identity provider (a client with ``GrantType/tokenExchange``), the token
    /// endpoint takes `requested_token_type` `urn:ietf:params:oauth:token-type:id-jag`,
    /// a `subject_token` that is an ID token the provider issued to the authenticated client
    /// (`subject_token_type` `…:id_token`; signature, `iss`, `aud`, `exp` checked), one
    /// `audience` (the authorization server's issuer), `resource` and `scope`, and answers
    /// an ID-JAG signed with its key: header `typ` `oauth-id-jag+jwt`, claims `iss`, `sub`,
    /// `aud`, `client_id`, `jti`, `iat`, `exp`, `resource` and `scope` when asked for,
    /// `auth_time`, `acr` and `amr` from the ID token; `issued_token_type` id-jag,
    /// `token_type` `N_A`.
    ///
    /// As the authorization server (a client with ``GrantType/jwtBearer``), it takes an
    /// `assertion` that is an ID-JAG with a valid signature by a trusted issuer's key,
    /// `typ` `oauth-id-jag+jwt`, `aud` its own issuer, an unexpired `exp`, an `iat` not in
    /// the future, a `client_id` equal to the authenticated client's, and a `jti` not seen
    /// before (replay); a `resource` parameter must be among the assertion's resources, a
    /// `scope` among its scopes. The access token it issues is for the assertion's `sub`,
    /// bound to the resources (introspection's `aud`) and the scopes. Every refusal is
    /// `invalid_grant` (or `invalid_target`, `invalid_scope`) with a description that names
    /// the failed check.
    public struct IdentityAssertions: Sendable {
        /// An identity provider whose ID-JAGs the provider takes, as an authorization server.
        public struct TrustedIssuer: Sendable {
            /// Its issuer identifier: the ID-JAG's `iss`, compared exactly.
            public var issuer: String
            /// The keys its ID-JAGs are signed with (for another ``TestProvider``,
            /// ``TestProvider/publicKeys``).
            public var keys: JSONWebKeySet

            /// An identity provider and its keys.
            public init(issuer: String, keys: JSONWebKeySet) {
                self.issuer = issuer
                self.keys = keys
            }
        }

        /// The identity providers whose ID-JAGs are taken (leg 2); empty (the default)
        /// refuses every ID-JAG. Change them at any time with
        /// ``TestProvider/trustIdentityAssertions(from:)``.
        public var trustedIssuers: [TrustedIssuer]
        /// How long an ID-JAG the provider issues lasts (leg 1). Default 5 minutes.
        public var grantLifetime: Duration
        /// The authorization servers (issuer identifiers) the provider issues ID-JAGs for;
        /// `nil` (the default) for any. Another `audience` is refused with `invalid_target`.
        public var audiences: Set<String>?
        /// The `client_id` claim of an ID-JAG for a client that authenticated with the key's
        /// id: its id at the authorization server (draft §5, cross-domain client ids).
        /// A client without an entry keeps its own id.
        public var clientIDsAtAuthorizationServers: [String: String]

        /// Creates the options.
        public init(
            trustedIssuers: [TrustedIssuer] = [], grantLifetime: Duration = .seconds(300), audiences: Set<String>? = nil,
            clientIDsAtAuthorizationServers: [String: String] = [:]
        ) {
            self.trustedIssuers = trustedIssuers
            self.grantLifetime = grantLifetime
            self.audiences = audiences
            self.clientIDsAtAuthorizationServers = clientIDsAtAuthorizationServers
        }
    }

    /// The public keys the provider signs with (its JWK set): to trust it as an identity
    /// provider in another provider (``IdentityAssertions/TrustedIssuer``).
    public var publicKeys: JSONWebKeySet {
        JSONWebKeySet(keys: core.state.withLock { $0.keys.compactMap(\.publicKey) })
    }

    /// Takes ID-JAGs from `issuer` from now on (leg 2), replacing the keys of an issuer
    /// already trusted.
    public func trustIdentityAssertions(from issuer: IdentityAssertions.TrustedIssuer) {
        core.state.withLock { state in
            state.identityAssertions.options.trustedIssuers.removeAll { $0.issuer == issuer.issuer }
            state.identityAssertions.options.trustedIssuers.append(issuer)
        }
    }
}

/// The provider's identity assertion state: its options and the `jti`s of the ID-JAGs it
/// took, until they expire (replay protection).
struct IdentityAssertionState: Sendable {
    var options: TestProvider.IdentityAssertions
    var usedGrantIDs: [String: Date] = [:]

    init(options: TestProvider.IdentityAssertions = .init()) {
        self.options = options
    }
}
