import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// LinkedIn's `/oauth/v2/accessToken` as it answers: the client's credentials only as body
/// parameters (its metadata names no method, so a client left to choose would use Basic),
/// comma-separated scopes, and — on the member-API answers — no `token_type`.
@Suite struct LinkedInPresetTests {
    static let clientID = "78abcdefgh1234"
    static let secret = "WPL_AP1.linkedin-secret"

    static let linkedIn: ProviderStub.Respond = { request, base in
        guard request.head.method == .post, request.path == "/oauth/v2/accessToken" else { return .notFound }
        let form = request.form
        guard form["client_id"] != nil else {
            return .object(400, ["error": "invalid_request", "error_description": "A required parameter \"client_id\" is missing"])
        }
        guard form["client_id"] == clientID, form["client_secret"] == secret else {
            return .object(401, ["error": "invalid_client", "error_description": "Client authentication failed"])
        }
        switch form["code"] {
        case "li-oidc-code":
            return .object([
                "access_token": "AQX-oidc", "expires_in": 5_183_999, "scope": "email,openid,profile", "token_type": "Bearer",
                "id_token": StubIDToken.make(issuer: base.absoluteString + "/oauth", audience: clientID, code: "li-oidc-code"),
            ])
        case "li-member-code":
            return .object(["access_token": "AQUvlL_DYEzvT2wz1QJiEPeLioeA", "expires_in": 5_184_000, "scope": "r_liteprofile,w_member_social"])
        default:
            return .object(400, ["error": "invalid_request", "error_description": "Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization code. Or authorization code expired. Or external member binding exists"])
        }
    }

    @Test func credentialsInTheBodyCommaScopesAndNoTokenType() async throws {
        try await ProviderStub.with(Self.linkedIn) { stub in
            let preset = try ProviderPreset.linkedIn.rebased(onto: stub.baseURL)
            let configuration = ClientConfiguration(clientID: Self.clientID, clientSecret: Self.secret, redirectURI: redirectURI)
            let client = try await OAuth2Client(server: .preset(preset), configuration: configuration)
            let signIn = try client.authorizationRequest()
            #expect(signIn.url.path == "/oauth/v2/authorization")
            #expect(signIn.issuer == stub.baseURL.absoluteString + "/oauth")

            let oidc = try await client.completeAuthorization(callbackURL: callback(for: signIn, code: "li-oidc-code"), request: signIn)
            #expect(oidc.scopes == ["email", "openid", "profile"])
            #expect(oidc.idToken != nil)
            let sent = try #require(stub.requests.first)
            #expect(sent.authorization == nil)
            #expect(sent.form["client_secret"] == Self.secret)

            let member = try client.authorizationRequest(AuthorizationOptions(scopes: ["r_liteprofile", "w_member_social"]))
            let tokens = try await client.completeAuthorization(callbackURL: callback(for: member, code: "li-member-code"), request: member)
            #expect(tokens.tokenType == .bearer)
            #expect(tokens.scopes == ["r_liteprofile", "w_member_social"])

            // Left to choose from LinkedIn's metadata alone, a client would use HTTP Basic,
            // which LinkedIn does not read.
            guard case .metadata(var metadata) = preset.server else { Issue.record("LinkedIn is not discovered"); return }
            metadata = try ServerMetadata(fields: metadata.fields.filter { $0.key != "token_endpoint_auth_methods_supported" })
            let chooser = try OAuth2Client(metadata: metadata, configuration: configuration)
            let refused = try #require(
                await oauth2Error { try await chooser.completeAuthorization(callbackURL: callback(for: signIn, code: "li-oidc-code"), request: signIn) })
            #expect(refused.code == .invalidRequest)
            #expect(stub.requests.last?.authorization == basic(Self.clientID, Self.secret))
        }
    }
}
