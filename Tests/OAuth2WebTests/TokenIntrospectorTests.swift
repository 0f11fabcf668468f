import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// Opaque tokens through the library's introspection client (RFC 7662), over a recording
/// transport: the cache's lifetimes, negative answers, size bound and single flight.
@Suite(.timeLimit(.minutes(1))) struct TokenIntrospectorTests {
    let date = ManualDate(TestIssuer.start)

    /// The authorization server's view of each token, changed by the tests (revocation).
    final class Server: @unchecked Sendable {
        let lock = NSLock()
        var answers: [String: String] = [:]
        var failing = false
        func set(_ token: String, _ json: String) { lock.withLock { answers[token] = json } }
    }

    /// What the tests' API accepts unless a test says otherwise: answers naming `orders`, or,
    /// without `aud`, issued to `client-1` (the client of ``active(expiresIn:scope:extra:)``).
    static let ordersAPI = TokenIntrospector.AcceptedTokens(audiences: ["orders"], clientIDs: ["client-1"])

    func introspector(
        _ server: Server, gate: Gate? = nil, policy: TokenIntrospector.Policy = TokenIntrospector.Policy(),
        accepting: TokenIntrospector.AcceptedTokens = ordersAPI
    ) throws -> (TokenIntrospector, RecordingTransport) {
        let transport = RecordingTransport { _, body in
            if let gate { await gate.pass() }
            let form = FormURLEncoding.decode(String(decoding: body ?? Data(), as: UTF8.self)) ?? []
            let token = form.first { $0.0 == "token" }?.1 ?? ""
            if server.lock.withLock({ server.failing }) { throw URLError(.cannotConnectToHost) }
            return jsonResponse(200, server.lock.withLock { server.answers[token] } ?? #"{"active":false}"#)
        }
        let configuration = ClientConfiguration(clientID: "orders-api", clientSecret: "api-secret")
        let metadata = ServerMetadata(
            issuer: URL(string: TestIssuer.issuer)!, tokenEndpoint: URL(string: "https://id.example.com/token")!,
            introspectionEndpoint: URL(string: "https://id.example.com/introspect")!)
        let client = try OAuth2Client(
            metadata: metadata, configuration: configuration, environment: HTTPEnvironment(transport: transport, retryPolicy: .never))
        let introspector = TokenIntrospector(
            client: client, accepting: accepting, issuer: nil, policy: policy, logger: CapturedLog().logger(), now: date.function)
        return (introspector, transport)
    }

    func active(expiresIn seconds: Int, scope: String = "orders:read", extra: String = "") -> String {
        let exp = Int(date.now.timeIntervalSince1970) + seconds
        return #"{"active":true,"sub":"user-1","client_id":"client-1","scope":"\#(scope)","exp":\#(exp),"iss":"\#(TestIssuer.issuer)"\#(extra)}"#
    }

    func check(_ introspector: TokenIntrospector, _ token: String, scopes: [String] = []) async -> AccessTokenError? {
        await refusal { () async throws(AccessTokenError) in try await introspector.verify(token, requiredScopes: scopes) }
    }

    @Test func acceptsAnActiveTokenAndReadsTheAnswer() async throws {
        let server = Server()
        server.set("opaque-1", active(expiresIn: 300, extra: #","cnf":{"jkt":"thumb"},"aud":"orders""#))
        let (introspector, transport) = try introspector(server)
        let verified = try await introspector.verify("opaque-1", requiredScopes: ["orders:read"])
        #expect(verified.format == .introspected)
        #expect(verified.subject == "user-1")
        #expect(verified.clientID == "client-1")
        #expect(verified.confirmationThumbprint == "thumb")
        #expect(verified.audience == ["orders"])
        #expect(transport.bodies.first?.contains("token_type_hint=access_token") == true)
    }

    @Test func anActiveAnswerIsCachedNoLongerThanTheTokensExpiry() async throws {
        let server = Server()
        server.set("opaque-1", active(expiresIn: 30))
        let (introspector, transport) = try introspector(server, policy: .init(maximumLifetime: 600))
        _ = try await introspector.verify("opaque-1")
        server.set("opaque-1", #"{"active":false}"#)  // revoked
        date.advance(by: 29)
        #expect(await check(introspector, "opaque-1") == nil)  // the cached answer: the staleness a revocation may have
        #expect(transport.count == 1)
        date.advance(by: 2)
        #expect(await check(introspector, "opaque-1")?.code == .invalidToken)
    }

    @Test func anActiveAnswerIsCachedNoLongerThanTheMaximum() async throws {
        let server = Server()
        server.set("opaque-1", active(expiresIn: 3600))
        let (introspector, transport) = try introspector(server, policy: .init(maximumLifetime: 60))
        _ = try await introspector.verify("opaque-1")
        server.set("opaque-1", #"{"active":false}"#)  // revoked
        date.advance(by: 59)
        #expect(await check(introspector, "opaque-1") == nil)
        #expect(transport.count == 1)
        date.advance(by: 2)
        let error = await check(introspector, "opaque-1")
        #expect(error?.reason == .inactive)
        #expect(transport.count == 2)
    }

    @Test func inactiveAnswersAreCachedBriefly() async throws {
        let (introspector, transport) = try introspector(Server(), policy: .init(negativeLifetime: 5))
        for _ in 0..<3 { #expect(await check(introspector, "dead")?.reason == .inactive) }
        #expect(transport.count == 1)
        date.advance(by: 6)
        #expect(await check(introspector, "dead")?.reason == .inactive)
        #expect(transport.count == 2)
    }

    @Test func concurrentChecksOfOneTokenShareOneCall() async throws {
        let server = Server()
        server.set("opaque-1", active(expiresIn: 300))
        let gate = Gate()
        defer { gate.open() }
        // No caching at all: only the single flight can keep the calls at one.
        let (introspector, transport) = try introspector(server, gate: gate, policy: .init(maximumLifetime: 0, negativeLifetime: 0))
        try await withThrowingTaskGroup(of: VerifiedAccessToken.self) { group in
            for _ in 0..<20 { group.addTask { try await introspector.verify("opaque-1") } }
            await gate.arrived()
            while introspector.waitingCount < 20 { await Task.yield() }
            gate.open()
            for try await verified in group { #expect(verified.subject == "user-1") }
        }
        #expect(transport.count == 1)
        // Nothing cached: the next check asks again.
        _ = try await introspector.verify("opaque-1")
        #expect(transport.count == 2)
    }

    @Test func aFailedCallIsNotCached() async throws {
        let server = Server()
        server.set("opaque-1", active(expiresIn: 300))
        server.failing = true
        let (introspector, transport) = try introspector(server)
        let error = await check(introspector, "opaque-1")
        #expect(error?.code == .temporarilyUnavailable)
        #expect(error?.status == .serviceUnavailable)
        server.lock.withLock { server.failing = false }
        #expect(await check(introspector, "opaque-1") == nil)
        #expect(transport.count == 2)
    }

    @Test func scopesAreCheckedOnEveryCallWithTheCachedAnswer() async throws {
        let server = Server()
        server.set("opaque-1", active(expiresIn: 300))
        let (introspector, transport) = try introspector(server)
        #expect(await check(introspector, "opaque-1", scopes: ["orders:read"]) == nil)
        let error = await check(introspector, "opaque-1", scopes: ["orders:write"])
        #expect(error?.code == .insufficientScope)
        #expect(error?.requiredScopes == ["orders:write"])
        #expect(transport.count == 1)
    }

    @Test func aResourceServerSendsJWTsToTheVerifierAndOtherTokensToTheIntrospector() async throws {
        let server = Server()
        let key = try DPoPKey.generate()
        server.set("opaque-bearer", active(expiresIn: 300))
        server.set("opaque-bound", active(expiresIn: 300, extra: #","token_type":"DPoP","cnf":{"jkt":"\#(key.thumbprint)"}"#))
        let (introspector, transport) = try introspector(server)
        var dpop = DPoPProofVerifier(publicBaseURL: URL(string: "https://api.example.com")!)
        dpop.now = date.function
        let resourceServer = ResourceServer(accessTokens: TestIssuer.verifier(date: date), introspection: introspector, dpop: dpop)
        func request(_ authorization: String, proof: String? = nil) -> HTTPRequest {
            var fields: HTTPFields = [.authorization: authorization]
            if let proof { fields[.dpop] = proof }
            return HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/orders", headerFields: fields)
        }
        #expect(try await resourceServer.verify(request("Bearer \(TestIssuer.token())")).token.format == .jwt)
        #expect(transport.count == 0)
        #expect(try await resourceServer.verify(request("Bearer opaque-bearer")).token.format == .introspected)
        // An introspected token bound to a DPoP key (RFC 9449 §6.2) needs its proof.
        let proof = try key.proof(method: .get, url: URL(string: "https://api.example.com/orders")!, accessToken: "opaque-bound", issuedAt: date.now)
        let access = try await resourceServer.verify(request("DPoP opaque-bound", proof: proof))
        #expect(access.token.confirmationThumbprint == key.thumbprint)
        let asBearer = await refusal { () async throws(AccessTokenError) in try await resourceServer.verify(request("Bearer opaque-bound")) }
        #expect(asBearer?.reason == .bindingMismatch)
    }

    @Test func theCacheIsBounded() async throws {
        let server = Server()
        for index in 0..<10 { server.set("opaque-\(index)", active(expiresIn: 300 + index)) }
        let (introspector, _) = try introspector(server, policy: .init(capacity: 3))
        for index in 0..<10 { _ = try await introspector.verify("opaque-\(index)") }
        #expect(introspector.cachedCount == 3)
    }

    // MARK: - Which active tokens are for this API (RFC 7662 §4)

    @Test func anAnswerNamingAnotherAudienceIsRefusedWhateverItsClientAndScopes() async throws {
        let server = Server()
        // The client and the scope are ones the API names: the aud says the token is for billing.
        server.set("billing", active(expiresIn: 300, scope: "orders:read", extra: #","aud":"billing""#))
        server.set("billing-and-orders", active(expiresIn: 300, extra: #","aud":["billing","orders"]"#))
        server.set("empty-aud", active(expiresIn: 300, extra: #","aud":[]"#))
        let (introspector, _) = try introspector(server, accepting: .init(audiences: ["orders"], clientIDs: ["client-1"], scopes: ["orders:read"]))
        let refused = await check(introspector, "billing")
        #expect(refused?.code == .invalidToken)
        #expect(refused?.reason == .jose(.audienceMismatch))
        #expect(refused?.status == .unauthorized)
        #expect(await check(introspector, "billing-and-orders") == nil, "one of several audiences is enough")
        #expect(await check(introspector, "empty-aud")?.reason == .jose(.audienceMismatch), "an aud that names no one names not this API")
    }

    @Test func anAnswerWithoutAudIsAcceptedOnlyForAClientTheAPINames() async throws {
        let server = Server()
        server.set("served", active(expiresIn: 300))  // client_id client-1, no aud
        server.set("other-client", active(expiresIn: 300).replacingOccurrences(of: "client-1", with: "client-2"))
        server.set("no-client", #"{"active":true,"scope":"orders:read","iss":"\#(TestIssuer.issuer)"}"#)
        let (introspector, _) = try introspector(server, accepting: .clientIDs(["client-1"]))
        #expect(try await introspector.verify("served").clientID == "client-1")
        #expect(await check(introspector, "other-client")?.reason == .jose(.audienceMismatch))
        #expect(await check(introspector, "no-client")?.reason == .jose(.audienceMismatch))

        // The same answers for an API that names only audiences: none of them is for it.
        let (byAudience, _) = try self.introspector(server, accepting: .audiences(["orders"]))
        #expect(await check(byAudience, "served")?.reason == .jose(.audienceMismatch))
        // And through a resource server: 401 invalid_token, as for any token not for the API.
        let request = HTTPRequest(
            method: .get, scheme: "https", authority: "api.example.com", path: "/orders", headerFields: [.authorization: "Bearer other-client"])
        guard case .refused(let challenge) = await ResourceServer(introspection: introspector).authorize(request) else {
            Issue.record("another client's token was accepted")
            return
        }
        #expect(challenge.status == .unauthorized)
        #expect(challenge.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
    }

    @Test func anAnswerWithoutAudIsAcceptedOnlyWithAScopeTheAPINames() async throws {
        let server = Server()
        server.set("orders", active(expiresIn: 300, scope: "profile orders:read"))
        server.set("billing", active(expiresIn: 300, scope: "billing:read"))
        server.set("no-scope", #"{"active":true,"client_id":"client-1","iss":"\#(TestIssuer.issuer)"}"#)
        server.set("orders-for-billing", active(expiresIn: 300, scope: "orders:read", extra: #","aud":"billing""#))
        let (introspector, _) = try introspector(server, accepting: .scopes(["orders:read", "orders:write"]))
        #expect(try await introspector.verify("orders").scopes.contains("orders:read"))
        #expect(await check(introspector, "billing")?.reason == .jose(.audienceMismatch))
        #expect(await check(introspector, "no-scope")?.reason == .jose(.audienceMismatch))
        #expect(await check(introspector, "orders-for-billing")?.reason == .jose(.audienceMismatch), "its aud says another API")
    }

    @Test func nothingStatedAcceptsNothing() async throws {
        let server = Server()
        server.set("with-aud", active(expiresIn: 300, extra: #","aud":"orders""#))
        server.set("without-aud", active(expiresIn: 300))
        let (introspector, _) = try introspector(server, accepting: TokenIntrospector.AcceptedTokens())
        #expect(await check(introspector, "with-aud")?.reason == .jose(.audienceMismatch))
        #expect(await check(introspector, "without-aud")?.reason == .jose(.audienceMismatch))
        #expect(!TokenIntrospector.AcceptedTokens().acceptsAnyActiveToken)
    }

    @Test func anyActiveTokenIsAnExplicitChoiceThatStillChecksTheRest() async throws {
        let server = Server()
        server.set("billing", active(expiresIn: 300, extra: #","aud":"billing""#))
        server.set("other-client", active(expiresIn: 300).replacingOccurrences(of: "client-1", with: "client-2"))
        server.set("refresh", active(expiresIn: 300, extra: #","token_type":"refresh_token""#))
        server.set("expired", active(expiresIn: -5))
        server.set("foreign", #"{"active":true,"client_id":"client-1","iss":"https://evil.example.com"}"#)
        let (introspector, _) = try introspector(server, accepting: .anyActiveToken)
        #expect(introspector.accepting.acceptsAnyActiveToken)
        #expect(try await introspector.verify("billing").audience == ["billing"])
        #expect(try await introspector.verify("other-client").clientID == "client-2")
        // What it waives is only whom the token is for.
        #expect(await check(introspector, "never-issued")?.reason == .inactive)
        #expect(await check(introspector, "refresh")?.reason == .notAnAccessToken)
        #expect(await check(introspector, "expired")?.reason == .jose(.expired))
        #expect(await check(introspector, "foreign")?.reason == .jose(.issuerMismatch))
    }

    @Test func refusesAnotherAudienceIssuerAnExpiredAnswerOrARefreshToken() async throws {
        let server = Server()
        server.set("other-aud", active(expiresIn: 300, extra: #","aud":"billing""#))
        server.set("no-aud", active(expiresIn: 300))
        server.set("expired", active(expiresIn: -5))
        server.set("future", active(expiresIn: 300, extra: #","nbf":\#(Int(date.now.timeIntervalSince1970) + 60)"#))
        server.set("ours", active(expiresIn: 300, extra: #","aud":["billing","orders"]"#))
        let (introspector, _) = try introspector(server, accepting: .audiences(["orders"]))
        #expect(await check(introspector, "other-aud")?.reason == .jose(.audienceMismatch))
        #expect(await check(introspector, "no-aud")?.reason == .jose(.audienceMismatch))
        #expect(await check(introspector, "expired")?.reason == .jose(.expired))
        #expect(await check(introspector, "future")?.reason == .notYetValid)
        #expect(await check(introspector, "ours") == nil)

        // A refresh token is active, but not for an API.
        server.set("refresh", active(expiresIn: 300, extra: #","aud":"orders","token_type":"refresh_token""#))
        server.set("keycloak-refresh", active(expiresIn: 300, extra: #","aud":"orders","typ":"Refresh""#))
        server.set("bearer", active(expiresIn: 300, extra: #","aud":"orders","token_type":"Bearer""#))
        #expect(await check(introspector, "refresh")?.reason == .notAnAccessToken)
        #expect(await check(introspector, "keycloak-refresh")?.reason == .notAnAccessToken)
        #expect(await check(introspector, "bearer") == nil)

        let other = Server()
        other.set("foreign", #"{"active":true,"iss":"https://evil.example.com"}"#)
        let (strict, _) = try self.introspector(other)
        #expect(await check(strict, "foreign")?.reason == .jose(.issuerMismatch))
    }
}
