import Foundation
import HTTPTypes
import OAuth2
import OAuth2InteractiveSignIn
import Testing

/// DPoP, PAR, JWT client authentication and request objects against Glewlwyd (its
/// `seed_extras` clients and instances, see `scripts/test-servers/glewlwyd.sh`).
extension Integration {
    @Suite struct DPoPAgainstGlewlwyd {
        let server = Server.glewlwyd

        @Test(arguments: [JWSAlgorithm.es256, .es384, .edDSA, .ps256, .rs256])
        func aBoundTokenNamesTheKeysThumbprint(algorithm: JWSAlgorithm) async throws {
            let key = try DPoPKey.generate(algorithm)
            var configuration = server.clientCredentials()
            configuration.dpop = DPoPOptions(key: key)
            let recorder = ProofRecorder()
            let client = try await server.client(configuration, interceptors: [recorder])
            let tokens = try await client.clientCredentials()
            #expect(tokens.tokenType == .dpop)
            #expect(tokens.accessTokenKeyThumbprint == key.thumbprint, "cnf.jkt is the RFC 7638 thumbprint of the key")
            #expect(recorder.entries(.token).count == 1)
            #expect(recorder.entries(.token).allSatisfy { $0.proof != nil })
        }

        @Test(arguments: TransportKind.allCases)
        func userInfoWorksWithAProofAndTheSameTokenAsBearerIsRefused(transport: TransportKind) async throws {
            var configuration = server.passwordClient()
            configuration.scopes = ["openid", "read"]
            configuration.dpop = DPoPOptions(key: try DPoPKey.generate())
            let client = try await server.client(configuration, transport: transport)
            let tokens = try await client.password(username: Server.username, password: Server.password)
            #expect(tokens.tokenType == .dpop)
            let me = try await client.userInfo(for: tokens)
            #expect(me.subject == tokens.idTokenClaims?.subject)
            // The very token, sent as a Bearer token: the server refuses it.
            do {
                _ = try await client.userInfo(accessToken: tokens.accessToken, tokenType: .bearer, expectedSubject: nil)
                Issue.record("the server accepted a DPoP-bound token as a Bearer token")
            } catch let error as OAuth2Error {
                #expect(error.statusCode == 401)
                #expect(!error.description.contains(tokens.accessToken))
            }
            let userInfo = try #require(client.metadata.userInfoEndpoint)
            let (bearer, _) = try await client.perform(HTTPRequest(method: .get, url: userInfo), with: TokenSet(accessToken: tokens.accessToken))
            #expect(bearer.status.code == 401)
            let (proven, body) = try await client.perform(HTTPRequest(method: .get, url: userInfo), with: tokens)
            #expect(proven.status.code == 200)
            #expect(String(decoding: body, as: UTF8.self).contains(me.subject))
        }

