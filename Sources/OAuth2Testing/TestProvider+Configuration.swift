import Foundation
import OAuth2JOSE

extension TestProvider {
    /// A grant type the token endpoint knows (RFC 6749 §4, RFC 8628 §3.4).
    public struct GrantType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The `grant_type` value.
        public let rawValue: String
        /// A grant type by its `grant_type` value.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The `grant_type` value.
        public var description: String { rawValue }

        /// `authorization_code` (with PKCE S256, always).
        public static let authorizationCode = GrantType(rawValue: "authorization_code")
        /// `refresh_token`; a client with it gets refresh tokens from its other grants.
        public static let refreshToken = GrantType(rawValue: "refresh_token")
        /// `client_credentials` (confidential clients only).
        public static let clientCredentials = GrantType(rawValue: "client_credentials")
        /// `password` (the resource owner's credentials; RFC 9700 forbids it for new
        /// deployments, so test only legacy code with it).
        public static let password = GrantType(rawValue: "password")
        /// `urn:ietf:params:oauth:grant-type:device_code` (RFC 8628).
        public static let deviceCode = GrantType(rawValue: "urn:ietf:params:oauth:grant-type:device_code")

        /// Every grant the provider implements.
        public static let all: Set<GrantType> = [
            .authorizationCode, .refreshToken, .clientCredentials, .password, .deviceCode, .tokenExchange, .jwtBearer,
        ]
    }

    /// A registered client.
    ///
    /// A client with a ``secret`` is confidential and authenticates with
    /// `client_secret_basic` or `client_secret_post`; one without is public and sends only
    /// its `client_id` (`none`).
    public struct Client: Sendable, Hashable, CustomStringConvertible {
        /// `client_id`.
        public var id: String
        /// The client secret; `nil` for a public client. Never printed.
        public var secret: String?
        /// The registered redirect URIs. A requested `redirect_uri` must equal one of them
        /// character for character — except that a registered loopback URI without a port
        /// (`http://127.0.0.1/callback`, `http://[::1]/callback`) accepts any port, as
        /// RFC 8252 §7.3 requires for native apps. A registered URI with a port matches only
        /// that port.
        public var redirectURIs: [URL]
        /// The registered post-logout redirect URIs (matched like ``redirectURIs``).
        public var postLogoutRedirectURIs: [URL]
        /// The grants the client may use.
        public var grantTypes: Set<GrantType>
        /// The scopes the client may ask for; `nil` allows any. A request for another scope
        /// is refused with `invalid_scope`. A `client_credentials` request without `scope`
        /// gets these.
        public var allowedScopes: Set<String>?
        /// The client's `backchannel_logout_uri` (OpenID Connect Back-Channel Logout 1.0
        /// §2.2), or `nil`. When a session the client signed in through ends at the
        /// end-session endpoint, the provider POSTs a logout token there (with `sub` and
        /// `sid`); ``TestProvider/sendBackChannelLogout(clientID:subject:sessionID:timeout:)``
        /// sends one on demand. Only `http` URIs can be reached.
        public var backChannelLogoutURI: URL?
        /// Encrypt the client's ID tokens (signed, then encrypted: a nested JWT with `cty`
        /// `JWT`) to a public key of the client, as a server does for a client that
        /// registered `id_token_encrypted_response_alg`; `nil` (the default) sends them
        /// signed only.
        public var idTokenEncryption: IDTokenEncryption?
        /// Encrypt the client's JWT-secured authorization responses (JARM: asked for with
        /// `response_mode` `jwt`, `query.jwt` or `fragment.jwt`) — signed, then encrypted — to
        /// a public key of the client, as a server does for a client that registered
        /// `authorization_encrypted_response_alg`; `nil` (the default) sends them signed only.
        public var authorizationResponseEncryption: IDTokenEncryption?

        /// How a client's ID tokens (or JWT-secured authorization responses) are encrypted.
        public struct IDTokenEncryption: Sendable, Hashable {
            /// The client's public encryption key (`use: enc`), e.g. `JWEDecryptionKey.publicKey`.
            public var key: JSONWebKey
            /// `id_token_encrypted_response_alg`.
            public var algorithm: JWEKeyAlgorithm
            /// `id_token_encrypted_response_enc`.
            public var encryption: JWEContentEncryption

            /// Creates the settings; `A128CBC-HS256` is OpenID Connect's default `enc`.
            public init(key: JSONWebKey, algorithm: JWEKeyAlgorithm, encryption: JWEContentEncryption = .a128CBCHS256) {
                self.key = key
                self.algorithm = algorithm
                self.encryption = encryption
            }
        }

        /// `true` when the client has no secret.
        public var isPublic: Bool { secret == nil }

        /// Registers a client.
        public init(
            id: String,
            secret: String? = nil,
            redirectURIs: [URL] = [],
            postLogoutRedirectURIs: [URL] = [],
            grantTypes: Set<GrantType> = [.authorizationCode, .refreshToken],
            allowedScopes: Set<String>? = nil,
            backChannelLogoutURI: URL? = nil
        ) {
            self.id = id
            self.secret = secret
            self.redirectURIs = redirectURIs
            self.postLogoutRedirectURIs = postLogoutRedirectURIs
            self.grantTypes = grantTypes
            self.allowedScopes = allowedScopes
            self.backChannelLogoutURI = backChannelLogoutURI
        }

        /// The id and kind; never the secret.
        public var description: String { "TestProvider.Client(\(id), \(isPublic ? "public" : "confidential"))" }
    }

    /// A user who can sign in.
    public struct User: Sendable, Hashable, CustomStringConvertible {
        /// The name the password grant and `login_hint` use.
        public var username: String
        /// The password (password grant only). Never printed.
        public var password: String
        /// `sub`: stable, never reassigned.
        public var subject: String
        /// Claims about the user. The standard claims of OIDC Core §5.4 go into ID tokens
        /// and UserInfo only when their scope was granted (`profile`: `name`,
        /// `preferred_username`…; `email`: `email`, `email_verified`; `address`; `phone`:
        /// `phone_number`, `phone_number_verified`); any other claim always does.
        /// `preferred_username` defaults to ``username`` under `profile`.
        public var claims: [String: JSONValue]

        /// Creates a user; the subject defaults to the username.
        public init(username: String, password: String, subject: String? = nil, claims: [String: JSONValue] = [:]) {
            self.username = username
            self.password = password
            self.subject = subject ?? username
            self.claims = claims
        }

        /// The username and subject; never the password.
        public var description: String { "TestProvider.User(\(username), sub: \(subject))" }
    }

    /// How long what the provider issues lasts. Change them at any time with
    /// ``TestProvider/lifetimes``: they apply to what is issued afterwards.
    public struct Lifetimes: Sendable, Hashable {
        /// Access tokens (`expires_in`). Default 1 hour.
        public var accessToken: Duration
        /// Refresh tokens; `nil` (the default) for no expiry.
        public var refreshToken: Duration?
        /// ID tokens (`exp - iat`). Default 1 hour.
        public var idToken: Duration
        /// Authorization codes. Default 1 minute.
        public var authorizationCode: Duration
        /// Device codes (RFC 8628 `expires_in`). Default 10 minutes.
        public var deviceCode: Duration
        /// The device flow's polling `interval`. Default 1 second — shorter than the RFC's
        /// 5, for quick tests. Polling faster than three quarters of it is answered
        /// `slow_down`, and the interval grows by 5 seconds (RFC 8628 §3.5).
        public var devicePollingInterval: Duration

        /// Creates lifetimes.
        public init(
            accessToken: Duration = .seconds(3600),
            refreshToken: Duration? = nil,
            idToken: Duration = .seconds(3600),
            authorizationCode: Duration = .seconds(60),
            deviceCode: Duration = .seconds(600),
            devicePollingInterval: Duration = .seconds(1)
        ) {
            self.accessToken = accessToken
            self.refreshToken = refreshToken
            self.idToken = idToken
            self.authorizationCode = authorizationCode
            self.deviceCode = deviceCode
            self.devicePollingInterval = devicePollingInterval
        }
    }

    /// What the provider knows and how it behaves.
    ///
    /// ```swift
    /// var configuration = TestProvider.Configuration(
    ///     clients: [.init(id: "my-app", redirectURIs: [URL(string: "http://127.0.0.1/callback")!])],
    ///     users: [.init(username: "alice", password: "alice-pw", claims: ["name": "Alice"])],
    ///     autoApprovedUser: "alice")
    /// configuration.signingAlgorithm = .es256
    /// let provider = try await TestProvider.start(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The registered clients.
        public var clients: [Client]
        /// The users.
        public var users: [User]
        /// The user the authorization endpoint signs in, without asking, when the request's
        /// `login_hint` names no user; `nil` answers `access_denied` (`login_required` with
        /// `prompt=none`). Visiting the device verification page approves for this user too.
        public var autoApprovedUser: String?
        /// Token lifetimes.
        public var lifetimes: Lifetimes
        /// The algorithm of the signing keys (RS256 by default; ES256, PS256, EdDSA… — any
        /// of `JWSAlgorithm.asymmetric`).
        public var signingAlgorithm: JWSAlgorithm
        /// A fixed first signing key instead of a generated one (its algorithm wins over
        /// ``signingAlgorithm``). Its `kid` is kept, or set to its RFC 7638 thumbprint.
        public var signingKey: JWSSigningKey?
        /// Whether authorization responses carry `iss` (RFC 9207) and the metadata says so.
        /// Default `true`.
        public var sendsIssuerParameter: Bool
        /// Whether a refresh gives a new refresh token and retires the old one. Default
        /// `true`; presenting a retired refresh token then revokes every token of its grant
        /// (reuse detection, RFC 9700 §4.14.2).
        public var rotatesRefreshTokens: Bool
        /// A path for the issuer (`/realms/test`); empty by default. The endpoints live under
        /// it; the RFC 8414 document at `/.well-known/oauth-authorization-server<path>`.
        public var issuerPath: String
        /// The port to listen on (on 127.0.0.1); 0, the default, takes a free one.
        public var port: Int
        /// The identity assertion grant (MCP enterprise-managed authorization), as identity
        /// provider and as authorization server: ``TestProvider/IdentityAssertions``.
        public var identityAssertions = IdentityAssertions()
        /// Whether and how a `client_id` that is an `https` URL names a Client ID Metadata
        /// Document the provider fetches; `nil` (the default): such ids are unknown clients.
        public var clientMetadataDocuments: ClientMetadataDocuments? = nil
        /// The certificate the provider serves HTTPS with; `nil` (the default): plain HTTP on
        /// loopback (RFC 8252 §8.3 lets native clients use it there).
        public var tls: TLS? = nil

        /// Creates a configuration.
        public init(
            clients: [Client],
            users: [User],
            autoApprovedUser: String? = nil,
            lifetimes: Lifetimes = Lifetimes(),
            signingAlgorithm: JWSAlgorithm = .rs256,
            signingKey: JWSSigningKey? = nil,
            sendsIssuerParameter: Bool = true,
            rotatesRefreshTokens: Bool = true,
            issuerPath: String = "",
            port: Int = 0
        ) {
            self.clients = clients
            self.users = users
            self.autoApprovedUser = autoApprovedUser
            self.lifetimes = lifetimes
            self.signingAlgorithm = signingAlgorithm
            self.signingKey = signingKey
            self.sendsIssuerParameter = sendsIssuerParameter
            self.rotatesRefreshTokens = rotatesRefreshTokens
            self.issuerPath = issuerPath
            self.port = port
        }

        /// Checks the configuration.
        func validate() throws(TestProviderError) {
            func fail(_ message: String) -> TestProviderError { TestProviderError(.invalidConfiguration, message) }
            var ids = Set<String>()
            for client in clients {
                guard !client.id.isEmpty else { throw fail("A client has an empty id.") }
                guard ids.insert(client.id).inserted else { throw fail("The client id \(client.id) is registered twice.") }
                if let secret = client.secret, secret.isEmpty { throw fail("The client \(client.id) has an empty secret; use nil for a public client.") }
                for uri in client.redirectURIs + client.postLogoutRedirectURIs {
                    guard uri.scheme != nil, uri.fragment == nil else {
                        throw fail("The client \(client.id) registers a redirect URI that is not absolute or has a fragment.")
                    }
                }
                if let uri = client.backChannelLogoutURI, uri.scheme?.lowercased() != "http" || uri.host == nil || uri.fragment != nil {
                    throw fail("The client \(client.id) registers a backchannel_logout_uri that is not an absolute http URI without a fragment.")
                }
            }
            var names = Set<String>()
            var subjects = Set<String>()
            for user in users {
                guard !user.username.isEmpty, !user.subject.isEmpty else { throw fail("A user has an empty username or subject.") }
                guard names.insert(user.username).inserted else { throw fail("The username \(user.username) is used twice.") }
                guard subjects.insert(user.subject).inserted else { throw fail("The subject \(user.subject) is used twice.") }
            }
            if let autoApprovedUser, !names.contains(autoApprovedUser) {
                throw fail("The auto-approved user \(autoApprovedUser) is not among the users.")
            }
            let algorithm = signingKey?.algorithm ?? signingAlgorithm
            guard JWSAlgorithm.asymmetric.contains(algorithm), signingKey?.publicKey != nil || signingKey == nil else {
                throw fail("ID tokens are signed with an asymmetric algorithm (\(algorithm) is not one).")
            }
            guard issuerPath.isEmpty || (issuerPath.hasPrefix("/") && !issuerPath.hasSuffix("/") && !issuerPath.contains("?") && !issuerPath.contains("#")) else {
                throw fail("The issuer path starts with / and has no trailing /, query or fragment.")
            }
            guard (0...65535).contains(port) else { throw fail("The port \(port) is out of range.") }
            try clientMetadataDocuments?.validate()
            _ = try tls?.serverContext()
        }
    }
}

