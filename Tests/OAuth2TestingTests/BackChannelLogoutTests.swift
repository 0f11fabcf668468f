import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import OAuth2Testing
import OAuth2Web
import Testing

/// OpenID Connect Back-Channel Logout 1.0 between the provider and OAuth2Web's endpoint, on
/// real sockets: the provider POSTs signed logout tokens to a loopback listener that answers
/// with `BackChannelLogoutEndpoint`, whose verifier fetches the provider's JWK set.
@Suite("Back-channel logout", .timeLimit(.minutes(1)))
struct BackChannelLogoutTests {
    /// What the listener's endpoint accepted.
    final class Received: @unchecked Sendable {
        private let lock = NSLock()
        private var logouts: [VerifiedLogoutToken] = []
        var all: [VerifiedLogoutToken] { lock.withLock { logouts } }
        func add(_ logout: VerifiedLogoutToken) { lock.withLock { logouts.append(logout) } }
    }

    /// A relying party's back-channel logout endpoint on a loopback listener, verifying with
    /// the provider's JWKS; the demo public client registered with its URI.
    static func withRelyingParty(_ provider: TestProvider, _ body: (LocalHTTPServer, Received) async throws -> Void) async throws {
        let verifier = LogoutTokenVerifier(
            issuer: provider.issuer.absoluteString, clientID: TestProvider.Demo.publicClientID,
            keys: try .jwks(provider.url(for: .jwks), environment: HTTPEnvironment(transport: Fixture.asyncHTTPClient)),
            // Real sockets on a busy machine: the deadline is a watchdog here, not a rule under test.
            keyFetchDeadline: .seconds(60))
        let endpoint = BackChannelLogoutEndpoint(verifier: verifier)
        let received = Received()
        try await LocalHTTPServer.with(handler: { request in
            let answer = await endpoint.handle(request.head, body: request.body) { logout in received.add(logout) }
            return .response(answer.response, Data(answer.body))
        }) { listener in
            var client = try #require(TestProvider.Configuration.demo.clients.first { $0.id == TestProvider.Demo.publicClientID })
            client.backChannelLogoutURI = listener.baseURL.appendingPathComponent("backchannel-logout")
            provider.register(client)
            try await body(listener, received)
        }
    }

    @Test("Ending the session at the provider sends a logout token the relying party verifies")
    func endSessionSendsALogoutToken() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            try await Self.withRelyingParty(provider) { listener, received in
                let client = try await Fixture.publicClient(provider)
                let tokens = try await Fixture.signIn(client, provider)
                let sessionID = try #require(tokens.idTokenClaims?.sessionID)

                let logout = try client.endSessionRequest(EndSessionOptions(idTokenHint: tokens.idToken))
                try await provider.openInBrowser(logout.url)
                // The provider waited for the relying party's answer before answering the browser.
                let logouts = received.all
                #expect(logouts.count == 1)
                #expect(logouts.first?.issuer == provider.issuer.absoluteString)
                #expect(logouts.first?.sessionID == sessionID)
                #expect(logouts.first?.subject == TestProvider.Demo.subject)
                let delivery = try #require(provider.backChannelLogoutDeliveries.first)
                #expect(delivery.statusCode == 200)
                #expect(delivery.succeeded)
                #expect(!delivery.description.contains(delivery.logoutToken))

                // The token as sent is explicitly typed and has an exp.
                let jws = try JWS(compact: delivery.logoutToken)
                #expect(jws.type == "logout+jwt")
                #expect(try jws.claims()["exp"] != nil)

                // The same token again is a replay: 400, and no session ends.
                let (response, body) = try await Fixture.send(
                    .post, listener.baseURL.appendingPathComponent("backchannel-logout"), form: [("logout_token", delivery.logoutToken)])
                #expect(response.status == .badRequest)
                #expect(response.headerFields[.cacheControl] == "no-store")
                #expect(Fixture.json(body)["error"] == "invalid_request")
                #expect(received.all.count == 1)
            }
        }
    }

    @Test("A logout token sent on demand names the subject or session asked for")
    func onDemand() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            try await Self.withRelyingParty(provider) { _, received in
                // A watchdog, not a rule under test: the relying party fetches the keys first, on a busy machine.
                let bySubject = try await provider.sendBackChannelLogout(
                    clientID: TestProvider.Demo.publicClientID, subject: "user-7", timeout: .seconds(120))
                #expect(bySubject.statusCode == 200)
                let bySession = try await provider.sendBackChannelLogout(
                    clientID: TestProvider.Demo.publicClientID, sessionID: "sid-9", timeout: .seconds(120))
                #expect(bySession.statusCode == 200)
                #expect(received.all.map(\.subject) == ["user-7", nil])
                #expect(received.all.map(\.sessionID) == [nil, "sid-9"])
                #expect(provider.backChannelLogoutDeliveries.count == 2)

                // A client without a back-channel logout URI, or a token naming nobody: refused.
                let noURI = await Fixture.providerError {
                    _ = try await provider.sendBackChannelLogout(clientID: TestProvider.Demo.confidentialClientID, subject: "user-7")
                }
                #expect(noURI?.code == .invalidConfiguration)
                let nobody = await Fixture.providerError {
                    _ = try await provider.sendBackChannelLogout(clientID: TestProvider.Demo.publicClientID)
                }
                #expect(nobody?.code == .invalidConfiguration)
            }
        }
    }

    @Test("A relying party that does not answer does not stop the logout, and the delivery says so")
    func unreachableRelyingParty() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            // A loopback port nobody listens on, held bound so that no server of a parallel
            // test can take it (a shut-down server's port can).
            let uri = URL(string: "http://127.0.0.1:\(try refusedPort())/backchannel-logout")!
            var registered = try #require(TestProvider.Configuration.demo.clients.first { $0.id == TestProvider.Demo.publicClientID })
            registered.backChannelLogoutURI = uri
            provider.register(registered)

            let client = try await Fixture.publicClient(provider)
            let tokens = try await Fixture.signIn(client, provider)
            let sessionID = try #require(tokens.idTokenClaims?.sessionID)
            try await provider.openInBrowser(try client.endSessionRequest(EndSessionOptions(idTokenHint: tokens.idToken)).url)
            #expect(!provider.isSessionActive(sessionID))
            let delivery = try #require(provider.backChannelLogoutDeliveries.first)
            #expect(delivery.statusCode == nil)
            #expect(!delivery.succeeded)
            #expect(delivery.sessionID == sessionID)

            let error = await Fixture.providerError {
                _ = try await provider.sendBackChannelLogout(clientID: TestProvider.Demo.publicClientID, subject: "user-7")
            }
            #expect(error?.code == .browser)
        }
    }

    @Test("A back-channel logout URI that is not an absolute http URI without a fragment is refused")
    func invalidURI() async throws {
        for uri in ["https://app.example.com/logout", "http://127.0.0.1/logout#x", "/logout"] {
            var configuration = TestProvider.Configuration.demo
            configuration.clients[0].backChannelLogoutURI = URL(string: uri)!
            let error = await Fixture.providerError { _ = try await TestProvider.start(configuration: configuration) }
            #expect(error?.code == .invalidConfiguration)
        }
    }

    @Test("The provider's metadata says it supports back-channel logout with sid")
    func metadata() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let (_, body) = try await Fixture.send(.get, provider.url(for: .discovery))
            let metadata = Fixture.json(body)
            #expect(metadata["backchannel_logout_supported"] == true)
            #expect(metadata["backchannel_logout_session_supported"] == true)
        }
    }
}
