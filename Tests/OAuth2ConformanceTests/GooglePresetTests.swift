import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// Google as it answers: an OpenID discovery document (no RFC 8414 one), refresh tokens
/// only with `access_type=offline`, refresh responses without a new refresh token, and
/// `{"error": "invalid_grant", "error_description": "Bad Request"}` for a dead grant.
@Suite struct GooglePresetTests {
    static let clientID = "407408718192-abc.apps.googleusercontent.com"
    static let secret = "GOCSPX-secret"

    static func discovery(_ base: URL) -> [String: Any] {
        let origin = base.absoluteString
        return [
            "issuer": origin,
            "authorization_endpoint": origin + "/o/oauth2/v2/auth",
            "device_authorization_endpoint": origin + "/device/code",
            "token_endpoint": origin + "/token",
            "userinfo_endpoint": origin + "/v1/userinfo",
            "revocation_endpoint": origin + "/revoke",
            "jwks_uri": origin + "/oauth2/v3/certs",
            "response_types_supported": ["code", "token", "id_token", "code token", "code id_token", "token id_token", "none"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "email", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            "claims_supported": ["aud", "email", "email_verified", "exp", "family_name", "given_name", "iat", "iss", "name", "picture", "sub"],
            "code_challenge_methods_supported": ["plain", "S256"],
            "grant_types_supported": [
                "authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code",
                "urn:ietf:params:oauth:grant-type:jwt-bearer",
            ],
        ]
    }

    static let google: ProviderStub.Respond = { request, base in
        switch (request.head.method, request.path) {
        case (.get, "/.well-known/openid-configuration"):
            return .object(discovery(base))
        case (.post, "/token"):
            let invalid = LocalHTTPServer.Reply.object(400, ["error": "invalid_grant", "error_description": "Bad Request"])
            guard request.authorization == basic(clientID, secret) else {
                return .object(401, ["error": "invalid_client", "error_description": "Unauthorized"])
            }
            let form = request.form
            switch form["grant_type"] {
            case "authorization_code":
                guard form["code"] == "4/0AeaYSHB-code", form["code_verifier"] != nil else { return invalid }
                return .object([
                    "access_token": "ya29.a0AfB_first", "expires_in": 3599, "refresh_token": "1//0gdEF-refresh",
                    "scope": "openid https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile",
                    "token_type": "Bearer", "id_token": StubIDToken.make(issuer: base.absoluteString, audience: clientID, code: "4/0AeaYSHB-code"),
                ])
            case "refresh_token":
                guard form["refresh_token"] == "1//0gdEF-refresh" else { return invalid }
                return .object([
                    "access_token": "ya29.a0AfB_second", "expires_in": 3599,
                    "scope": "openid https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile",
                    "token_type": "Bearer", "id_token": StubIDToken.make(issuer: base.absoluteString, audience: clientID),
                ])
            default:
                return .object(400, ["error": "unsupported_grant_type", "error_description": "Invalid grant_type: "])
            }
        default:
            return .notFound
        }
    }

    @Test func offlineAccessCodeExchangeAndARefreshThatKeepsTheRefreshToken() async throws {
        try await ProviderStub.with(Self.google) { stub in
            let client = try await OAuth2Client(
                server: .preset(try ProviderPreset.google.rebased(onto: stub.baseURL)),
                configuration: ClientConfiguration(clientID: Self.clientID, clientSecret: Self.secret, redirectURI: redirectURI),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            let request = try client.authorizationRequest()
            let parameters = query(request.url)
            #expect(request.url.path == "/o/oauth2/v2/auth")
            #expect(parameters["access_type"] == "offline")
            #expect(parameters["scope"] == "openid email profile")
            #expect(parameters["nonce"] != nil)

            let tokens = try await client.completeAuthorization(callbackURL: callback(for: request, code: "4/0AeaYSHB-code"), request: request)
            #expect(tokens.refreshToken == "1//0gdEF-refresh")
            #expect(tokens.idToken != nil)
            #expect(tokens.scopes?.contains("https://www.googleapis.com/auth/userinfo.email") == true)

            let refreshed = try await client.refresh(tokens)
            #expect(refreshed.accessToken == "ya29.a0AfB_second")
            #expect(refreshed.refreshToken == "1//0gdEF-refresh")
            #expect(refreshed.idToken != tokens.idToken, "the refresh answer's ID token (verified) replaces the first")

            let revoked = try #require(await oauth2Error { try await client.refresh(TokenSet(accessToken: "a", refreshToken: "1//revoked")) })
            #expect(revoked.code == .invalidGrant)
            #expect(revoked.statusCode == 400)
            #expect(revoked.requiresReauthorization)
            // Discovery asked for the OpenID document, then for the RFC 8414 one Google lacks.
            // The JWK set was fetched once, for the first ID token, and cached.
            #expect(stub.requests.filter { $0.head.method == .get }.map(\.path) == [
                "/.well-known/openid-configuration", "/.well-known/oauth-authorization-server", "/oauth2/v3/certs",
            ])
        }
    }
}
