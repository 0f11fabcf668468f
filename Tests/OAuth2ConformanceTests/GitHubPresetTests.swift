import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// GitHub's `/login/oauth/access_token` as GitHub documents and answers it: every answer is
/// HTTP 200, errors included; JSON only when asked with `Accept: application/json`, else
/// form-encoded; `client_id` and `client_secret` in the body; the granted scope
/// comma-separated.
@Suite struct GitHubPresetTests {
    static let clientID = "Iv1.8a61f9b3a7aba766"
    static let secret = "gh-secret-1234"

    static func answer(_ request: LocalHTTPServer.Request, _ members: [(String, Any)]) -> LocalHTTPServer.Reply {
        if request.accept?.contains("application/json") == true {
            return .object(Dictionary(members, uniquingKeysWith: { first, _ in first }))
        }
        return .form(members.map { ($0.0, "\($0.1)") })
    }

    static func error(_ request: LocalHTTPServer.Request, _ code: String, _ description: String, _ extra: [(String, Any)] = [])
        -> LocalHTTPServer.Reply
    {
        answer(
            request,
            [("error", code), ("error_description", description), ("error_uri", "https://docs.github.com/apps/oauth#\(code)")] + extra)
    }

    /// A fresh stub: its device-flow polls count from one.
    static func github() -> ProviderStub.Respond {
        let pending = Counter()
        return { request, _ in respond(request, pending: pending) }
    }

