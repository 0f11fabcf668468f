import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// An Auth0 tenant as it answers: an issuer with a trailing slash, and client credentials
/// that need an `audience` (a tenant without a default audience answers `access_denied`).
@Suite struct Auth0PresetTests {
    static let clientID = "yJ6nd8yT7EHoZQxUMcqVwoxFqR8t3G1i"
    static let secret = "auth0-client-secret"
    static let audience = "https://api.example.com/reports"

    static let auth0: ProviderStub.Respond = { request, base in
        let issuer = base.absoluteString + "/"
        switch (request.head.method, request.path) {
        case (.get, "/.well-known/openid-configuration"):
            let document: [String: Any] = [
                "issuer": issuer,
                "authorization_endpoint": issuer + "authorize",
                "token_endpoint": issuer + "oauth/token",
                "device_authorization_endpoint": issuer + "oauth/device/code",
                "userinfo_endpoint": issuer + "userinfo",
                "mfa_challenge_endpoint": issuer + "mfa/challenge",
                "jwks_uri": issuer + ".well-known/jwks.json",
                "registration_endpoint": issuer + "oidc/register",
                "revocation_endpoint": issuer + "oauth/revoke",
                "end_session_endpoint": issuer + "oidc/logout",
                "scopes_supported": ["openid", "profile", "offline_access", "name", "email"],
                "response_types_supported": ["code", "token", "id_token", "code token", "code id_token"],
                "code_challenge_methods_supported": ["S256", "plain"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt"],
                "request_uri_parameter_supported": false,
            ]
            return .object(document)
        case (.post, "/oauth/token"):
            guard request.authorization == basic(clientID, secret) else {
                return .object(401, ["error": "access_denied", "error_description": "Unauthorized"])
            }
            let form = request.form
            guard form["grant_type"] == "client_credentials" else {
                return .object(403, ["error": "unauthorized_client", "error_description": "Grant type not allowed for the client."])
            }
            guard form["audience"] == audience else {
                return .object(403, [
                    "error": "access_denied",
                    "error_description": "No audience parameter was provided, and no default audience has been configured",
                ])
            }
            return .object(["access_token": "eyJhbGciOiJSUzI1NiJ9.e30.YXV0aDA", "scope": "read:reports", "expires_in": 86400, "token_type": "Bearer"])
        default:
            return .notFound
        }
    }

    @Test func trailingSlashIssuerAndAudienceOnClientCredentials() async throws {
        try await ProviderStub.with(Self.auth0) { stub in
            let configuration = ClientConfiguration(clientID: Self.clientID, clientSecret: Self.secret, scopes: ["read:reports"])
            let preset = try ProviderPreset.auth0(domain: "example.eu.auth0.com", audience: Self.audience).rebased(onto: stub.baseURL)
            let client = try await OAuth2Client(server: .preset(preset), configuration: configuration, environment: HTTPEnvironment(metadataCache: MetadataCache()))
            #expect(client.metadata.issuer == stub.baseURL.absoluteString + "/")
            let tokens = try await client.clientCredentials()
            #expect(tokens.scopes == ["read:reports"])
            #expect(tokens.expiresAt != nil)
            #expect(stub.requests(to: "/oauth/token").first?.form["audience"] == Self.audience)

            let noAudience = try await OAuth2Client(
                server: .preset(try ProviderPreset.auth0(domain: "example.eu.auth0.com").rebased(onto: stub.baseURL)),
                configuration: configuration,
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let denied = try #require(await oauth2Error { try await noAudience.clientCredentials() })
            #expect(denied.code == .accessDenied)
            #expect(denied.statusCode == 403)
            #expect(denied.message?.contains("No audience parameter") == true)
        }
    }
}
