import Foundation
import HTTPTypes

// The known providers. Each one's quirks are written down where it is built, with what
// the provider does that makes them necessary; Tests/OAuth2ConformanceTests/<Provider>PresetTests.swift
// runs full token requests against a local server that answers the way that provider does.

extension ProviderPreset {
    // MARK: - GitHub

    /// GitHub (OAuth apps and GitHub Apps): no discovery, so the endpoints are fixed.
    ///
    /// - `client_id` and `client_secret` go in the body (GitHub's documented way).
    /// - `Accept: application/json` on token and device requests: without it GitHub answers
    ///   form-encoded (which the library reads too).
    /// - Errors come with HTTP 200 (`bad_verification_code`, `bad_refresh_token`,
    ///   `authorization_pending`…); the library reads them as errors and maps GitHub's
    ///   codes to the RFC ones (`bad_verification_code` is `invalid_grant`).
    /// - The granted `scope` is comma-separated (``ServerQuirks/commaSeparatedScopes``).
    /// - Device flow: the device authorization endpoint is
    ///   `https://github.com/login/device/code`; tokens are polled at the token endpoint.
    public static let github = ProviderPreset(
        name: "github",
        server: .metadata(
            ServerMetadata(
                authorizationEndpoint: URL(string: "https://github.com/login/oauth/authorize")!,
                tokenEndpoint: URL(string: "https://github.com/login/oauth/access_token")!,
                deviceAuthorizationEndpoint: URL(string: "https://github.com/login/device/code")!,
                tokenEndpointAuthMethodsSupported: ["client_secret_post"]
            )),
        scopes: ["read:user"],
        authenticationMethod: .clientSecretPost,
        additionalHeaders: [
            .token: [.accept: "application/json"],
            .deviceAuthorization: [.accept: "application/json"],
        ],
        quirks: [.commaSeparatedScopes]
    )

    /// GitHub Enterprise Server at `enterpriseServer` (for example
    /// `https://github.example.com`): ``github`` with its endpoints on that host.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for a URL without scheme or host.
    public static func github(enterpriseServer: URL) throws(OAuth2Error) -> ProviderPreset {
        var preset = try github.rebased(onto: enterpriseServer)
        preset.name = "github-enterprise"
        return preset
    }

    // MARK: - Google

    /// Google: OpenID Connect discovery at `https://accounts.google.com`.
    ///
    /// - `access_type=offline` on the authorization request, without which Google issues no
    ///   refresh token. (Google issues one only at the first consent; add
    ///   `prompt=consent` to ``AuthorizationOptions/prompt`` to get a new one.)
    /// - A refresh answers without a new refresh token: the current one is kept.
    public static let google = ProviderPreset(
        name: "google",
        server: .issuer(URL(string: "https://accounts.google.com")!),
        scopes: ["openid", "email", "profile"],
        additionalParameters: [.authorization: ["access_type": "offline"]]
    )

    // MARK: - Microsoft Entra ID

    /// Microsoft Entra ID (v2.0 endpoints) for `tenant`: a tenant ID (GUID), a domain
    /// (`contoso.onmicrosoft.com`), or `common`, `organizations` or `consumers`.
    ///
    /// - The endpoints are fixed rather than discovered: for multi-tenant authorities and
    ///   domain names Entra's discovery document names an issuer other than the one asked
    ///   for (`https://login.microsoftonline.com/{tenantid}/v2.0`), which strict issuer
    ///   checking must refuse. The issuer is set only for a tenant ID.
    /// - `scope` is required on a refresh (``ServerQuirks/scopesOnRefresh``).
    /// - `authority`: another cloud (`https://login.microsoftonline.us`,
    ///   `https://login.partner.microsoftonline.cn`).
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for a tenant that is not a
    ///   tenant ID, a domain or one of the three multi-tenant names.
    public static func microsoft(
        tenant: String,
        authority: URL = URL(string: "https://login.microsoftonline.com")!
    ) throws(OAuth2Error) -> ProviderPreset {
        _ = try httpsURL(host: tenant, what: "Entra tenant")
        let base = try appending("/\(tenant)", to: authority)
        func endpoint(_ path: String) throws(OAuth2Error) -> URL { try appending(path, to: base) }
        let issuer = UUID(uuidString: tenant) != nil ? base.appendingPathComponent("v2.0") : nil
        let metadata = ServerMetadata(
            issuer: issuer,
            authorizationEndpoint: try endpoint("/oauth2/v2.0/authorize"),
            tokenEndpoint: try endpoint("/oauth2/v2.0/token"),
            userInfoEndpoint: authority.host == "login.microsoftonline.com"
                ? URL(string: "https://graph.microsoft.com/oidc/userinfo") : nil,
            deviceAuthorizationEndpoint: try endpoint("/oauth2/v2.0/devicecode"),
            jwksURI: try endpoint("/discovery/v2.0/keys"),
            endSessionEndpoint: try endpoint("/oauth2/v2.0/logout"),
            tokenEndpointAuthMethodsSupported: ["client_secret_post", "private_key_jwt", "client_secret_basic"]
        )
        return ProviderPreset(
            name: "microsoft",
            server: .metadata(metadata),
            scopes: ["openid", "profile", "offline_access"],
            quirks: [.scopesOnRefresh]
        )
    }

