import Foundation
import OAuth2JOSE

extension TestProvider {
    /// The fixed identities of ``Configuration/demo``: what a demo or a quick test signs in
    /// with. They are published here, so none of them is a secret.
    public enum Demo {
        /// A public client (a command-line or desktop app): authorization code with PKCE,
        /// refresh tokens, device flow.
        public static let publicClientID = "oauth2-demo"
        /// A confidential client (a web app or a service) that may use every grant.
        public static let confidentialClientID = "oauth2-demo-confidential"
        /// The confidential client's secret.
        public static let confidentialClientSecret = "oauth2-demo-secret"
        /// The demo user's username, signed in automatically.
        public static let username = "demo"
        /// The demo user's password (password grant).
        public static let password = "demo-password"
        /// The demo user's `sub`.
        public static let subject = "demo-user-0001"
        /// The redirect URI both clients register: loopback without a port, so any port
        /// matches (RFC 8252 §7.3); the path must be `/callback`.
        public static let redirectURI = URL(string: "http://127.0.0.1/callback")!
        /// The same on IPv6 loopback.
        public static let redirectURIv6 = URL(string: "http://[::1]/callback")!
        /// The post-logout redirect URI both clients register (any port).
        public static let postLogoutRedirectURI = URL(string: "http://127.0.0.1/logged-out")!
        /// The scopes the demo clients may ask for.
        public static let scopes: Set<String> = ["openid", "profile", "email", "offline_access", "api"]
    }
}

extension TestProvider.Configuration {
    /// A ready-made provider for demos and quick tests: the clients and user of
    /// ``TestProvider/Demo``, the demo user signed in automatically, RS256, rotating refresh
    /// tokens.
    ///
    /// ```swift
    /// let provider = try await TestProvider.start(configuration: .demo)
    /// let client = try await OAuth2Client(
    ///     server: .issuer(provider.issuer),
    ///     configuration: ClientConfiguration(
    ///         clientID: TestProvider.Demo.publicClientID,
    ///         redirectURI: URL(string: "http://127.0.0.1:53682/callback")!,
    ///         scopes: ["openid", "profile", "offline_access"]))
    /// ```
    public static var demo: TestProvider.Configuration {
        let demo = TestProvider.Demo.self
        return TestProvider.Configuration(
            clients: [
                TestProvider.Client(
                    id: demo.publicClientID,
                    redirectURIs: [demo.redirectURI, demo.redirectURIv6],
                    postLogoutRedirectURIs: [demo.postLogoutRedirectURI],
                    grantTypes: [.authorizationCode, .refreshToken, .deviceCode],
                    allowedScopes: demo.scopes),
                TestProvider.Client(
                    id: demo.confidentialClientID,
                    secret: demo.confidentialClientSecret,
                    redirectURIs: [demo.redirectURI, demo.redirectURIv6],
                    postLogoutRedirectURIs: [demo.postLogoutRedirectURI],
                    grantTypes: TestProvider.GrantType.all,
                    allowedScopes: demo.scopes),
            ],
            users: [
                TestProvider.User(
                    username: demo.username,
                    password: demo.password,
                    subject: demo.subject,
                    claims: [
                        "name": "Demo User", "given_name": "Demo", "family_name": "User",
                        "email": "demo@example.com", "email_verified": true, "locale": "en",
                    ])
            ],
            autoApprovedUser: demo.username)
    }
}