/// An error of the test provider's own API (not an OAuth error, which the provider answers
/// to its clients over HTTP).
public struct TestProviderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, stable across versions.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// A code by its name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// The configuration cannot be used (the message says why).
        public static let invalidConfiguration = Code(rawValue: "invalid_configuration")
        /// No pending device authorization has this user code.
        public static let unknownUserCode = Code(rawValue: "unknown_user_code")
        /// No user has this username.
        public static let unknownUser = Code(rawValue: "unknown_user")
        /// A signing key could not be generated.
        public static let keyGeneration = Code(rawValue: "key_generation")
        /// The browser stand-in got a page (2xx) where it expected a redirect.
        public static let noRedirect = Code(rawValue: "no_redirect")
        /// The provider answered the browser stand-in with an error page (4xx, 5xx): the
        /// error's ``TestProviderError/statusCode`` and ``TestProviderError/body`` say what
        /// was refused (an unregistered redirect URI, an unknown client…).
        public static let errorPage = Code(rawValue: "error_page")
        /// The browser stand-in could not talk to the server (connection refused, closed,
        /// timed out), or the URL is not a plain `http` URL.
        public static let browser = Code(rawValue: "browser")
    }

    /// What went wrong.
    public let code: Code
    /// A sentence for people.
    public let message: String
    /// The HTTP status, when a server answered.
    public let statusCode: Int?
    /// The start of the answer's body, when a server answered without a redirect (the
    /// provider's error pages say what was refused).
    public let body: String?

    init(_ code: Code, _ message: String, statusCode: Int? = nil, body: String? = nil) {
        self.code = code
        self.message = message
        self.statusCode = statusCode
        self.body = body
    }

    /// Code and message.
    public var description: String { "TestProviderError(\(code)): \(message)" }
}