    // MARK: - Okta

    /// Okta at `domain` (`dev-123456.okta.com`, or a custom domain): discovery at
    /// `https://{domain}/oauth2/{authorizationServerID}`, or at `https://{domain}` for the
    /// org authorization server (`authorizationServerID: nil`).
    ///
    /// - `offline_access` is among the scopes: Okta issues refresh tokens only for it.
    /// - Refresh tokens may rotate; a reused one is `invalid_grant`.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for a domain that is not a host
    ///   name.
    public static func okta(domain: String, authorizationServerID: String? = "default") throws(OAuth2Error)
        -> ProviderPreset
    {
        var path = ""
        if let authorizationServerID {
            path = "/oauth2/" + (try pathSegment(authorizationServerID, what: "Okta authorization server ID"))
        }
        return ProviderPreset(
            name: "okta",
            server: .issuer(try httpsURL(host: domain, path: path, what: "Okta domain")),
            scopes: ["openid", "profile", "offline_access"]
        )
    }

    // MARK: - Auth0

    /// Auth0 at `domain` (`tenant.eu.auth0.com`, or a custom domain): discovery at
    /// `https://{domain}/`.
    ///
    /// - The issuer ends with a slash, and is compared character for character.
    /// - `audience` names the API the access token is for. It goes on the authorization
    ///   request and on every token request: a client-credentials request without it (and
    ///   no default audience on the tenant) is `access_denied`.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for a domain that is not a host
    ///   name.
    public static func auth0(domain: String, audience: String? = nil) throws(OAuth2Error) -> ProviderPreset {
        var parameters: [RequestKind: [String: String]] = [:]
        if let audience {
            parameters[.authorization] = ["audience": audience]
            parameters[.token] = ["audience": audience]
        }
        return ProviderPreset(
            name: "auth0",
            server: .issuer(try httpsURL(host: domain, path: "/", what: "Auth0 domain")),
            scopes: ["openid", "profile", "email", "offline_access"],
            additionalParameters: parameters
        )
    }

    // MARK: - Keycloak

    /// Keycloak: discovery at `{baseURL}/realms/{realm}`. For Keycloak before 17 (WildFly),
    /// put the `/auth` context path in `baseURL`.
    ///
    /// - A wrong client secret is answered `401 unauthorized_client`; the library reads it
    ///   as `invalid_client`.
    /// - Refresh tokens rotate, and responses carry `refresh_expires_in`
    ///   (kept in ``TokenSet/additionalFields``).
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for an unusable base URL or an
    ///   empty realm.
    public static func keycloak(baseURL: URL, realm: String) throws(OAuth2Error) -> ProviderPreset {
        ProviderPreset(
            name: "keycloak",
            server: .issuer(try appending("/realms/" + (try pathSegment(realm, what: "Keycloak realm")), to: baseURL)),
            scopes: ["openid", "profile", "email"]
        )
    }

    // MARK: - GitLab

    /// GitLab.com or a self-managed GitLab at `baseURL` (with its relative URL root, if
    /// any): discovery at `baseURL`.
    ///
    /// - Token responses carry `created_at`; the expiry counts from the request, which is
    ///   never later.
    /// - Refresh tokens rotate.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for an unusable base URL.
    public static func gitlab(baseURL: URL = URL(string: "https://gitlab.com")!) throws(OAuth2Error) -> ProviderPreset {
        ProviderPreset(
            name: "gitlab",
            server: .issuer(try appending("", to: baseURL)),
            scopes: ["openid", "profile", "email"]
        )
    }

