import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// All integration tests run one at a time: the servers keep their state in SQLite.
@Suite(.serialized) struct Integration {}

extension Integration {
    @Suite struct DiscoveryAgainstRealServers {
        @Test(arguments: TransportKind.allCases)
        func glewlwydPublishesEverythingInTheOpenIDDocument(transport: TransportKind) async throws {
            let counter = RequestCounter()
            let client = try await Server.glewlwyd.client(Server.glewlwyd.confidential(), transport: transport, interceptors: [counter])
            #expect(client.metadata.issuer == Server.glewlwyd.issuer.absoluteString)
            #expect(client.metadata.tokenEndpoint != nil)
            #expect(client.metadata.revocationEndpoint != nil)
            #expect(client.metadata.introspectionEndpoint != nil)
            #expect(client.metadata.pushedAuthorizationRequestEndpoint != nil)
            #expect(counter.count(.discovery) == 1, "a complete OpenID document needs no second request")
        }

        @Test(arguments: TransportKind.allCases)
        func dotNeedsBothDocuments(transport: TransportKind) async throws {
            let counter = RequestCounter()
            let client = try await Server.dot.client(Server.dot.confidential(), transport: transport, interceptors: [counter])
            #expect(counter.count(.discovery) == 2)
            #expect(client.metadata.userInfoEndpoint != nil, "from the OpenID document")
            #expect(client.metadata.revocationEndpoint != nil, "filled from the RFC 8414 document")
            #expect(client.metadata.introspectionEndpoint != nil, "filled from the RFC 8414 document")
            #expect(client.metadata.endSessionEndpoint != nil)
        }

        @Test(arguments: Server.allCases)
        func aDifferentlySpelledIssuerIsRejected(server: Server) async throws {
            // The same server, asked for with a trailing slash: its documents name another issuer.
            let issuer = URL(string: server.issuer.absoluteString + "/")!
            do {
                _ = try await OAuth2Client(server: .issuer(issuer), configuration: server.confidential(), environment: HTTPEnvironment(metadataCache: MetadataCache()))
                Issue.record("discovery accepted an issuer that is not the one requested")
            } catch let error as OAuth2Error {
                #expect(error.code == .issuerMismatch || error.code == .httpError)
            }
            IntegrationLog.record(server.rawValue)
        }
    }

    @Suite struct Grants {
        @Test(arguments: Server.allCases, TransportKind.allCases)
        func clientCredentials(server: Server, transport: TransportKind) async throws {
            let client = try await server.client(server.clientCredentials(), transport: transport)
            let tokens = try await client.clientCredentials()
            #expect(!tokens.accessToken.isEmpty)
            #expect(tokens.tokenType == .bearer)
            #expect(tokens.expiresAt.map { $0 > Date() } ?? false)
            #expect(tokens.refreshToken == nil)
        }

        @Test(arguments: Server.allCases, TransportKind.allCases)
        func password(server: Server, transport: TransportKind) async throws {
            let client = try await server.client(server.passwordClient(), transport: transport)
            let tokens = try await client.password(username: Server.username, password: Server.password)
            #expect(!tokens.accessToken.isEmpty)
            #expect(tokens.refreshToken != nil)
        }

        @Test(arguments: Server.allCases, TransportKind.allCases)
        func authorizationCodeWithPKCEForAPublicClient(server: Server, transport: TransportKind) async throws {
            let configuration = server.publicClient()
            let client = try await server.client(configuration, transport: transport)
            let request = try client.authorizationRequest()
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(!tokens.accessToken.isEmpty)
            #expect(tokens.idToken != nil)
            #expect(tokens.refreshToken != nil)
        }

        @Test(arguments: Server.allCases, [ClientAuthenticationMethod.clientSecretBasic, .clientSecretPost])
        func authorizationCodeForAConfidentialClient(server: Server, method: ClientAuthenticationMethod) async throws {
            let configuration = server.confidential(method)
            let client = try await server.client(configuration)
            let request = try client.authorizationRequest()
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            #expect(!tokens.accessToken.isEmpty)
            #expect(tokens.idToken != nil)
        }

        @Test(arguments: TransportKind.allCases)
        func glewlwydRefreshKeepsTheRefreshToken(transport: TransportKind) async throws {
            let server = Server.glewlwyd
            let client = try await server.client(server.passwordClient(), transport: transport)
            let first = try await client.password(username: Server.username, password: Server.password)
            let refreshed = try await client.refresh(first)
            #expect(refreshed.accessToken != first.accessToken)
            #expect(refreshed.refreshToken == first.refreshToken, "Glewlwyd sends no new refresh token: the old one is kept")
            let again = try await client.refresh(refreshed)
            #expect(!again.accessToken.isEmpty, "the kept refresh token still works")
        }

