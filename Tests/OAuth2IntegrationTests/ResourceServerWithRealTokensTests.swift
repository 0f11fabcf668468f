import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2JOSE
import OAuth2TestSupport
import OAuth2Web
import Testing

extension Integration {
    /// OAuth2Web's resource server fed access tokens that real authorization servers issued:
    /// Glewlwyd's JWTs (RFC 9068), checked with the keys of its `jwks_uri`, and
    /// django-oauth-toolkit's opaque tokens, checked at its introspection endpoint (RFC 7662).
    @Suite struct ResourceServerWithRealTokens {
        /// The API that Glewlwyd tokens of scope `read` may be asked for (RFC 8707); glewlwyd.sh
        /// allows it.
        static let glewlwydResource = URL(string: Server.env("OAUTH2_TEST_GLEWLWYD_RESOURCE", "https://api.example.test/orders"))!

        /// A verifier that trusts Glewlwyd for `audience`, with the keys its discovery document
        /// names.
        func glewlwydVerifier(_ client: OAuth2Client, audience: String) throws -> AccessTokenVerifier {
            let jwksURI = try #require(client.metadata.jwksURI, "Glewlwyd's OpenID document has a jwks_uri")
            let issuer = TrustedIssuer(
                issuer: Server.glewlwyd.issuer.absoluteString, audiences: [audience],
                keys: try .jwks(jwksURI, environment: HTTPEnvironment(transport: TransportKind.urlSession.transport)))
            return AccessTokenVerifier(issuers: [issuer])
        }

        /// A request to the API carrying `token` as a bearer token.
        func request(bearer token: String) -> HTTPRequest {
            HTTPRequest(method: .get, scheme: "https", authority: "api.example.test", path: "/orders", headerFields: [.authorization: "Bearer \(token)"])
        }


        @Test func glewlwydsClientCredentialsTokenForTheAPIIsAcceptedWithWhatGlewlwydIssued() async throws {
            let client = try await Server.glewlwyd.client(Server.glewlwyd.clientCredentials())
            let resource = Self.glewlwydResource.absoluteString
            let tokens = try await client.requestToken(
                Grant(type: "client_credentials", parameters: [("scope", "read"), ("resource", resource)], requestedScopes: ["read"]))
            #expect(try JWS(compact: tokens.accessToken).type == "at+jwt", "Glewlwyd types its access tokens as RFC 9068 asks")

            let verifier = try glewlwydVerifier(client, audience: resource)
            let verified = try await verifier.verify(tokens.accessToken, requiredScopes: ["read"])
            #expect(verified.format == .jwt)
            #expect(verified.issuer == Server.glewlwyd.issuer.absoluteString)
            #expect(verified.audience == [resource], "the resource indicator becomes the token's aud")
            #expect(verified.clientID == Server.glewlwyd.clientCredentials().clientID)
            #expect(verified.subject == verified.clientID, "a client's own token: sub is its client_id (RFC 9068 §2.2)")
            #expect(verified.scopes == ["read"])
            #expect(verified.jwtID?.isEmpty == false)
            #expect(verified.expiresAt.map { $0 > Date() } ?? false)

            // The same token in a request to the API, through the framework-neutral core.
            switch await ResourceServer(accessTokens: verifier).authorize(request(bearer: tokens.accessToken), requiredScopes: ["read"]) {
            case .authorized(let access):
                #expect(access.token.clientID == verified.clientID)
                #expect(access.scheme == .bearer)
            case .refused(let challenge):
                Issue.record("Glewlwyd's token was refused: \(challenge.status)")
            }
            let missing = await #expect(throws: AccessTokenError.self) { try await verifier.verify(tokens.accessToken, requiredScopes: ["write"]) }
            #expect(missing?.code == .insufficientScope)
        }