    // MARK: - Facebook

    /// Facebook Login: no discovery, so the endpoints are fixed (unversioned: the app's
    /// default Graph API version; ``facebook(graphAPIVersion:)`` pins one).
    ///
    /// - `client_id` and `client_secret` go in the body.
    /// - Token responses say `"token_type": "bearer"` and carry no refresh token.
    /// - Errors are Graph API error objects
    ///   (`{"error": {"message": …, "type": "OAuthException", "code": 100}}`); the library
    ///   keeps the message and takes the meaning from the HTTP status.
    public static let facebook = facebookPreset(versionPath: "")

    /// ``facebook`` pinned to a Graph API version (`"v21.0"`).
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for a version that is not a path
    ///   segment.
    public static func facebook(graphAPIVersion: String) throws(OAuth2Error) -> ProviderPreset {
        facebookPreset(versionPath: "/" + (try pathSegment(graphAPIVersion, what: "Graph API version")))
    }

    private static func facebookPreset(versionPath: String) -> ProviderPreset {
        ProviderPreset(
            name: "facebook",
            server: .metadata(
                ServerMetadata(
                    authorizationEndpoint: URL(string: "https://www.facebook.com\(versionPath)/dialog/oauth")!,
                    tokenEndpoint: URL(string: "https://graph.facebook.com\(versionPath)/oauth/access_token")!,
                    tokenEndpointAuthMethodsSupported: ["client_secret_post"]
                )),
            scopes: ["public_profile", "email"],
            authenticationMethod: .clientSecretPost
        )
    }

    // MARK: - Reddit

    /// Reddit: no discovery, so the endpoints are fixed.
    ///
    /// - HTTP Basic authentication always — for installed apps, which have no secret, with
    ///   the client id and an empty password (``ServerQuirks/basicAuthenticationWithEmptySecret``).
    /// - `duration=permanent` on the authorization request, without which Reddit issues no
    ///   refresh token.
    /// - A wrong code is answered with HTTP 200 and `{"error": "invalid_grant"}`; missing or
    ///   wrong credentials with `401 {"message": "Unauthorized", "error": 401}`, which the
    ///   library reads as `invalid_client`.
    /// - Reddit asks every client for a unique, descriptive `User-Agent`
    ///   (`<platform>:<app id>:<version> (by /u/<name>)`): pass it as the client's
    ///   `userAgent`.
    /// - App-only tokens for installed apps use the extension grant
    ///   `https://oauth.reddit.com/grants/installed_client` with a `device_id`.
    public static let reddit = ProviderPreset(
        name: "reddit",
        server: .metadata(
            ServerMetadata(
                authorizationEndpoint: URL(string: "https://www.reddit.com/api/v1/authorize")!,
                tokenEndpoint: URL(string: "https://www.reddit.com/api/v1/access_token")!,
                revocationEndpoint: URL(string: "https://www.reddit.com/api/v1/revoke_token")!,
                tokenEndpointAuthMethodsSupported: ["client_secret_basic"]
            )),
        scopes: ["identity"],
        authenticationMethod: .clientSecretBasic,
        additionalParameters: [.authorization: ["duration": "permanent"]],
        quirks: [.basicAuthenticationWithEmptySecret]
    )

    // MARK: - LinkedIn

    /// LinkedIn (Sign In with LinkedIn using OpenID Connect, and the member APIs): the
    /// endpoints are fixed.
    ///
    /// - `client_id` and `client_secret` must go in the body; LinkedIn's metadata does not
    ///   say so, so without the preset the library would choose HTTP Basic.
    /// - Token responses may omit `token_type` (read as Bearer), and the granted `scope` is
    ///   comma-separated (``ServerQuirks/commaSeparatedScopes``).
    public static let linkedIn = ProviderPreset(
        name: "linkedin",
        server: .metadata(
            ServerMetadata(
                issuer: URL(string: "https://www.linkedin.com/oauth")!,
                authorizationEndpoint: URL(string: "https://www.linkedin.com/oauth/v2/authorization")!,
                tokenEndpoint: URL(string: "https://www.linkedin.com/oauth/v2/accessToken")!,
                introspectionEndpoint: URL(string: "https://www.linkedin.com/oauth/v2/introspectToken")!,
                userInfoEndpoint: URL(string: "https://api.linkedin.com/v2/userinfo")!,
                jwksURI: URL(string: "https://www.linkedin.com/oauth/openid/jwks")!,
                tokenEndpointAuthMethodsSupported: ["client_secret_post"]
            )),
        scopes: ["openid", "profile", "email"],
        authenticationMethod: .clientSecretPost,
        quirks: [.commaSeparatedScopes]
    )