        @Test(arguments: TransportKind.allCases)
        func dotRotatesTheRefreshToken(transport: TransportKind) async throws {
            let server = Server.dot
            let configuration = server.publicClient()
            let client = try await server.client(configuration, transport: transport)
            let request = try client.authorizationRequest()
            let first = try await client.completeAuthorization(
                callbackURL: try await server.authorize(request, clientID: configuration.clientID), request: request)
            let refreshed = try await client.refresh(first)
            #expect(refreshed.refreshToken != nil)
            #expect(refreshed.refreshToken != first.refreshToken, "DOT rotates refresh tokens")
            #expect(refreshed.idToken != nil)
            do {
                _ = try await client.refresh(first)
                Issue.record("the rotated-out refresh token still worked")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidGrant)
                #expect(error.requiresReauthorization)
            }
        }

        @Test(arguments: Server.allCases, TransportKind.allCases)
        func revokeThenIntrospectIsInactive(server: Server, transport: TransportKind) async throws {
            let tokenClient = try await server.client(server.passwordClient(), transport: transport)
            let tokens = try await tokenClient.password(username: Server.username, password: Server.password)
            let active = try await tokenClient.introspect(tokens.accessToken, hint: .accessToken)
            #expect(active.active)
            #expect(active.scopes?.contains("read") == true)
            try await tokenClient.revoke(tokens.accessToken, hint: .accessToken)
            let after = try await tokenClient.introspect(tokens.accessToken, hint: .accessToken)
            #expect(!after.active)
        }
    }

    @Suite struct ErrorsFromRealServers {
        @Test(arguments: Server.allCases, TransportKind.allCases)
        func wrongSecretIsInvalidClient(server: Server, transport: TransportKind) async throws {
            let client = try await server.client(server.clientCredentials(secret: "wrong-secret"), transport: transport)
            do {
                _ = try await client.clientCredentials()
                Issue.record("a wrong secret was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidClient)
                #expect(!error.isTransient)
                #expect(!error.description.contains("wrong-secret"))
                if server == .glewlwyd { #expect(error.statusCode == 403, "Glewlwyd answers with an empty 403") }
            }
        }

        @Test(arguments: Server.allCases)
        func wrongCodeVerifierIsInvalidGrant(server: Server) async throws {
            let configuration = server.publicClient()
            let client = try await server.client(configuration)
            let request = try client.authorizationRequest()
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let response = try AuthorizationResponse(callbackURL: callback, request: request)
            let wrong = try PKCE().verifier
            do {
                _ = try await client.requestToken(.authorizationCode(code: response.code, redirectURI: request.redirectURI, codeVerifier: wrong))
                Issue.record("a wrong code_verifier was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidGrant)
            }
        }

        @Test(arguments: Server.allCases)
        func unknownScopeIsInvalidScope(server: Server) async throws {
            let client = try await server.client(server.clientCredentials())
            do {
                _ = try await client.clientCredentials(scopes: ["no-such-scope"])
                Issue.record("an unknown scope was granted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidScope)
            }
        }

        @Test(arguments: Server.allCases)
        func tamperedStateNeverReachesTheTokenEndpoint(server: Server) async throws {
            let configuration = server.publicClient()
            let counter = RequestCounter()
            let client = try await server.client(configuration, interceptors: [counter])
            let request = try client.authorizationRequest()
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let tampered = URL(string: callback.absoluteString.replacingOccurrences(of: "state=", with: "state=x"))!
            do {
                _ = try await client.completeAuthorization(callbackURL: tampered, request: request)
                Issue.record("a tampered state was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .stateMismatch)
            }
            #expect(counter.count(.token) == 0)
        }

        @Test func mismatchedIssuerParameterIsRejected() async throws {
            let server = Server.glewlwyd  // sends RFC 9207 iss in its authorization responses
            let configuration = server.publicClient()
            let counter = RequestCounter()
            let client = try await server.client(configuration, interceptors: [counter])
            let request = try client.authorizationRequest()
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let response = try AuthorizationResponse(callbackURL: callback, request: request)
            #expect(response.issuer == server.issuer.absoluteString)
            var components = URLComponents(url: callback, resolvingAgainstBaseURL: false)!
            components.queryItems = components.queryItems?.map { $0.name == "iss" ? URLQueryItem(name: "iss", value: "https://evil.example.com") : $0 }
            do {
                _ = try await client.completeAuthorization(callbackURL: components.url!, request: request)
                Issue.record("a foreign iss was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .issuerMismatch)
            }
            #expect(counter.count(.token) == 0)
        }
    }
}