        @Test func theCodeFlowBindsTheCodeAndEveryRefresh() async throws {
            let key = try DPoPKey.generate(.edDSA)
            var configuration = server.publicClient()
            configuration.dpop = DPoPOptions(key: key)
            let recorder = ProofRecorder()
            let client = try await server.client(configuration, interceptors: [recorder])
            let request = try client.authorizationRequest()
            #expect(request.url.absoluteString.contains("dpop_jkt=\(key.thumbprint)"))
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.accessTokenKeyThumbprint == key.thumbprint)
            let refreshed = try await client.refresh(tokens)
            #expect(refreshed.tokenType == .dpop)
            #expect(refreshed.accessToken != tokens.accessToken)
            #expect(refreshed.accessTokenKeyThumbprint == key.thumbprint)
            #expect(recorder.entries(.token).count == 2)
            #expect(recorder.entries(.token).allSatisfy { $0.proof != nil })
            // The refresh token is bound too: another key cannot use it.
            let thief = client.withDPoP(DPoPOptions(key: try DPoPKey.generate()))
            do {
                _ = try await thief.refresh(tokens)
                Issue.record("a refresh token was used with another DPoP key")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidDPoPProof)
            }
        }

        @Test func aCodeBoundByDPoPJKTCannotBeRedeemedWithAnotherKey() async throws {
            var configuration = server.confidential()
            configuration.dpop = DPoPOptions(key: try DPoPKey.generate())
            let client = try await server.client(configuration)
            let request = try client.authorizationRequest()
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let other = client.withDPoP(DPoPOptions(key: try DPoPKey.generate()))
            do {
                _ = try await other.completeAuthorization(callbackURL: callback, request: request)
                Issue.record("a code bound to one key was redeemed with another")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidDPoPProof)
            }
        }

        @Test func theDeviceGrantIsBoundToo() async throws {
            let key = try DPoPKey.generate()
            var configuration = server.deviceConfiguration()
            configuration.dpop = DPoPOptions(key: key)
            let recorder = ProofRecorder()
            let client = try await server.client(configuration, interceptors: [recorder])
            let authorization = try await client.startDeviceAuthorization()
            try await server.decideDevice(userCode: authorization.userCode, clientID: configuration.clientID, scopes: configuration.scopes)
            let tokens = try await client.pollDeviceToken(authorization)
            #expect(tokens.tokenType == .dpop)
            #expect(tokens.accessTokenKeyThumbprint == key.thumbprint)
            #expect(!recorder.entries(.token).isEmpty && recorder.entries(.token).allSatisfy { $0.proof != nil })
        }

        @Test func aServerNonceRoundTrip() async throws {
            var configuration = server.passwordClient()
            configuration.scopes = ["openid", "read"]
            configuration.dpop = DPoPOptions(key: try DPoPKey.generate())
            let recorder = ProofRecorder()
            let client = try await server.client(configuration, issuer: Server.glewlwydNonceIssuer, interceptors: [recorder])
            let tokens = try await client.password(username: Server.username, password: Server.password)
            #expect(tokens.tokenType == .dpop)
            let first = recorder.entries(.token)
            #expect(first.count == 2, "refused for want of a nonce, then sent again with it")
            #expect(first[0].nonce == nil)
            #expect(first[1].nonce != nil)
            #expect(await client.dpopNonces.nonce(for: Server.glewlwydNonceIssuer) != nil)
            // The nonce is remembered: the next requests carry it (or the next one the server
            // announced) at once.
            for _ in 0..<6 { _ = try await client.refresh(tokens) }
            #expect(recorder.entries(.token).count == 2 + 6, "no further nonce refusal")
            #expect(recorder.entries(.token).dropFirst().allSatisfy { $0.nonce != nil })
            let me = try await client.userInfo(for: tokens)
            #expect(me.subject == tokens.idTokenClaims?.subject)
            #expect(recorder.entries(.userInfo).allSatisfy { $0.nonce != nil })
        }

        @Test func theResourceServersNonceChallengeIsAnswered() async throws {
            var configuration = server.passwordClient()
            configuration.scopes = ["openid", "read"]
            configuration.dpop = DPoPOptions(key: try DPoPKey.generate())
            let recorder = ProofRecorder()
            let tokenClient = try await server.client(configuration, issuer: Server.glewlwydNonceIssuer)
            let tokens = try await tokenClient.password(username: Server.username, password: Server.password)
            // A fresh client (no nonce yet) asks the UserInfo endpoint: Glewlwyd answers
            // `WWW-Authenticate: DPoP error="use_dpop_nonce"` and the request is sent again.
            let fresh = try await server.client(configuration, issuer: Server.glewlwydNonceIssuer, interceptors: [recorder])
            let me = try await fresh.userInfo(for: tokens)
            #expect(me.subject == tokens.idTokenClaims?.subject)
            let sent = recorder.entries(.userInfo)
            #expect(sent.count == 2)
            #expect(sent.first?.nonce == nil)
            #expect(sent.last?.nonce != nil)
        }

        @Test func aRestartedProcessKeepsItsBoundTokensWorking() async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-dpop-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            var configuration = server.passwordClient()
            configuration.scopes = ["openid", "read"]
            configuration.dpop = DPoPOptions(key: try DPoPKey.generate())
            let first = try await server.client(configuration)
            let tokens = try await first.password(username: Server.username, password: Server.password)
            let session = try await TokenSession(client: first, tokens: tokens, store: try FileTokenStore(directory: directory))
            let userInfo = try #require(first.metadata.userInfoEndpoint)
            #expect(try await session.perform(HTTPRequest(method: .get, url: userInfo)).0.status.code == 200)

            // "Later", in another process: a new client, which made a key of its own, and the
            // same store. The stored key comes back with the tokens.
            configuration.dpop = DPoPOptions(key: try DPoPKey.generate())
            let second = try await server.client(configuration)
            let restored = try #require(try await TokenSession.restore(client: second, store: try FileTokenStore(directory: directory)))
            let stored = try #require(restored.client.configuration.dpop?.key)
            #expect(stored.thumbprint == tokens.accessTokenKeyThumbprint)
            let (answer, body) = try await restored.perform(HTTPRequest(method: .get, url: userInfo))
            #expect(answer.status.code == 200)
            #expect(String(decoding: body, as: UTF8.self).contains(try #require(tokens.idTokenClaims?.subject)))
            let refreshed = try await restored.refresh()
            #expect(refreshed.accessTokenKeyThumbprint == stored.thumbprint, "renewed with the stored key")
            #expect(try await restored.perform(HTTPRequest(method: .get, url: userInfo)).0.status.code == 200)
            await #expect(throws: OAuth2Error.self, "the new process's own key does not fit the stored tokens") {
                _ = try await second.refresh(refreshed)
            }
        }
    }

    @Suite struct PushedAuthorizationAgainstGlewlwyd {
        let server = Server.glewlwyd

        func query(_ url: URL) -> Set<String> {
            Set(URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.map(\.name) ?? [])
        }

        @Test(arguments: [ClientAuthenticationMethod.clientSecretBasic, .clientSecretPost])
        func aConfidentialClientPushesOnRequest(method: ClientAuthenticationMethod) async throws {
            var configuration = server.confidential(method)
            configuration.usePushedAuthorizationRequests = true
            let counter = RequestCounter()
            let client = try await server.client(configuration, interceptors: [counter])
            #expect(client.metadata.requirePushedAuthorizationRequests == false)
            let request = try await client.startAuthorization()
            #expect(counter.count(.pushedAuthorization) == 1)
            #expect(query(request.url) == ["client_id", "request_uri"])
            #expect(request.requestURI?.hasPrefix("urn:ietf:params:oauth:request_uri:") == true)
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.idToken != nil)
        }

        @Test func aPublicDPoPClientPushesWithAProof() async throws {
            let key = try DPoPKey.generate()
            var configuration = server.publicClient()
            configuration.dpop = DPoPOptions(key: key)
            let recorder = ProofRecorder()
            let client = try await server.client(configuration, interceptors: [recorder])
            let request = try await client.pushAuthorizationRequest()
            #expect(recorder.entries(.pushedAuthorization).first?.proof != nil)
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.accessTokenKeyThumbprint == key.thumbprint)
        }

        @Test func aServerThatRequiresPushedRequestsGetsThemUnasked() async throws {
            let configuration = server.confidential()
            let counter = RequestCounter()
            let client = try await server.client(configuration, issuer: Server.glewlwydPARIssuer, interceptors: [counter])
            #expect(client.metadata.requirePushedAuthorizationRequests == true)
            #expect(client.pushesAuthorizationRequests)
            #expect(throws: OAuth2Error.self) { try client.authorizationRequest() }
            let browser = Browser()
            let request = try await client.startAuthorization()
            #expect(counter.count(.pushedAuthorization) == 1)
            let callback = try await server.authorize(request, clientID: configuration.clientID, browser: browser)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.idToken != nil)
            // The same parameters by value: the server refuses them.
            var fields = client.metadata.fields
            fields["require_pushed_authorization_requests"] = false
            let byValue = try OAuth2Client(metadata: try ServerMetadata(fields: fields), configuration: configuration).authorizationRequest()
            let (answer, _) = try await browser.get(URL(string: byValue.url.absoluteString + "&g_continue")!)
            #expect(answer.status.kind != .redirection, "the server answered a by-value request with \(answer.status.code)")
        }

        @Test func theLoopbackSignInPushesWhenTheServerRequiresIt() async throws {
            let key = try DPoPKey.generate()
            var configuration = server.publicClient()
            configuration.dpop = DPoPOptions(key: key)
            let counter = RequestCounter()
            let client = try await server.client(configuration, issuer: Server.glewlwydPARIssuer, interceptors: [counter])
            let (port, path) = LoopbackSignInAgainstRealServers.signIn(for: server)
            let pages = PageLog()
            let signIn = LoopbackSignIn(
                port: port, callbackPath: path, timeout: .seconds(60),
                browser: LoopbackSignInAgainstRealServers.browser(
                    server, clientID: configuration.clientID, scopes: configuration.scopes, session: Browser(), pages: pages),
                output: TextCapture())
            let tokens = try await LoopbackSignInAgainstRealServers.withFreePort { try await signIn.signIn(client: client) }
            #expect(counter.count(.pushedAuthorization) == 1)
            #expect(tokens.accessTokenKeyThumbprint == key.thumbprint)
            #expect(pages.all.first?.response.status.code == 200)
        }

        @Test func aRefusedPushIsTypedLikeATokenError() async throws {
            var configuration = server.confidential()
            configuration.clientSecret = "wrong-secret"
            configuration.usePushedAuthorizationRequests = true
            let client = try await server.client(configuration)
            do {
                _ = try await client.startAuthorization()
                Issue.record("a push with a wrong secret was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidClient)
                #expect(!error.description.contains("wrong-secret"))
            }
        }

        @Test func aPrivateKeyJWTClientPushesASignedRequestObject() async throws {
            var configuration = Server.jwtKeyClient(try Server.jwtClientKey("jwt-client-ec.jwk.json"))
            configuration.requestObject = RequestObjectOptions()
            configuration.usePushedAuthorizationRequests = true
            let client = try await server.client(configuration)
            let request = try await client.startAuthorization()
            #expect(query(request.url) == ["client_id", "request_uri"])
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.idToken != nil)
        }
    }

    @Suite struct JWTClientAuthenticationAgainstGlewlwyd {
        let server = Server.glewlwyd

        @Test(arguments: TransportKind.allCases)
        func clientSecretJWTIsAcceptedEverywhere(transport: TransportKind) async throws {
            let configuration = Server.jwtSecretClient(scopes: ["read"])
            let client = try await server.client(configuration, transport: transport)
            let tokens = try await client.clientCredentials()
            #expect(!tokens.accessToken.isEmpty)
            #expect(try await client.introspect(tokens.accessToken).active)
            try await client.revoke(tokens.accessToken)
            #expect(try await !client.introspect(tokens.accessToken).active)
        }

        @Test func clientSecretJWTWithAWrongSecretIsRefused() async throws {
            let client = try await server.client(Server.jwtSecretClient(secret: "not-the-secret-0123456789abcdef012345", scopes: ["read"]))
            do {
                _ = try await client.clientCredentials()
                Issue.record("an assertion signed with a wrong secret was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidClient)
            }
        }

        @Test(arguments: [
            ("jwt-client-rsa.pem", JWSAlgorithm.rs256, "rsa-1"), ("jwt-client-rsa.pem", .ps256, "rsa-1"),
            ("jwt-client-ec.jwk.json", .es256, "ec-1"), ("jwt-client-ed25519.pem", .edDSA, "ed-1"),
        ])
        func privateKeyJWTIsAccepted(file: String, algorithm: JWSAlgorithm, keyID: String) async throws {
            let key = try Server.jwtClientKey(file, algorithm: algorithm, keyID: keyID)
            #expect(key.algorithm == algorithm)
            let client = try await server.client(Server.jwtKeyClient(key, scopes: ["read"]))
            let tokens = try await client.clientCredentials()
            #expect(!tokens.accessToken.isEmpty)
            #expect(try await client.introspect(tokens.accessToken).active)
        }

        @Test func privateKeyJWTWithAWrongKeyIsRefused() async throws {
            let impostor = try JWSSigningKey.generate(.es256, keyID: "ec-1")
            let client = try await server.client(Server.jwtKeyClient(impostor, scopes: ["read"]))
            do {
                _ = try await client.clientCredentials()
                Issue.record("an assertion signed with an unregistered key was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidClient)
            }
        }

        @Test func theAudienceIsConfigurable() async throws {
            // Glewlwyd checks `aud` against the endpoint's URL; the issuer (the default) is refused.
            var configuration = Server.jwtKeyClient(try Server.jwtClientKey("jwt-client-ec.jwk.json"), scopes: ["read"])
            configuration.clientAssertion.audience = .issuer
            let strict = try await server.client(configuration)
            await #expect(throws: OAuth2Error.self) { _ = try await strict.clientCredentials() }
            configuration.clientAssertion.audience = .tokenEndpoint
            let tokenEndpoint = try await server.client(configuration)
            #expect(try await !tokenEndpoint.clientCredentials().accessToken.isEmpty)
        }

        @Test func privateKeyJWTWithDPoPAndARequestObjectByValue() async throws {
            let key = try DPoPKey.generate()
            var configuration = Server.jwtKeyClient(try Server.jwtClientKey("jwt-client-ed25519.pem", keyID: "ed-1"))
            configuration.requestObject = RequestObjectOptions()
            configuration.dpop = DPoPOptions(key: key)
            let client = try await server.client(configuration)
            let request = try client.authorizationRequest()
            let names = Set(URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems?.map(\.name) ?? [])
            #expect(names.contains("request") && !names.contains("state") && !names.contains("code_challenge"))
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(tokens.accessTokenKeyThumbprint == key.thumbprint)
            let me = try await client.userInfo(for: tokens)
            #expect(me.subject == tokens.idTokenClaims?.subject)
            try await client.revoke(tokens.refreshToken ?? tokens.accessToken)
        }
    }
}
