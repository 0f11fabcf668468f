import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import OAuth2Web
import Testing

extension Integration {
    /// OpenID Connect CIBA in ping mode against Glewlwyd 2.7.5's `oidc-ciba` instance: a
    /// client registered for this run in ping mode, whose notification endpoint is
    /// `BackchannelPingEndpoint` on an ephemeral 127.0.0.1 port. Glewlwyd posts the ping when
    /// the user approves (through its user API, as its login page does); the client then
    /// gets the tokens with one request.
    @Suite(.timeLimit(.minutes(3))) struct BackchannelPing {
        /// The pings the receiver answered, by status.
        final class Received: @unchecked Sendable {
            private let lock = NSLock()
            private var statuses: [Int] = []
            func append(_ status: Int) { lock.withLock { statuses.append(status) } }
            var all: [Int] { lock.withLock { statuses } }
        }

        /// Runs `body` with a client registered in ping mode at `oidc-ciba`, the inbox its
        /// notification endpoint feeds, and what that endpoint answered.
        func withPingClient(
            _ body: (OAuth2Client, ClientConfiguration, BackchannelPingInbox, Received, ProofRecorder) async throws -> Void
        ) async throws {
            let inbox = BackchannelPingInbox()
            let endpoint = BackchannelPingEndpoint(inbox: inbox)
            let received = Received()
            try await LocalHTTPServer.with(handler: { request in
                let answer = endpoint.handle(request.head, body: request.body)
                received.append(answer.status.code)
                return .response(answer.response, Data(answer.body))
            }) { receiver in
                let registered = GlewlwydRegisteredClient(prefix: "ciba-ping")
                try await registered.register([
                    "redirect_uri": [], "authorization_type": ["urn:openid:params:grant-type:ciba", "refresh_token"],
                    "scope": ["openid", "g_profile", "read"], "token_endpoint_auth_method": ["client_secret_basic"],
                    "backchannel_token_delivery_mode": "ping",
                    "backchannel_client_notification_endpoint": .string(receiver.baseURL.appendingPathComponent("ciba/ping").absoluteString),
                ])
                do {
                    let configuration = ClientConfiguration(clientID: registered.id, clientSecret: registered.secret, scopes: ["openid", "read"])
                    let recorder = ProofRecorder()
                    let client = try await Server.glewlwyd.client(configuration, issuer: Server.glewlwydCIBAIssuer, interceptors: [recorder])
                    try await body(client, configuration, inbox, received, recorder)
                } catch {
                    await registered.remove()
                    throw error
                }
                await registered.remove()
            }
        }

        @Test func approvedTheServersPingBringsVerifiedTokensWithOneRequest() async throws {
            try await withPingClient { client, configuration, inbox, received, recorder in
                #expect(client.metadata.backchannelTokenDeliveryModesSupported?.contains("ping") == true)
                let message = Backchannel.bindingMessage()
                let authentication = try await client.startBackchannelAuthentication(
                    BackchannelAuthenticationRequest(hint: .loginHint(Server.cibaLoginHint), bindingMessage: message, requestedExpiry: 120),
                    pingInbox: inbox)
                let sent = try #require(recorder.entries.first { $0.kind == .backchannelAuthentication })
                #expect(sent.body.contains("client_notification_token="))
                // Waits for the ping only (no fallback polls), from before the user decides.
                let wait = Task { try await client.waitForBackchannelPing(authentication, inbox: inbox, fallbackPollInterval: nil) }
                try await Server.glewlwyd.decideBackchannel(bindingMessage: message, clientID: configuration.clientID, scopes: configuration.scopes)
                let tokens = try await wait.value
                #expect(received.all == [204], "Glewlwyd pinged once, with the request's token and auth_req_id")
                #expect(recorder.entries.filter { $0.kind == .token }.count == 1, "one token request, after the ping")
                let claims = try #require(tokens.idTokenClaims, "verified before the tokens were returned")
                #expect(claims.claims[IDTokenValidator.authenticationRequestIDClaim]?.stringValue == authentication.authenticationRequestID)
                #expect(tokens.refreshToken != nil)
                #expect(inbox.pendingCount == 0)
            }
        }

        @Test func cancelledTheFallbackPollSaysAccessDenied() async throws {
            try await withPingClient { client, configuration, inbox, _, _ in
                let message = Backchannel.bindingMessage()
                let authentication = try await client.startBackchannelAuthentication(
                    BackchannelAuthenticationRequest(hint: .loginHint(Server.cibaLoginHint), bindingMessage: message, requestedExpiry: 120),
                    pingInbox: inbox)
                try await Server.glewlwyd.decideBackchannel(
                    bindingMessage: message, clientID: configuration.clientID, scopes: configuration.scopes, approve: false)
                // Glewlwyd 2.7.5 pings on approval only: the cancel is learnt by polling, at the
                // request's interval (5 s: Glewlwyd names none in ping mode).
                do {
                    _ = try await client.waitForBackchannelPing(authentication, inbox: inbox, fallbackPollInterval: 1)
                    Issue.record("a cancelled request gave tokens")
                } catch let error as OAuth2Error {
                    #expect(error.code == .accessDenied)
                    #expect(!error.description.contains(authentication.authenticationRequestID))
                }
                #expect(inbox.pendingCount == 0)
            }
        }
    }
}
