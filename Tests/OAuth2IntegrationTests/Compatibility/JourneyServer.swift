import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// A row of the compatibility table: a real server started by `scripts/test-servers/up.sh`,
/// its clients, and how its test user signs in on its own pages. Everything the suite knows
/// about a server that its metadata does not say is here, in ``note(_:)``, with the source.
enum JourneyServer: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case glewlwyd
    case dot
    case authgent
    case lemonldap
    case oidcprovider

    var testDescription: String { rawValue }

    private static func env(_ name: String, _ fallback: String) -> String { Server.env(name, fallback) }

    /// The server of the older suites, for the two that have one.
    private var server: Server? {
        switch self {
        case .glewlwyd: .glewlwyd
        case .dot: .dot
        default: nil
        }
    }

    var issuer: URL {
        switch self {
        case .glewlwyd, .dot: server!.issuer
        case .authgent: Authgent.issuer
        case .lemonldap: URL(string: Self.env("OAUTH2_TEST_LEMONLDAP_ISSUER", "http://127.0.0.1:8300"))!
        case .oidcprovider: URL(string: Self.env("OAUTH2_TEST_OIDCPROVIDER_ISSUER", "http://127.0.0.1:8500/openid"))!
        }
    }

    /// What the metadata cannot tell, or tells wrong, with the source. `nil`: the metadata
    /// decides (``Feature/advertised(in:)``).
    func note(_ feature: Feature) -> Availability? {
        switch (self, feature) {
        case (.glewlwyd, .refresh), (.glewlwyd, .clientCredentials), (.glewlwyd, .password):
            // Glewlwyd lists these among response_types_supported, not grant_types_supported.
            return .offered("listed in its response_types_supported (Glewlwyd's way), not grant_types_supported")
        case (.dot, .refresh), (.dot, .clientCredentials), (.dot, .password):
            return .offered("in grant_types_supported of its RFC 8414 document")
        case (.dot, .device):
            return .offered("DOT's documentation (device-authorization/ under its issuer); its metadata omits the endpoint, the client is given it")
        case (.oidcprovider, .refresh), (.oidcprovider, .clientCredentials), (.oidcprovider, .password):
            // Its discovery document has no grant_types_supported at all.
            return .offered("django-oidc-provider's documentation (settings: OIDC_GRANT_TYPE_PASSWORD_ENABLE; client types); no grant_types_supported in its metadata")
        case (.glewlwyd, .ciba):
            // Per OIDC instance (oauth-ciba-allowed, docs/OIDC.md); the suite's main instance leaves it off.
            return .offered("backchannel_authentication_endpoint in the metadata of its instance with CIBA enabled (oidc-ciba)")
        case (.glewlwyd, .richAuthorization):
            // RAR is a setting of each OIDC instance (oauth-rar-allowed, rar-types); the
            // suite's instance oidc-rar has it on and lists authorization_details_types_supported.
            return .offered("authorization_details_types_supported in the metadata of its oidc-rar instance (RAR is per instance: oauth-rar-allowed)")
        case (.glewlwyd, .mtlsClientAuthentication):
            // The instance the suite signs in to has no client certificate source; oidc-mtls,
            // behind the nginx front that asks for certificates (tls.sh), has.
            return .offered("its oidc-mtls instance (client-cert-source) lists tls_client_auth and self_signed_tls_client_auth, behind nginx asking for client certificates")
        case (.glewlwyd, .certificateBoundTokens):
            return .offered("its oidc-mtls instance binds the tokens of certificate-authenticated clients (cnf.x5t#S256); its metadata omits tls_client_certificate_bound_access_tokens")
        case (.authgent, .userInfo):
            return .serverBug("its openid-configuration lists userinfo_endpoint, but the route does not exist (404)")
        default:
            return nil
        }
    }

    /// The feature's availability: the note when there is one, else the metadata.
    func availability(of feature: Feature, metadata: ServerMetadata) -> Availability {
        if let note = note(feature) { return note }
        if let advertised = feature.advertised(in: metadata) { return advertised }
        let grant = feature == .refresh ? "refresh_token" : feature == .password ? "password" : "client_credentials"
        return (metadata.grantTypesSupported ?? []).contains(grant)
            ? .offered("\(grant) in grant_types_supported") : .notOffered("no \(grant) in grant_types_supported")
    }

    // MARK: - Clients

    /// The scopes of a sign-in. authgent is no OpenID provider (no ID token, whatever the scope).
    var signInScopes: [String] {
        switch self {
        case .glewlwyd, .dot: ["openid", "read"]
        case .authgent: ["read"]
        case .lemonldap, .oidcprovider: ["openid", "profile"]
        }
    }

    /// Whether a sign-in returns an ID token.
    var issuesIDTokens: Bool { self != .authgent }

    /// The public client (PKCE) for the interactive sign-in.
    func publicClient() -> ClientConfiguration {
        switch self {
        case .glewlwyd, .dot: return server!.publicClient(scopes: signInScopes)
        case .authgent:
            // The client registered without redirect URIs: authgent then takes any (a loopback port).
            return ClientConfiguration(
                clientID: Self.env("OAUTH2_TEST_AUTHGENT_LOOPBACK_CLIENT_ID", "unset"), redirectURI: Server.redirectURI, scopes: signInScopes)
        case .lemonldap, .oidcprovider:
            return ClientConfiguration(clientID: "code-public", redirectURI: Server.redirectURI, scopes: signInScopes)
        }
    }

    /// The confidential client of the code flow (also allowed introspection and revocation).
    func confidentialClient() -> ClientConfiguration {
        switch self {
        case .glewlwyd, .dot: return server!.confidential(scopes: signInScopes)
        case .authgent:
            return ClientConfiguration(
                clientID: Self.env("OAUTH2_TEST_AUTHGENT_CODE_CLIENT_ID", "unset"),
                clientSecret: Self.env("OAUTH2_TEST_AUTHGENT_CODE_CLIENT_SECRET", "unset"), redirectURI: Server.redirectURI,
                scopes: signInScopes)
        case .lemonldap, .oidcprovider:
            return ClientConfiguration(
                clientID: "code-conf", clientSecret: "code-conf-secret", redirectURI: Server.redirectURI, scopes: signInScopes)
        }
    }

    /// The client allowed the client-credentials grant.
    func clientCredentialsClient() throws -> ClientConfiguration {
        switch self {
        case .glewlwyd, .dot: return server!.clientCredentials()
        case .authgent: return try Authgent.configuration()
        case .oidcprovider: return ClientConfiguration(clientID: "cc", clientSecret: "cc-secret", scopes: ["read"])
        case .lemonldap: return ClientConfiguration(clientID: "code-conf", clientSecret: "code-conf-secret", scopes: ["openid"])
        }
    }

    /// The client allowed the password grant.
    func passwordClient() throws -> ClientConfiguration {
        switch self {
        case .glewlwyd, .dot: return server!.passwordClient()
        case .oidcprovider: return ClientConfiguration(clientID: "pw", clientSecret: "pw-secret", scopes: ["openid"])
        case .lemonldap, .authgent: return confidentialClient()
        }
    }

    /// The client of the device flow.
    func deviceClient() throws -> ClientConfiguration {
        switch self {
        case .glewlwyd, .dot: return server!.deviceConfiguration()
        case .authgent:
            return ClientConfiguration(clientID: Self.env("OAUTH2_TEST_AUTHGENT_PUBLIC_CLIENT_ID", "unset"), scopes: ["read"])
        default: throw JourneyError.noDriver(self, "the device flow")
        }
    }

    /// A client for the device flow (DOT's endpoint added to its metadata by hand).
    func deviceOAuth2Client(_ configuration: ClientConfiguration) async throws -> OAuth2Client {
        guard self == .dot else { return try await client(configuration) }
        IntegrationLog.record(rawValue, variant: "compatibility")
        return try await Server.dot.deviceClient(configuration)
    }

    /// The client that authenticates with a JWT (RFC 7523 §2.2).
    func jwtClient() throws -> ClientConfiguration {
        switch self {
        case .glewlwyd: return Server.jwtSecretClient(scopes: ["read"])
        default: throw JourneyError.noDriver(self, "JWT client authentication")
        }
    }

    /// The DPoP algorithm the server takes (authgent: ES256 only).
    var dpopAlgorithm: JWSAlgorithm { .es256 }

    /// What a dynamic registration asks for (authgent requires a name).
    var registrationMetadata: RegistrationMetadata {
        var metadata = RegistrationMetadata(redirectURIs: [Server.redirectURI], tokenEndpointAuthMethod: "client_secret_basic")
        metadata.clientName = "swift-oauth2 compatibility suite"
        return metadata
    }

    /// A client allowed to introspect and revoke, and a token it holds (with a refresh
    /// token where the server gives one).
    func introspectionTokens(signIn: (ClientConfiguration) async throws -> (OAuth2Client, TokenSet)) async throws -> (OAuth2Client, TokenSet) {
        switch self {
        case .glewlwyd, .dot:
            let client = try await self.client(server!.passwordClient())
            return (client, try await client.password(username: Server.username, password: Server.password))
        default:
            return try await signIn(confidentialClient())
        }
    }

    /// Discovers the server with `configuration` and records the run on the `integration:` line.
    func client(_ configuration: ClientConfiguration) async throws -> OAuth2Client {
        let client = try await OAuth2Client(server: .issuer(issuer), configuration: configuration, environment: HTTPEnvironment(metadataCache: MetadataCache()))
        IntegrationLog.record(rawValue, variant: "compatibility")
        return client
    }

    // MARK: - The user's side

    /// The loopback port the server accepts for `clientID`: 0 when it follows RFC 8252
    /// §7.3 (any port on a loopback redirect URI), else the registered one.
    func loopbackPort(for clientID: String) -> Int {
        if self == .dot || (self == .authgent && clientID == publicClient().clientID) { return 0 }
        return Server.redirectURI.port ?? 9999
    }

    /// The path the server sends the browser to after a logout: the redirect URI's (Glewlwyd,
    /// DOT) or `/logged-out` (registered as the post-logout URI on LemonLDAP::NG and
    /// django-oidc-provider).
    var postLogoutPath: String {
        switch self {
        case .lemonldap, .oidcprovider: URL(string: Self.env("OAUTH2_TEST_POST_LOGOUT_URI", "http://127.0.0.1:9999/logged-out"))!.path
        default: Server.redirectURI.path
        }
    }

    /// Signs the test user in on the server's pages for the authorization `url`, consents,
    /// and returns where the server sent the browser.
    func approve(_ url: URL, configuration: ClientConfiguration, browser: Browser) async throws -> URL {
        switch self {
        case .glewlwyd, .dot:
            return try await server!.authorize(url: url, scopes: configuration.scopes, clientID: configuration.clientID, browser: browser)
        case .authgent:
            // AUTHGENT_CONSENT_MODE=auto_approve: no page, the code at once.
            return try await browser.redirect(from: url)
        case .lemonldap:
            // The portal's login form posts to the authorization URL itself, with a one-time
            // `token`; then a consent form (public client), again to the same URL, `confirm` only.
            let (_, loginPage) = try await browser.get(url)
            let token = try #require(Browser.hiddenInputs(String(decoding: loginPage, as: UTF8.self)).first { $0.0 == "token" }?.1, "no login form")
            let (response, body) = try await browser.form(url, [("user", Server.username), ("password", Server.password), ("token", token)])
            if let target = Browser.location(of: response, relativeTo: url) { return target }
            let confirm = try #require(Browser.hiddenInputs(String(decoding: body, as: UTF8.self)).first { $0.0 == "confirm" }?.1, "no consent form")
            return try await browser.redirect(fromForm: url, [("confirm", confirm)])
        case .oidcprovider:
            // Django's login form (CSRF token in a cookie and a hidden input), back to the
            // authorization URL, then a consent form for the public client.
            let login = try #require(Browser.location(of: try await browser.get(url).0, relativeTo: url), "no redirect to the login page")
            let (_, loginPage) = try await browser.get(login)
            let hidden = Browser.hiddenInputs(String(decoding: loginPage, as: UTF8.self))
            let back = try await browser.redirect(
                fromForm: login, hidden.filter { $0.0 == "csrfmiddlewaretoken" || $0.0 == "next" } + [("username", Server.username), ("password", Server.password)])
            let (response, body) = try await browser.get(back)
            if let target = Browser.location(of: response, relativeTo: back) { return target }
            let consent = issuer.appendingPathComponent("authorize")
            return try await browser.redirect(fromForm: consent, Browser.hiddenInputs(String(decoding: body, as: UTF8.self)) + [("allow", "Authorize")])
        }
    }

    /// Approves (signs in and confirms) `userCode` on the server's device page.
    func approveDevice(userCode: String, configuration: ClientConfiguration) async throws {
        switch self {
        case .glewlwyd, .dot:
            try await server!.decideDevice(userCode: userCode, clientID: configuration.clientID, scopes: configuration.scopes)
        case .authgent:
            // Its approval API (no person, no authentication); it must come before the first poll.
            try await Browser().json(
                .post, issuer.appendingPathComponent("device/complete"), #"{"user_code":"\#(userCode)","subject":"alice","action":"approve"}"#)
        case .lemonldap, .oidcprovider:
            throw JourneyError.noDriver(self, "device approval")
        }
    }

    /// Whether the logout journey runs in headless Chromium: Glewlwyd ends its session with
    /// JavaScript on its login page.
    var logsOutInChromium: Bool { self == .glewlwyd }

    /// Follows an end-session `url` in the signed-in `browser`, confirming where the server
    /// asks, and returns the post-logout redirect.
    func confirmLogout(_ url: URL, browser: Browser) async throws -> URL {
        switch self {
        case .dot, .oidcprovider:
            return try await browser.redirect(from: url)
        case .lemonldap:
            // A confirmation form (with the session cookie), `confirm` only, to the same URL.
            let (_, page) = try await browser.get(url)
            let confirm = try #require(Browser.hiddenInputs(String(decoding: page, as: UTF8.self)).first { $0.0 == "confirm" }?.1, "no logout form")
            return try await browser.redirect(fromForm: url, [("confirm", confirm)])
        case .glewlwyd, .authgent:
            // Glewlwyd's logout runs in Chromium (``logsOutInChromium``); authgent has none.
            throw JourneyError.noDriver(self, "logout")
        }
    }
}

enum JourneyError: Error, CustomStringConvertible {
    case noDriver(JourneyServer, String)

    var description: String {
        switch self {
        case .noDriver(let server, let step): "the suite cannot yet drive \(step) on \(server.rawValue)"
        }
    }
}
