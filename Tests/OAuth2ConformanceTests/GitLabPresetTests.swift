import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// A self-managed GitLab under a relative URL root (`/gitlab`) as it answers: discovery at
/// the root, token responses with `created_at`, rotating refresh tokens, and revocation.
@Suite struct GitLabPresetTests {
    static let clientID = "d39f7d5f0a2ab2b3c8c9f1e0b7c1e6a0c3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8"
    static let secret = "gloas-0123456789abcdef"

    static func discovery(_ issuer: String) -> [String: Any] {
        [
            "issuer": issuer,
            "authorization_endpoint": issuer + "/oauth/authorize",
            "token_endpoint": issuer + "/oauth/token",
            "revocation_endpoint": issuer + "/oauth/revoke",
            "introspection_endpoint": issuer + "/oauth/introspect",
            "userinfo_endpoint": issuer + "/oauth/userinfo",
            "jwks_uri": issuer + "/oauth/discovery/keys",
            "scopes_supported": ["api", "read_api", "read_user", "openid", "profile", "email"],
            "response_types_supported": ["code"],
            "response_modes_supported": ["query", "fragment", "form_post"],
            "grant_types_supported": ["authorization_code", "password", "client_credentials", "device_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "claim_types_supported": ["normal"],
            "claims_supported": ["iss", "sub", "aud", "exp", "iat", "sub_legacy", "name", "nickname", "email", "email_verified"],
            "code_challenge_methods_supported": ["plain", "S256"],
        ]
    }

    static func gitlab() -> ProviderStub.Respond {
        let issued = Counter()
        return { request, base in
            let issuer = base.absoluteString + "/gitlab"
            switch (request.head.method, request.path) {
            case (.get, "/gitlab/.well-known/openid-configuration"):
                return .object(discovery(issuer))
            case (.post, "/gitlab/oauth/token"):
                guard request.authorization == basic(clientID, secret) else {
                    return .object(401, ["error": "invalid_client", "error_description": "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method."])
                }
                let form = request.form
                let valid =
                    form["grant_type"] == "authorization_code"
                    ? form["code"] == "gl-code" && form["redirect_uri"] == redirectURI.absoluteString
                    : form["refresh_token"] == "gl-rt-\(issued.current)"
                guard valid else {
                    return .object(400, ["error": "invalid_grant", "error_description": "The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client."])
                }
                let number = issued.next()
                return .object([
                    "access_token": "gl-at-\(number)", "token_type": "Bearer", "expires_in": 7200, "refresh_token": "gl-rt-\(number)",
                    "scope": "openid profile email", "created_at": 1_714_737_600, "id_token": StubIDToken.make(issuer: issuer, audience: clientID, code: form["code"]),
                ])
            case (.post, "/gitlab/oauth/revoke"):
                return .object([:])
            default:
                return .notFound
            }
        }
    }

    @Test func relativeURLRootCodeExchangeRefreshAndRevoke() async throws {
        try await ProviderStub.with(Self.gitlab()) { stub in
            let preset = try ProviderPreset.gitlab(baseURL: stub.baseURL.appendingPathComponent("gitlab"))
            let client = try await OAuth2Client(
                server: .preset(preset),
                configuration: ClientConfiguration(clientID: Self.clientID, clientSecret: Self.secret, redirectURI: redirectURI),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let request = try client.authorizationRequest()
            #expect(request.url.path == "/gitlab/oauth/authorize")
            let tokens = try await client.completeAuthorization(callbackURL: callback(for: request, code: "gl-code"), request: request)
            #expect(tokens.additionalFields["created_at"] == .integer(1_714_737_600))
            #expect(tokens.scopes == ["openid", "profile", "email"])
            let refreshed = try await client.refresh(tokens)
            #expect(refreshed.refreshToken == "gl-rt-2")
            try await client.revoke(try #require(refreshed.refreshToken), hint: .refreshToken)
            let revoke = try #require(stub.requests(to: "/gitlab/oauth/revoke").first)
            #expect(revoke.form["token"] == "gl-rt-2")
            #expect(revoke.form["token_type_hint"] == "refresh_token")
            #expect(revoke.authorization == basic(Self.clientID, Self.secret))
            // GitLab's OpenID document lacks a registration endpoint: discovery also asked the
            // RFC 8414 location, and went on without it.
            #expect(stub.requests.filter { $0.head.method == .get }.map(\.path) == [
                "/gitlab/.well-known/openid-configuration", "/.well-known/oauth-authorization-server/gitlab",
                "/gitlab/oauth/discovery/keys",
            ])
        }
    }
}