    /// The names of the known providers, as ``name`` spells them and a settings file's
    /// `"provider"` names them.
    public static let knownNames = [
        "github", "google", "microsoft", "okta", "auth0", "keycloak", "gitlab", "facebook", "reddit", "linkedin",
    ]

    /// The preset a provider's name names, built from its `arguments`: the one mapping from
    /// names to presets, for settings files (`"provider"`) and the `oauth2` tool
    /// (`--provider`). The arguments are the settings file's member names:
    /// `enterprise_server` (github), `tenant` and `authority` (microsoft), `domain` and
    /// `authorization_server_id` (okta; a `nil` value: the org authorization server),
    /// `domain` and `audience` (auth0), `base_url` and `realm` (keycloak), `base_url`
    /// (gitlab), `graph_api_version` (facebook). URLs must be HTTPS (or loopback).
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for an unknown name, an argument
    ///   the provider does not take, a missing required one, or an unusable URL.
    public static func named(_ name: String, arguments: [String: String?] = [:]) throws(OAuth2Error) -> ProviderPreset {
        func takes(_ known: Set<String>) throws(OAuth2Error) {
            guard let unknown = Set(arguments.keys).subtracting(known).sorted().first else { return }
            throw .client(
                .invalidConfiguration,
                "\(SettingsFile.quoted("provider.\(unknown)")) is not an argument of the \(name) provider; it takes: \(known.isEmpty ? "no arguments" : known.sorted().joined(separator: ", ")).")
        }
        func optional(_ key: String) -> String? { arguments[key] ?? nil }
        func required(_ key: String) throws(OAuth2Error) -> String {
            guard let value = optional(key), !value.isEmpty else {
                throw .client(.invalidConfiguration, "The \(name) provider needs \(SettingsFile.quoted("provider.\(key)")).")
            }
            return value
        }
        func url(_ key: String) throws(OAuth2Error) -> URL? {
            try optional(key).map { text throws(OAuth2Error) in try SettingsReader.url(text, key: "provider.\(key)", endpoint: true) }
        }
        switch name {
        case "github":
            try takes(["enterprise_server"])
            guard let server = try url("enterprise_server") else { return .github }
            return try .github(enterpriseServer: server)
        case "google":
            try takes([])
            return .google
        case "microsoft":
            try takes(["tenant", "authority"])
            return try .microsoft(tenant: try required("tenant"), authority: try url("authority") ?? URL(string: "https://login.microsoftonline.com")!)
        case "okta":
            try takes(["domain", "authorization_server_id"])
            // Absent: the "default" custom authorization server; nil: the org server.
            let serverID: String? = arguments.keys.contains("authorization_server_id") ? optional("authorization_server_id") : "default"
            return try .okta(domain: try required("domain"), authorizationServerID: serverID)
        case "auth0":
            try takes(["domain", "audience"])
            return try .auth0(domain: try required("domain"), audience: optional("audience"))
        case "keycloak":
            try takes(["base_url", "realm"])
            guard let base = try url("base_url") else {
                throw .client(.invalidConfiguration, "The keycloak provider needs \(SettingsFile.quoted("provider.base_url")).")
            }
            return try .keycloak(baseURL: base, realm: try required("realm"))
        case "gitlab":
            try takes(["base_url"])
            guard let base = try url("base_url") else { return try .gitlab() }
            return try .gitlab(baseURL: base)
        case "facebook":
            try takes(["graph_api_version"])
            guard let version = optional("graph_api_version") else { return .facebook }
            return try .facebook(graphAPIVersion: version)
        case "reddit":
            try takes([])
            return .reddit
        case "linkedin":
            try takes([])
            return .linkedIn
        default:
            throw .client(.invalidConfiguration, "\(SettingsFile.quoted(name)) is not a known provider; known: \(knownNames.joined(separator: ", ")).")
        }
    }
}