    static func respond(_ request: LocalHTTPServer.Request, pending: Counter) -> LocalHTTPServer.Reply {
        guard request.head.method == .post, request.path == "/login/oauth/access_token" else { return .notFound }
        let form = request.form
        guard form["client_id"] == clientID else {
            return error(request, "incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
        }
        switch form["grant_type"] {
        case "urn:ietf:params:oauth:grant-type:device_code":
            guard form["device_code"] == "3584d83530557fdd1f46af8289938c8ef79f9dc5" else {
                return error(request, "incorrect_device_code", "The device_code provided is not valid.")
            }
            switch pending.next() {
            case 1: return error(request, "authorization_pending", "The authorization request is still pending.")
            case 2: return error(request, "slow_down", "Too many requests have been made in the same timeframe.", [("interval", 10)])
            default:
                return answer(request, [("access_token", "gho_device"), ("token_type", "bearer"), ("scope", "repo,gist")])
            }
        case "refresh_token":
            guard form["client_secret"] == secret else {
                return error(request, "incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
            }
            guard form["refresh_token"] == "ghr_old" else {
                return error(request, "bad_refresh_token", "The refresh token passed is incorrect or expired.")
            }
            // A GitHub App's expiring user token: no scope, and a refresh token of its own lifetime.
            return answer(
                request,
                [
                    ("access_token", "ghu_new"), ("expires_in", 28800), ("refresh_token", "ghr_new"),
                    ("refresh_token_expires_in", 15_811_200), ("scope", ""), ("token_type", "bearer"),
                ])
        default:
            guard form["client_secret"] == secret else {
                return error(request, "incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
            }
            guard form["code"] == "good-code", form["code_verifier"] != nil, form["redirect_uri"] == redirectURI.absoluteString else {
                return error(request, "bad_verification_code", "The code passed is incorrect or expired.")
            }
            return answer(
                request, [("access_token", "gho_16C7e42F292c6912E7710c838347Ae178B4a"), ("scope", "repo,gist"), ("token_type", "bearer")])
        }
    }

    @Test func codeExchangeGetsJSONAndReadsHTTP200ErrorsAsErrors() async throws {
        try await ProviderStub.with(Self.github()) { stub in
            // GitHub Enterprise Server is the preset with another origin: here, the stub's.
            let preset = try ProviderPreset.github(enterpriseServer: stub.baseURL)
            let client = try await OAuth2Client(
                server: .preset(preset),
                configuration: ClientConfiguration(clientID: Self.clientID, clientSecret: Self.secret, redirectURI: redirectURI))
            let request = try client.authorizationRequest()
            #expect(request.url.path == "/login/oauth/authorize")
            #expect(query(request.url)["scope"] == "read:user")

            let tokens = try await client.completeAuthorization(callbackURL: callback(for: request, code: "good-code"), request: request)
            #expect(tokens.accessToken == "gho_16C7e42F292c6912E7710c838347Ae178B4a")
            #expect(tokens.tokenType == .bearer)
            #expect(tokens.scopes == ["repo", "gist"])
            #expect(tokens.expiresAt == nil)
            let sent = try #require(stub.requests(to: "/login/oauth/access_token").first)
            #expect(sent.accept == "application/json")
            #expect(sent.authorization == nil)
            #expect(sent.form["client_secret"] == Self.secret)
            #expect(sent.form["code_verifier"] == request.codeVerifier)

            let again = try client.authorizationRequest()
            let error = try #require(
                await oauth2Error { try await client.completeAuthorization(callbackURL: callback(for: again, code: "used-code"), request: again) })
            #expect(error.code == .invalidGrant)
            #expect(error.serverCode == "bad_verification_code")
            #expect(error.statusCode == 200)
            #expect(error.message == "The code passed is incorrect or expired.")
            #expect(error.requiresReauthorization)
        }
    }

    /// Without `Accept: application/json` GitHub answers form-encoded; the library reads it.
    /// (A user's interceptor may drop the header; here it stands for any client that does.)
    struct DropAccept: HTTPInterceptor {
        func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws {
            request.headerFields[.accept] = nil
        }
    }

    @Test func formEncodedRefreshOfAGitHubAppToken() async throws {
        try await ProviderStub.with(Self.github()) { stub in
            let client = try await OAuth2Client(
                server: .preset(try ProviderPreset.github.rebased(onto: stub.baseURL)),
                configuration: ClientConfiguration(clientID: Self.clientID, clientSecret: Self.secret),
                environment: HTTPEnvironment(interceptors: [DropAccept()]))
            let before = Date()
            let refreshed = try await client.refresh(TokenSet(accessToken: "ghu_old", refreshToken: "ghr_old", scopes: ["repo"]))
            // URLSession sends `Accept: */*` when a request has none; GitHub answers that with a form.
            #expect(stub.requests.first?.accept?.contains("application/json") != true)
            #expect(refreshed.accessToken == "ghu_new")
            #expect(refreshed.refreshToken == "ghr_new")
            #expect(refreshed.scopes == [])
            let expiresAt = try #require(refreshed.expiresAt)
            #expect(abs(expiresAt.timeIntervalSince(before) - 28800) < 60)
            #expect(refreshed.additionalFields["refresh_token_expires_in"] == .string("15811200"))

            let dead = try #require(await oauth2Error { try await client.refresh(TokenSet(accessToken: "a", refreshToken: "ghr_dead")) })
            #expect(dead.code == .invalidGrant)
            #expect(dead.serverCode == "bad_refresh_token")
        }
    }

    /// The device flow's polling, at the token endpoint: `authorization_pending`, then
    /// `slow_down`, then the tokens — all HTTP 200. (The device authorization request
    /// itself is not implemented yet; the preset carries its endpoint.)
    @Test func deviceFlowPollingReadsPendingAndSlowDown() async throws {
        try await ProviderStub.with(Self.github()) { stub in
            let preset = try ProviderPreset.github.rebased(onto: stub.baseURL)
            guard case .metadata(let metadata) = preset.server else { Issue.record("GitHub is not discovered"); return }
            #expect(metadata.deviceAuthorizationEndpoint == stub.baseURL.appendingPathComponent("login/device/code"))
            // A device client is public: no secret, so `none`.
            let client = try await OAuth2Client(server: .preset(preset), configuration: ClientConfiguration(clientID: Self.clientID))
            let poll = Grant.extension(
                type: "urn:ietf:params:oauth:grant-type:device_code",
                parameters: ["device_code": "3584d83530557fdd1f46af8289938c8ef79f9dc5"])
            let pending = try #require(await oauth2Error { try await client.requestToken(poll) })
            #expect(pending.code == .authorizationPending)
            let slow = try #require(await oauth2Error { try await client.requestToken(poll) })
            #expect(slow.code == .slowDown)
            #expect(slow.isTransient)
            let tokens = try await client.requestToken(poll)
            #expect(tokens.accessToken == "gho_device")
            #expect(tokens.scopes == ["repo", "gist"])
            for request in stub.requests {
                #expect(request.form["client_id"] == Self.clientID)
                #expect(request.form["client_secret"] == nil)
                #expect(request.authorization == nil)
            }
        }
    }
}
