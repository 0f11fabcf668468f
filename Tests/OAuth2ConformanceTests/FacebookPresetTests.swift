import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// Facebook Login's Graph API token endpoint as it answers: `client_id` and
/// `client_secret` as parameters, `"token_type": "bearer"`, no refresh token, and Graph API
/// error objects (`{"error": {"message": …, "type": "OAuthException", "code": 100}}`).
@Suite struct FacebookPresetTests {
    static let appID = "1234567890123456"
    static let appSecret = "fb-app-secret-abc"

    static func graphError(_ message: String, code: Int, subcode: Int? = nil) -> LocalHTTPServer.Reply {
        var error: [String: Any] = ["message": message, "type": "OAuthException", "code": code, "fbtrace_id": "AQBmZ2Ax7nB"]
        if let subcode { error["error_subcode"] = subcode }
        return .object(400, ["error": error])
    }

    static func facebook() -> ProviderStub.Respond {
        let used = Counter()
        return { request, _ in
            guard request.head.method == .post, request.path == "/v21.0/oauth/access_token" else { return .notFound }
            let form = request.form
            guard form["client_id"] == appID, form["client_secret"] == appSecret else {
                return graphError("Error validating client secret.", code: 1)
            }
            guard form["code"] == "AQD-fb-code", form["redirect_uri"] == redirectURI.absoluteString else {
                return graphError("Invalid verification code format.", code: 100)
            }
            guard used.next() == 1 else {
                return graphError("This authorization code has been used.", code: 100, subcode: 36009)
            }
            return .object(["access_token": "EAAGm0PX4ZCpsBA-token", "token_type": "bearer", "expires_in": 5_183_944])
        }
    }

    @Test func codeExchangeInTheBodyAndGraphAPIErrors() async throws {
        try await ProviderStub.with(Self.facebook()) { stub in
            let preset = try ProviderPreset.facebook(graphAPIVersion: "v21.0").rebased(onto: stub.baseURL)
            let client = try await OAuth2Client(
                server: .preset(preset),
                configuration: ClientConfiguration(clientID: Self.appID, clientSecret: Self.appSecret, redirectURI: redirectURI))
            let request = try client.authorizationRequest()
            #expect(request.url.path == "/v21.0/dialog/oauth")
            #expect(query(request.url)["scope"] == "public_profile email")

            let tokens = try await client.completeAuthorization(callbackURL: callback(for: request, code: "AQD-fb-code"), request: request)
            #expect(tokens.accessToken == "EAAGm0PX4ZCpsBA-token")
            #expect(tokens.tokenType == .bearer)
            #expect(tokens.refreshToken == nil)
            #expect(tokens.expiresAt != nil)
            let sent = try #require(stub.requests.first)
            #expect(sent.authorization == nil)
            #expect(sent.form["client_secret"] == Self.appSecret)

            let reused = try #require(
                await oauth2Error { try await client.completeAuthorization(callbackURL: callback(for: request, code: "AQD-fb-code"), request: request) })
            #expect(reused.code == .invalidRequest)
            #expect(reused.statusCode == 400)
            #expect(reused.message == "This authorization code has been used.")
            #expect(reused.serverCode == "OAuthException")
        }
    }
}
