import Foundation
import HTTPTypes
import OAuth2
import Testing

/// What `glewlwyd.sh`'s `seed_ciba` adds to Glewlwyd for CIBA (defaults match
/// `scripts/test-servers/lib.sh`).
extension Server {
    /// The instance with CIBA in poll and ping mode.
    static var glewlwydCIBAIssuer: URL { URL(string: env("OAUTH2_TEST_GLEWLWYD_CIBA_ISSUER", "http://127.0.0.1:4593/api/oidc-ciba"))! }

    /// The confidential poll-mode client.
    static func cibaPollClient(scopes: [String] = ["openid", "read"]) -> ClientConfiguration {
        ClientConfiguration(
            clientID: env("OAUTH2_TEST_GLEWLWYD_CIBA_POLL_ID", "ciba-poll"),
            clientSecret: env("OAUTH2_TEST_GLEWLWYD_CIBA_POLL_SECRET", "ciba-poll-secret"), scopes: scopes)
    }

    /// The poll-mode client whose requests are signed (ES256, the `private_key_jwt` client's keys).
    static func cibaSignedClient() throws -> ClientConfiguration {
        var configuration = ClientConfiguration(clientID: env("OAUTH2_TEST_GLEWLWYD_CIBA_SIGNED_ID", "ciba-signed"), scopes: ["openid", "read"])
        configuration.privateKey = try jwtClientKey("jwt-client-ec.jwk.json")
        configuration.clientAssertion.audience = .requestEndpoint
        return configuration
    }

    /// Glewlwyd reads `login_hint` as a JSON object naming the user.
    static var cibaLoginHint: String { #"{"username":"\#(username)"}"# }

    /// The user's side of CIBA at Glewlwyd, as its login page does it: signs in, grants the
    /// client the scopes, finds the request by its binding message among the user's pending
    /// ones (`ciba_user_list`) and approves it (`ciba_user_check` with `g_continue`) or cancels it.
    func decideBackchannel(bindingMessage: String, clientID: String, scopes: [String], approve: Bool = true, browser: Browser = Browser()) async throws {
        try #require(self == .glewlwyd, "only Glewlwyd offers CIBA")
        try await logIn(clientID: clientID, scopes: scopes, browser: browser)
        let instance = Self.glewlwydCIBAIssuer
        let (listed, body) = try await browser.get(instance.appendingPathComponent("ciba_user_list"))
        try #require(listed.status.code == 200, "ciba_user_list answered \(listed.status.code)")
        let requests = try #require(try JSONDecoder().decode(JSONValue.self, from: body).arrayValue, "ciba_user_list is a list")
        let request = try #require(
            requests.first { $0.objectValue?["binding_message"]?.stringValue == bindingMessage }?.objectValue,
            "the request is among the user's pending ones, with its binding message")
        let userRequestID = try #require(request["user_req_id"]?.stringValue)
        var components = URLComponents(url: instance.appendingPathComponent("ciba_user_check"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "user_req_id", value: userRequestID), URLQueryItem(name: approve ? "g_continue" : "cancel", value: nil)]
        let (response, _) = try await browser.get(components.url!)
        let location = response.headerFields[.location] ?? ""
        if approve {
            #expect(location.contains("ciba_message=complete"), "Glewlwyd did not complete the approval: \(location)")
        }
    }
}

extension Integration {
    /// OpenID Connect CIBA against Glewlwyd 2.7.5's `oidc-ciba` instance: the user approves
    /// (or cancels) through Glewlwyd's user API with their own session, as its login page does.
    @Suite struct Backchannel {
        static func bindingMessage() -> String { "CIBA-" + String(UInt32.random(in: 0...UInt32.max), radix: 36).uppercased() }

