import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// A Keycloak realm as it answers: discovery under `/realms/{realm}`, `401
/// unauthorized_client` for a wrong client secret, token responses with
/// `refresh_expires_in`, `not-before-policy` and `session_state`, rotating refresh tokens,
/// and `invalid_grant` "Token is not active" for a dead one.
@Suite struct KeycloakPresetTests {
    static let realm = "acme"
    static let clientID = "reports-cli"
    static let secret = "kc-secret-Zx9"

    static func discovery(_ issuer: String) -> [String: Any] {
        let oidc = issuer + "/protocol/openid-connect"
        return [
            "issuer": issuer,
            "authorization_endpoint": oidc + "/auth",
            "token_endpoint": oidc + "/token",
            "introspection_endpoint": oidc + "/token/introspect",
            "userinfo_endpoint": oidc + "/userinfo",
            "end_session_endpoint": oidc + "/logout",
            "jwks_uri": oidc + "/certs",
            "revocation_endpoint": oidc + "/revoke",
            "device_authorization_endpoint": oidc + "/auth/device",
            "registration_endpoint": issuer + "/clients-registrations/openid-connect",
            "grant_types_supported": [
                "authorization_code", "implicit", "refresh_token", "password", "client_credentials",
                "urn:ietf:params:oauth:grant-type:device_code",
            ],
            "token_endpoint_auth_methods_supported": [
                "private_key_jwt", "client_secret_basic", "client_secret_post", "tls_client_auth", "client_secret_jwt",
            ],
            "code_challenge_methods_supported": ["plain", "S256"],
            "authorization_response_iss_parameter_supported": true,
        ]
    }

    static func keycloak() -> ProviderStub.Respond {
        let issued = Counter()
        return { request, base in
            let issuer = base.absoluteString + "/realms/\(realm)"
            switch (request.head.method, request.path) {
            case (.get, "/realms/\(realm)/.well-known/openid-configuration"):
                return .object(discovery(issuer))
            case (.post, "/realms/\(realm)/protocol/openid-connect/token"):
                guard request.authorization == basic(clientID, secret) else {
                    return .object(401, ["error": "unauthorized_client", "error_description": "Invalid client or Invalid client credentials"])
                }
                let form = request.form
                let valid =
                    form["grant_type"] == "password"
                    ? form["username"] == "alice" && form["password"] == "wonderland"
                    : form["grant_type"] == "refresh_token" && form["refresh_token"] == "kc-rt-\(issued.current)"
                guard valid else {
                    return .object(400, ["error": "invalid_grant", "error_description": "Token is not active"])
                }
                let number = issued.next()
                return .object([
                    "access_token": "kc-at-\(number)", "expires_in": 300, "refresh_expires_in": 1800,
                    "refresh_token": "kc-rt-\(number)", "token_type": "Bearer", "not-before-policy": 0,
                    "session_state": "4c8ad5c2-6e35-4b3d-9d43-0c6d0f0f7a11", "scope": "profile email",
                ])
            default:
                return .notFound
            }
        }
    }

    @Test func wrongSecretIsInvalidClientAndRefreshTokensRotate() async throws {
        try await ProviderStub.with(Self.keycloak()) { stub in
            // The realm's base URL is the preset's own argument: the stub's origin.
            let preset = try ProviderPreset.keycloak(baseURL: stub.baseURL, realm: Self.realm)
            let wrong = try await OAuth2Client(
                server: .preset(preset),
                configuration: ClientConfiguration(clientID: Self.clientID, clientSecret: "wrong"),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let refused = try #require(await oauth2Error { try await wrong.password(username: "alice", password: "wonderland") })
            #expect(refused.code == .invalidClient)
            #expect(refused.serverCode == "unauthorized_client")
            #expect(refused.statusCode == 401)

            let client = try await OAuth2Client(
                server: .preset(preset),
                configuration: ClientConfiguration(clientID: Self.clientID, clientSecret: Self.secret),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let first = try await client.password(username: "alice", password: "wonderland")
            #expect(first.scopes == ["profile", "email"])
            #expect(first.additionalFields["refresh_expires_in"] == .integer(1800))
            #expect(first.additionalFields["not-before-policy"] == .integer(0))
            let second = try await client.refresh(first)
            #expect(second.refreshToken == "kc-rt-2")
            let dead = try #require(await oauth2Error { try await client.refresh(first) })
            #expect(dead.code == .invalidGrant)
            #expect(dead.message == "Token is not active")
            #expect(dead.requiresReauthorization)
        }
    }
}
