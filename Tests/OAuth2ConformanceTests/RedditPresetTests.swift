import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// Reddit's `/api/v1/access_token` as Reddit documents it: HTTP Basic always — for an
/// installed app, which has no secret, with an empty password — 401 without it,
/// `{"error": "invalid_grant"}` with HTTP 200 for a bad code, and app-only tokens through
/// the `installed_client` extension grant.
@Suite struct RedditPresetTests {
    static let clientID = "p-jcoLKBynTLew"
    static let userAgent = "linux:com.example.reader:v1.2.3 (by /u/example)"

    static let reddit: ProviderStub.Respond = { request, _ in
        guard request.head.method == .post, request.path == "/api/v1/access_token" else { return .notFound }
        guard request.authorization == basic(clientID, "") else {
            return .body(401, Data(#"{"message": "Unauthorized", "error": 401}"#.utf8), contentType: "application/json; charset=UTF-8")
        }
        let form = request.form
        switch form["grant_type"] {
        case "authorization_code":
            guard form["code"] == "reddit-code", form["redirect_uri"] == redirectURI.absoluteString else {
                return .object(["error": "invalid_grant"])
            }
            return .object([
                "access_token": "reddit-at", "token_type": "bearer", "expires_in": 86400, "refresh_token": "reddit-rt",
                "scope": "identity read",
            ])
        case "https://oauth.reddit.com/grants/installed_client":
            guard let device = form["device_id"], (20...30).contains(device.count) else {
                return .object(["error": "invalid_request"])
            }
            return .object(["access_token": "reddit-app-only", "token_type": "bearer", "expires_in": 86400, "scope": "*"])
        default:
            return .object(["error": "unsupported_grant_type"])
        }
    }

    @Test func installedAppUsesBasicWithAnEmptySecret() async throws {
        try await ProviderStub.with(Self.reddit) { stub in
            let client = try await OAuth2Client(
                server: .preset(try ProviderPreset.reddit.rebased(onto: stub.baseURL)),
                configuration: ClientConfiguration(clientID: Self.clientID, redirectURI: redirectURI),
                environment: HTTPEnvironment(userAgent: Self.userAgent))
            let request = try client.authorizationRequest()
            #expect(request.url.path == "/api/v1/authorize")
            #expect(query(request.url)["duration"] == "permanent")
            #expect(query(request.url)["scope"] == "identity")

            let tokens = try await client.completeAuthorization(callbackURL: callback(for: request, code: "reddit-code"), request: request)
            #expect(tokens.refreshToken == "reddit-rt")
            #expect(tokens.scopes == ["identity", "read"])
            let sent = try #require(stub.requests.first)
            #expect(sent.authorization == "Basic cC1qY29MS0J5blRMZXc6")
            #expect(sent.form["client_secret"] == nil)
            #expect(sent.head.headerFields[.userAgent] == Self.userAgent)

            let bad = try #require(
                await oauth2Error { try await client.completeAuthorization(callbackURL: callback(for: request, code: "stale"), request: request) })
            #expect(bad.code == .invalidGrant)
            #expect(bad.statusCode == 200)

            let appOnly = try await client.requestToken(
                Grant(type: "https://oauth.reddit.com/grants/installed_client", parameters: [("device_id", "DO_NOT_TRACK_THIS_DEVICE")]))
            #expect(appOnly.scopes == ["*"])
        }
    }

    @Test func withoutTheQuirkNoEmptySecretIsSent() async throws {
        try await ProviderStub.with(Self.reddit) { stub in
            var strict = try ProviderPreset.reddit.rebased(onto: stub.baseURL)
            strict.quirks = []
            // Reddit's preset asks for Basic; without the quirk a client without a secret is
            // public and sends its id in the body, which Reddit refuses.
            let client = try await OAuth2Client(server: .preset(strict), configuration: ClientConfiguration(clientID: Self.clientID))
            let refused = try #require(
                await oauth2Error { try await client.requestToken(Grant(type: "https://oauth.reddit.com/grants/installed_client", parameters: [("device_id", "DO_NOT_TRACK_THIS_DEVICE")])) })
            #expect(refused.code == .invalidClient)
            #expect(refused.statusCode == 401)
            #expect(stub.requests.first?.authorization == nil)
        }
    }
}
