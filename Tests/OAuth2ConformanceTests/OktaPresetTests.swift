import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// An Okta custom authorization server as it answers: discovery under
/// `/oauth2/default`, a public client (no secret), refresh tokens for `offline_access` that
/// rotate, and `invalid_grant` for a refresh token used twice.
@Suite struct OktaPresetTests {
    static let clientID = "0oa1b2c3d4e5f6g7h8i9"

    static func discovery(_ issuer: String) -> [String: Any] {
        [
            "issuer": issuer,
            "authorization_endpoint": issuer + "/v1/authorize",
            "token_endpoint": issuer + "/v1/token",
            "userinfo_endpoint": issuer + "/v1/userinfo",
            "registration_endpoint": issuer.replacingOccurrences(of: "/oauth2/default", with: "/oauth2/v1/clients"),
            "jwks_uri": issuer + "/v1/keys",
            "introspection_endpoint": issuer + "/v1/introspect",
            "revocation_endpoint": issuer + "/v1/revoke",
            "end_session_endpoint": issuer + "/v1/logout",
            "device_authorization_endpoint": issuer + "/v1/device/authorize",
            "response_types_supported": ["code", "id_token", "code id_token", "code token", "id_token token", "code id_token token"],
            "grant_types_supported": [
                "authorization_code", "implicit", "refresh_token", "password", "urn:ietf:params:oauth:grant-type:device_code",
            ],
            "scopes_supported": ["openid", "profile", "email", "address", "phone", "offline_access", "device_sso"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none"],
            "code_challenge_methods_supported": ["S256"],
            "request_parameter_supported": true,
        ]
    }

    static func okta() -> ProviderStub.Respond {
        let issued = Counter()
        return { request, base in
            let issuer = base.absoluteString + "/oauth2/default"
            switch (request.head.method, request.path) {
            case (.get, "/oauth2/default/.well-known/openid-configuration"):
                return .object(discovery(issuer))
            case (.post, "/oauth2/default/v1/token"):
                let form = request.form
                guard form["client_id"] == clientID, request.authorization == nil else {
                    return .object(401, ["error": "invalid_client", "error_description": "Client authentication failed."])
                }
                let expected = form["grant_type"] == "authorization_code" ? form["code"]?.hasPrefix("okta-code") == true : form["refresh_token"] == "okta-rt-\(issued.current)"
                guard expected else {
                    return .object(400, ["error": "invalid_grant", "error_description": "The refresh token is invalid or expired."])
                }
                let number = issued.next()
                return .object([
                    "token_type": "Bearer", "expires_in": 3600, "access_token": "okta-at-\(number)", "scope": "openid profile offline_access",
                    "refresh_token": "okta-rt-\(number)", "id_token": StubIDToken.make(issuer: issuer, audience: clientID, code: form["code"]),
                ])
            default:
                return .notFound
            }
        }
    }

    @Test func publicClientRefreshTokensRotateAndAReusedOneIsDead() async throws {
        try await ProviderStub.with(Self.okta()) { stub in
            let preset = try ProviderPreset.okta(domain: "dev-133337.okta.com").rebased(onto: stub.baseURL)
            #expect(preset.server == .issuer(stub.baseURL.appendingPathComponent("oauth2/default")))
            let client = try await OAuth2Client(
                server: .preset(preset),
                configuration: ClientConfiguration(clientID: Self.clientID, redirectURI: redirectURI),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            #expect(client.metadata.revocationEndpoint == URL(string: stub.baseURL.absoluteString + "/oauth2/default/v1/revoke"))
            let request = try client.authorizationRequest()
            #expect(query(request.url)["scope"] == "openid profile offline_access")

            let first = try await client.completeAuthorization(callbackURL: callback(for: request, code: "okta-code"), request: request)
            #expect(first.refreshToken == "okta-rt-1")
            let second = try await client.refresh(first)
            #expect(second.refreshToken == "okta-rt-2")
            #expect(second.accessToken == "okta-at-2")

            let reused = try #require(await oauth2Error { try await client.refresh(first) })
            #expect(reused.code == .invalidGrant)
            #expect(reused.message == "The refresh token is invalid or expired.")
            #expect(reused.requiresReauthorization)
            // One discovery document held every endpoint: no RFC 8414 request; then the JWK set.
            #expect(stub.requests.filter { $0.head.method == .get }.map(\.path) == ["/oauth2/default/.well-known/openid-configuration", "/oauth2/default/v1/keys"])
        }
    }
}
