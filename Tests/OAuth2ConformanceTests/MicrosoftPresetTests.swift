import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// Microsoft Entra ID's v2.0 token endpoint as it answers: `scope` required on a refresh
/// (AADSTS900144 without it), rotating refresh tokens, `ext_expires_in`, and errors that
/// carry `error_codes`, `trace_id` and `correlation_id` besides the RFC members.
@Suite struct MicrosoftPresetTests {
    static let tenant = "9188040d-6c67-4c5b-b112-36a304b66dad"
    static let clientID = "6731de76-14a6-49ae-97bc-6eba6914391e"
    static let secret = "JqQX2PNo9bpM0uEihUPzyrh"

    static func aadError(_ code: String, _ number: Int, _ text: String) -> LocalHTTPServer.Reply {
        .object(400, [
            "error": code,
            "error_description": "AADSTS\(number): \(text) Trace ID: 0000aaaa-11bb-cccc-dd22-eeeeee333333 Timestamp: 2024-05-03 12:00:00Z",
            "error_codes": [number], "timestamp": "2024-05-03 12:00:00Z",
            "trace_id": "0000aaaa-11bb-cccc-dd22-eeeeee333333", "correlation_id": "aaaa0000-bb11-2222-33cc-444444dddddd",
            "error_uri": "https://login.microsoftonline.com/error?code=\(number)",
        ])
    }

    static func tokens(_ access: String, refresh: String, issuer: String, code: String? = nil) -> LocalHTTPServer.Reply {
        .object([
            "token_type": "Bearer", "scope": "openid profile https://graph.microsoft.com/User.Read", "expires_in": 4399,
            "ext_expires_in": 4399, "access_token": access, "refresh_token": refresh, "id_token": StubIDToken.make(issuer: issuer, audience: clientID, code: code),
        ])
    }

    static let entra: ProviderStub.Respond = { request, base in
        let issuer = base.absoluteString + "/\(tenant)/v2.0"
        guard request.head.method == .post, request.path == "/\(tenant)/oauth2/v2.0/token" else { return .notFound }
        guard request.authorization == basic(clientID, secret) else {
            return aadError("invalid_client", 7_000_215, "Invalid client secret provided.")
        }
        let form = request.form
        switch form["grant_type"] {
        case "authorization_code":
            return form["code"] == "0.AAAA-code" ? tokens("eyJ0eXAi.first", refresh: "0.AAAA-refresh-1", issuer: issuer, code: "0.AAAA-code")
                : aadError("invalid_grant", 70008, "The provided authorization code or refresh token has expired due to inactivity.")
        case "refresh_token":
            guard let scope = form["scope"], !scope.isEmpty else {
                return aadError("invalid_request", 900_144, "The request body must contain the following parameter: 'scope'.")
            }
            guard form["refresh_token"] == "0.AAAA-refresh-1" else {
                return aadError("invalid_grant", 700_082, "The refresh token has expired due to inactivity.")
            }
            return tokens("eyJ0eXAi.second", refresh: "0.AAAA-refresh-2", issuer: issuer)
        default:
            return aadError("unsupported_grant_type", 70003, "The app requested an unsupported grant type.")
        }
    }

    @Test func refreshSendsScopeBecauseEntraRequiresIt() async throws {
        try await ProviderStub.with(Self.entra) { stub in
            // `authority` is how a national cloud is reached; here it reaches the stub.
            let preset = try ProviderPreset.microsoft(tenant: Self.tenant, authority: stub.baseURL)
            let configuration = ClientConfiguration(clientID: Self.clientID, clientSecret: Self.secret, redirectURI: redirectURI)
            let client = try await OAuth2Client(server: .preset(preset), configuration: configuration)
            let request = try client.authorizationRequest()
            #expect(request.url.path == "/\(Self.tenant)/oauth2/v2.0/authorize")
            #expect(request.issuer == stub.baseURL.absoluteString + "/\(Self.tenant)/v2.0")  // a tenant ID names the issuer

            let tokens = try await client.completeAuthorization(callbackURL: callback(for: request, code: "0.AAAA-code"), request: request)
            #expect(tokens.additionalFields["ext_expires_in"] == .integer(4399))
            let refreshed = try await client.refresh(tokens)
            #expect(refreshed.accessToken == "eyJ0eXAi.second")
            #expect(refreshed.refreshToken == "0.AAAA-refresh-2")
            #expect(stub.requests.last?.form["scope"] == "openid profile offline_access")

            // The same client without the quirk gets Entra's answer to a refresh without scope.
            var strict = preset
            strict.quirks = []
            let plain = try await OAuth2Client(server: .preset(strict), configuration: configuration)
            let missing = try #require(await oauth2Error { try await plain.refresh(tokens) })
            #expect(missing.code == .invalidRequest)
            #expect(missing.message?.hasPrefix("AADSTS900144") == true)

            let expired = try #require(await oauth2Error { try await client.refresh(TokenSet(accessToken: "a", refreshToken: "0.AAAA-old")) })
            #expect(expired.code == .invalidGrant)
            #expect(expired.requiresReauthorization)
            #expect(expired.uri == "https://login.microsoftonline.com/error?code=700082")
        }
    }
}