        @Test(arguments: TransportKind.allCases)
        func approvedAfterPendingGivesVerifiedTokens(transport: TransportKind) async throws {
            let server = Server.glewlwyd
            let configuration = Server.cibaPollClient()
            let client = try await server.client(configuration, issuer: Server.glewlwydCIBAIssuer, transport: transport)
            #expect(client.offersBackchannelAuthentication)
            #expect(client.metadata.backchannelTokenDeliveryModesSupported?.contains("poll") == true)
            #expect(client.metadata.grantTypesSupported?.contains(Grant.cibaType) == true)
            let message = Self.bindingMessage()
            let authentication = try await client.startBackchannelAuthentication(
                BackchannelAuthenticationRequest(hint: .loginHint(Server.cibaLoginHint), bindingMessage: message, requestedExpiry: 300))
            #expect(authentication.interval >= 1)
            #expect(authentication.expiresAt > Date().addingTimeInterval(200) && authentication.expiresAt <= Date().addingTimeInterval(301))
            let events = PollEvents()
            let tokens = try await client.pollBackchannelToken(authentication) { event in
                events.append(event)
                if case .authorizationPending(attempt: 1) = event {
                    do {
                        try await server.decideBackchannel(bindingMessage: message, clientID: configuration.clientID, scopes: configuration.scopes)
                    } catch {
                        Issue.record("approving the request failed: \(error)")
                    }
                }
            }
            #expect(events.all.contains(.authorizationPending(attempt: 1)), "the real server answered authorization_pending first")
            #expect(!tokens.accessToken.isEmpty)
            #expect(tokens.refreshToken != nil)
            let claims = try #require(tokens.idTokenClaims, "verified before the tokens were returned")
            #expect(!claims.subject.isEmpty)
            // Glewlwyd names the request and hashes the refresh token in its ID token: both were
            // checked before the tokens were returned.
            #expect(claims.claims[IDTokenValidator.authenticationRequestIDClaim]?.stringValue == authentication.authenticationRequestID)
            #expect(claims.claims[IDTokenValidator.refreshTokenHashClaim]?.stringValue?.isEmpty == false)
            let me = try await client.userInfo(for: tokens)
            #expect(me.subject == claims.subject)

            // The ID token just issued names the user of a second request (id_token_hint); the
            // second answer must name the same subject.
            let second = Self.bindingMessage()
            let again = try await client.startBackchannelAuthentication(
                BackchannelAuthenticationRequest(hint: .idTokenHint(try #require(tokens.idToken)), bindingMessage: second))
            #expect(again.expectedSubject == claims.subject)
            try await server.decideBackchannel(bindingMessage: second, clientID: configuration.clientID, scopes: configuration.scopes)
            let renewed = try await client.pollBackchannelToken(again)
            #expect(renewed.idTokenClaims?.subject == claims.subject)
        }

        @Test func theUserCancellingIsAccessDenied() async throws {
            let server = Server.glewlwyd
            let configuration = Server.cibaPollClient()
            let client = try await server.client(configuration, issuer: Server.glewlwydCIBAIssuer)
            let message = Self.bindingMessage()
            let authentication = try await client.startBackchannelAuthentication(
                BackchannelAuthenticationRequest(hint: .loginHint(Server.cibaLoginHint), bindingMessage: message))
            try await server.decideBackchannel(bindingMessage: message, clientID: configuration.clientID, scopes: configuration.scopes, approve: false)
            do {
                _ = try await client.pollBackchannelToken(authentication)
                Issue.record("a cancelled request gave tokens")
            } catch let error as OAuth2Error {
                #expect(error.code == .accessDenied)
                #expect(!error.description.contains(authentication.authenticationRequestID))
            }
        }

        @Test func aSignedRequestIsAcceptedFromTheClientRegisteredForIt() async throws {
            let server = Server.glewlwyd
            let configuration = try Server.cibaSignedClient()
            let recorder = ProofRecorder()
            let client = try await server.client(configuration, issuer: Server.glewlwydCIBAIssuer, interceptors: [recorder])
            #expect(client.metadata.backchannelAuthenticationRequestSigningAlgValuesSupported?.contains("ES256") == true)
            let message = Self.bindingMessage()
            let authentication = try await client.startBackchannelAuthentication(
                BackchannelAuthenticationRequest(hint: .loginHint(Server.cibaLoginHint), bindingMessage: message, signed: true))
            let sent = try #require(recorder.entries.first { $0.kind == .backchannelAuthentication })
            #expect(sent.body.contains("request=") && !sent.body.contains("login_hint="), "the parameters travel in the signed JWT")
            try await server.decideBackchannel(bindingMessage: message, clientID: configuration.clientID, scopes: configuration.scopes)
            let tokens = try await client.pollBackchannelToken(authentication)
            #expect(tokens.idTokenClaims?.subject.isEmpty == false)
        }

        @Test func anUnknownUserIsRefusedWithATypedError() async throws {
            let client = try await Server.glewlwyd.client(Server.cibaPollClient(), issuer: Server.glewlwydCIBAIssuer)
            do {
                _ = try await client.startBackchannelAuthentication(
                    BackchannelAuthenticationRequest(hint: .loginHint(#"{"username":"nobody-\#(UUID().uuidString)"}"#)))
                Issue.record("a request for an unknown user was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidRequest, "Glewlwyd answers invalid_request to a hint it cannot resolve")
                #expect(error.source == .server)
            }
        }

        @Test func anUnknownRequestIDIsRefused() async throws {
            let client = try await Server.glewlwyd.client(Server.cibaPollClient(), issuer: Server.glewlwydCIBAIssuer)
            do {
                _ = try await client.requestToken(.ciba(authenticationRequestID: "no-such-request"))
                Issue.record("an unknown auth_req_id gave tokens")
            } catch let error as OAuth2Error {
                #expect(error.code != .authorizationPending)
                #expect(!error.description.contains("no-such-request"))
            }
        }
    }
}