        @Test func glewlwydsAuthorizationCodeTokenNamesTheUserOfTheIDToken() async throws {
            let configuration = Server.glewlwyd.confidential()
            let client = try await Server.glewlwyd.client(configuration)
            let request = try client.authorizationRequest(AuthorizationOptions(resources: [Self.glewlwydResource]))
            let callback = try await Server.glewlwyd.authorize(request, clientID: configuration.clientID)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            let idToken = try JWS(compact: try #require(tokens.idToken)).claims()

            let verified = try await glewlwydVerifier(client, audience: Self.glewlwydResource.absoluteString)
                .verify(tokens.accessToken, requiredScopes: ["read"])
            #expect(verified.subject != nil)
            #expect(verified.subject == idToken["sub"]?.stringValue, "the access token's sub is the user's, as in the ID token")
            #expect(verified.subject != configuration.clientID)
            #expect(verified.clientID == configuration.clientID)
            #expect(verified.scopes == ["openid", "read"])
        }

        @Test func glewlwydsPasswordGrantIgnoresTheResourceAndItsTokenIsRefusedForTheAPI() async throws {
            let configuration = Server.glewlwyd.passwordClient()
            let client = try await Server.glewlwyd.client(configuration)
            let tokens = try await client.requestToken(
                Grant(
                    type: "password",
                    parameters: [
                        ("username", Server.username), ("password", Server.password), ("scope", "openid read"),
                        ("resource", Self.glewlwydResource.absoluteString),
                    ]))
            // Glewlwyd 2.7.5 reads `resource` at its authorization and client-credentials
            // endpoints only: a password grant's aud is the granted scopes, as one string.
            #expect(try JWS(compact: tokens.accessToken).claims()["aud"] == .string("openid read"))
            let verifier = try glewlwydVerifier(client, audience: Self.glewlwydResource.absoluteString)
            let error = await #expect(throws: AccessTokenError.self) { try await verifier.verify(tokens.accessToken) }
            #expect(error?.code == .invalidToken)
            #expect(error?.reason == AccessTokenError.Reason(.audienceMismatch))
        }

        /// The API's client at DOT (its own credentials) and an introspector through it whose
        /// clock the test moves; `counter` sees each introspection call. DOT's answers carry no
        /// `aud`: the API serves the password client `pw`, and says so.
        func dotIntrospector(maximumLifetime: TimeInterval, date: ManualDate, counter: RequestCounter) async throws -> TokenIntrospector {
            let api = ClientConfiguration(
                clientID: Server.env("OAUTH2_TEST_DOT_API_ID", "orders-api"), clientSecret: Server.env("OAUTH2_TEST_DOT_API_SECRET", "orders-api-secret"))
            let client = try await Server.dot.client(api, interceptors: [counter])
            return TokenIntrospector(
                client: client, accepting: .clientIDs([Server.dot.passwordClient().clientID]), issuer: nil, policy: TokenIntrospector.Policy(maximumLifetime: maximumLifetime),
                logger: Logger(label: "integration"), now: date.function)
        }

        @Test func dotsOpaqueTokenIsAcceptedThenAnsweredFromTheCacheAndRefusedOnceRevokedAndTheCacheLapsed() async throws {
            let holder = try await Server.dot.client(Server.dot.passwordClient())
            let tokens = try await holder.password(username: Server.username, password: Server.password)
            #expect(throws: JOSEError.self, "DOT's access tokens are opaque") { try JWS(compact: tokens.accessToken) }
            let date = ManualDate()
            let counter = RequestCounter()
            let introspector = try await dotIntrospector(maximumLifetime: 30, date: date, counter: counter)

            let verified = try await introspector.verify(tokens.accessToken, requiredScopes: ["read"])
            #expect(verified.format == .introspected)
            #expect(verified.clientID == Server.dot.passwordClient().clientID)
            #expect(verified.scopes == ["read"])
            // DOT answers with `username`, not `sub`, and without `iss`: the issuer is the one
            // the API's client discovered.
            #expect(verified.subject == nil)
            #expect(verified.claims["username"] == .string(Server.username))
            #expect(verified.issuer == Server.dot.issuer.absoluteString)
            #expect(verified.expiresAt.map { $0 > Date() } ?? false)
            #expect(counter.count(.introspection) == 1)

            _ = try await introspector.verify(tokens.accessToken, requiredScopes: ["read"])
            #expect(counter.count(.introspection) == 1, "the second check is answered from the cache")

            try await holder.revoke(tokens.accessToken, hint: .accessToken)
            date.advance(by: 29)
            // Within the cache's lifetime a revocation is not seen: the staleness the policy allows.
            #expect(try await introspector.verify(tokens.accessToken).clientID == verified.clientID)
            #expect(counter.count(.introspection) == 1)

            date.advance(by: 2)
            let revoked = await #expect(throws: AccessTokenError.self) { try await introspector.verify(tokens.accessToken) }
            #expect(revoked?.code == .invalidToken)
            #expect(revoked?.reason == .inactive, "DOT answers active: false for the revoked token")
            #expect(counter.count(.introspection) == 2)
        }

        /// DOT's answers carry no `aud`: the API names the clients it serves, and an active token
        /// DOT issued to another client (the client-credentials client `cc`, scope `read` like
        /// the served one) is refused, at the introspector and through the resource server.
        @Test func aTokenDOTIssuedToAnotherClientIsRefused() async throws {
            let counter = RequestCounter()
            let introspector = try await dotIntrospector(maximumLifetime: 30, date: ManualDate(), counter: counter)
            let foreign = try await Server.dot.client(Server.dot.clientCredentials()).clientCredentials()
            let error = await #expect(throws: AccessTokenError.self) { try await introspector.verify(foreign.accessToken, requiredScopes: ["read"]) }
            #expect(error?.code == .invalidToken)
            #expect(error?.reason == AccessTokenError.Reason(.audienceMismatch))
            #expect(counter.count(.introspection) == 1, "DOT was asked, and said the token is active")

            switch await ResourceServer(introspection: introspector).authorize(request(bearer: foreign.accessToken)) {
            case .authorized:
                Issue.record("a token of another client was accepted")
            case .refused(let challenge):
                #expect(challenge.status == .unauthorized)
                #expect(challenge.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
            }

            // The served client's token, through the same introspector, is accepted.
            let served = try await Server.dot.client(Server.dot.passwordClient()).password(username: Server.username, password: Server.password)
            #expect(try await introspector.verify(served.accessToken, requiredScopes: ["read"]).clientID == Server.dot.passwordClient().clientID)
        }

        @Test func aTokenDOTNeverIssuedIsRefused() async throws {
            let counter = RequestCounter()
            let introspector = try await dotIntrospector(maximumLifetime: 30, date: ManualDate(), counter: counter)
            let made = "madeUp" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
            let error = await #expect(throws: AccessTokenError.self) { try await introspector.verify(made) }
            #expect(error?.code == .invalidToken)
            #expect(error?.reason == .inactive)
            #expect(counter.count(.introspection) == 1, "DOT was asked")

            // And through the resource server: a 401 with a Bearer challenge.
            switch await ResourceServer(introspection: introspector).authorize(request(bearer: made + "x")) {
            case .authorized:
                Issue.record("a made-up token was accepted")
            case .refused(let challenge):
                #expect(challenge.status == .unauthorized)
                #expect(challenge.headerFields[.wwwAuthenticate]?.contains("Bearer") == true)
            }
            #expect(counter.count(.introspection) == 2)
        }
    }
}
