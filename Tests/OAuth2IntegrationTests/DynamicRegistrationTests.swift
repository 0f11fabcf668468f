import Foundation
import HTTPTypes
import OAuth2
import OAuth2InteractiveSignIn
import OAuth2TestSupport
import Testing

extension Integration {
    /// Dynamic client registration (RFC 7591) and its management (RFC 7592) against the
    /// real servers: Glewlwyd 2.7.5 (its OIDC plugin's `/register`, open registration) and
    /// django-oauth-toolkit 3.4.1 (its built-in DCR views, `DCR_ENABLED` with open
    /// registration).
    @Suite struct DynamicRegistration {
        static func registrar(_ server: Server) async throws -> ClientRegistrar {
            let registrar = try await ClientRegistrar(server: .issuer(server.issuer), environment: HTTPEnvironment(metadataCache: MetadataCache()))
            IntegrationLog.record(server.rawValue)
            return registrar
        }

        /// A loopback redirect URI whose port is free now.
        static func freeRedirect() async throws -> URL {
            let listener = try await LoopbackRedirectListener.start(port: 0)
            let uri = listener.redirectURI
            await listener.close()
            return uri
        }

        /// A browser that signs alice in on Glewlwyd's pages, consents for the client the URL
        /// names, and follows the redirect to the listener.
        static func glewlwydBrowser(scopes: [String]) -> BrowserChoice {
            .custom { url in
                do {
                    let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
                    let clientID = try #require(items.first(where: { $0.name == "client_id" })?.value)
                    let session = Browser()
                    let callback = try await Server.glewlwyd.authorize(url: url, scopes: scopes, clientID: clientID, browser: session)
                    _ = try await session.get(callback)
                    return true
                } catch {
                    Issue.record("the browser failed: \(error)")
                    return false
                }
            }
        }

        @Test func glewlwydRegistrationThenSignInThenReadUpdateDelete() async throws {
            let registrar = try await Self.registrar(.glewlwyd)
            let redirect = try await Self.freeRedirect()
            var metadata = RegistrationMetadata(
                redirectURIs: [redirect], grantTypes: ["authorization_code", "refresh_token", "client_credentials"], responseTypes: ["code"],
                tokenEndpointAuthMethod: .clientSecretBasic, clientName: "swift-oauth2 integration", scopes: ["openid", "read"],
                contacts: ["ops@example.com"], logoURI: URL(string: "https://example.com/logo.png")!)
            metadata.additionalMembers["application_type"] = "native"
            let registration = try await registrar.register(metadata)
            #expect(!registration.clientID.isEmpty)
            let secret = try #require(registration.clientSecret, "a confidential client gets a secret")
            #expect(registration.isManageable, "Glewlwyd offers RFC 7592 management")
            #expect(registration.registrationClientURI?.host == registrar.metadata.registrationEndpoint?.host)
            #expect(registration.metadata.redirectURIs == [redirect])
            #expect(registration.metadata.clientName == "swift-oauth2 integration")
            #expect(registration.metadata.tokenEndpointAuthMethod == .clientSecretBasic)
            #expect(!registration.description.contains(secret))

            // A real sign-in with the new client, through the loopback listener.
            let client = try registrar.client(for: registration, base: ClientConfiguration(clientID: "", scopes: ["openid", "read"]))
            #expect(client.configuration.redirectURI == redirect)
            let signIn = LoopbackSignIn(
                port: redirect.port ?? 0, callbackPath: redirect.path, timeout: .seconds(60),
                browser: Self.glewlwydBrowser(scopes: ["openid", "read"]), output: TextCapture())
            let tokens = try await Integration.LoopbackSignInAgainstRealServers.withFreePort {
                try await signIn.signIn(client: client, options: AuthorizationOptions(scopes: ["openid", "read"]))
            }
            #expect(tokens.idTokenClaims?.audiences.contains(registration.clientID) == true, "the ID token is for the new client")
            let refreshed = try await client.refresh(tokens)
            #expect(!refreshed.accessToken.isEmpty, "the new client authenticates with its new secret")

            // RFC 7592: read, update (in full), read again.
            let read = try await registrar.read(registration)
            #expect(read.clientID == registration.clientID)
            #expect(read.metadata.redirectURIs == [redirect])
            #expect(read.metadata.tokenEndpointAuthMethod == .clientSecretBasic, "Glewlwyd's array form is understood")
            #expect(read.registrationAccessToken == registration.registrationAccessToken, "kept: Glewlwyd does not repeat it")
            var changed = read.metadata
            changed.clientName = "swift-oauth2 renamed"
            let updated = try await registrar.update(read, to: changed)
            #expect(updated.metadata.clientName == "swift-oauth2 renamed")
            let again = try await registrar.read(updated)
            #expect(again.metadata.clientName == "swift-oauth2 renamed")
            // Glewlwyd issues a new secret on update: the saved registration has the one that works.
            let updatedClient = try registrar.client(for: again)
            _ = try await updatedClient.refresh(refreshed)

            // Before the delete the token endpoint knows the client: it authenticates, and
            // Glewlwyd refuses only the scope (registered clients get no client_credentials scope).
            do {
                _ = try await updatedClient.clientCredentials(scopes: ["read"])
                Issue.record("Glewlwyd gave a registered client a client_credentials scope")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidScope, "\(error)")
            }

            // Delete: the registration and the client are gone.
            try await registrar.delete(again)
            do {
                _ = try await registrar.read(again)
                Issue.record("a deleted registration was read")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidToken)
                #expect(error.statusCode == 401)
            }
            do {
                _ = try await updatedClient.refresh(refreshed)
                Issue.record("a deleted client refreshed a token")
            } catch let error as OAuth2Error {
                // Glewlwyd answers the refresh of a deleted client with an empty 400 (read as
                // invalid_grant: the grant died with its client), a token request of an unknown
                // client with an empty 403 (invalid_client).
                #expect(error.code == .invalidGrant && error.statusCode == 400, "\(error)")
                #expect(error.requiresReauthorization)
                #expect(!error.description.contains(again.clientSecret ?? "-"))
            }
            do {
                _ = try await updatedClient.clientCredentials(scopes: ["read"])
                Issue.record("a deleted client got a token")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidClient, "an unknown client now: \(error)")
            }
        }

        @Test func glewlwydSignInRegistersWhenTheConfigurationHasNoClientID() async throws {
            let registrar = try await Self.registrar(.glewlwyd)
            let store = MemoryTokenStore()
            let signIn = LoopbackSignIn(timeout: .seconds(60), browser: Self.glewlwydBrowser(scopes: ["openid", "read"]), output: TextCapture())
            let result = try await signIn.signIn(
                registrar: registrar, configuration: ClientConfiguration(clientID: "", scopes: ["openid", "read"]),
                registering: RegistrationMetadata(clientName: "swift-oauth2 auto"), store: store,
                options: AuthorizationOptions(scopes: ["openid", "read"]))
            let registration = try #require(result.registration, "no client id: a client was registered")
            #expect(result.client.configuration.clientID == registration.clientID)
            #expect(registration.metadata.redirectURIs.count == 1, "the listener's redirect URI was registered")
            #expect(registration.metadata.redirectURIs.first?.host == "127.0.0.1")
            #expect(result.tokens.idTokenClaims?.audiences.contains(registration.clientID) == true)
            // The credentials are in the store, and work from there after a "restart".
            let stored = try #require(try await store.loadRegistration(issuer: registrar.issuer, clientID: registration.clientID))
            #expect(stored == registration)
            let restored = try registrar.client(for: stored, base: ClientConfiguration(clientID: "", scopes: ["openid", "read"]))
            let session = try await TokenSession(client: restored, tokens: result.tokens, store: store)
            _ = try await session.refresh()
            try await registrar.delete(stored)
            try await store.removeRegistration(issuer: registrar.issuer, clientID: registration.clientID)
        }

        /// Glewlwyd's `oidc-reg` instance wants an initial access token: an access token of
        /// that instance with scope `read`, here the cc client's (RFC 7591 §3).
        @Test func glewlwydRegistrationWithAnInitialAccessToken() async throws {
            let issuer = URL(string: Server.env("OAUTH2_TEST_GLEWLWYD_REG_ISSUER", "http://127.0.0.1:4593/api/oidc-reg"))!
            let registrar = try await ClientRegistrar(server: .issuer(issuer), environment: HTTPEnvironment(metadataCache: MetadataCache()))
            IntegrationLog.record(Server.glewlwyd.rawValue)
            let metadata = RegistrationMetadata(redirectURIs: [Server.redirectURI], clientName: "swift-oauth2 with initial token")
            for token in [nil, "not-a-token"] {
                do {
                    let registration = try await registrar.register(metadata, initialAccessToken: token)
                    Issue.record("registered with initial access token \(token ?? "none"): \(registration)")
                } catch let error as OAuth2Error {
                    #expect(error.code == .invalidToken, "Glewlwyd's empty 401")
                    #expect(error.statusCode == 401)
                    #expect(!error.description.contains("not-a-token"))
                }
            }
            let machine = try OAuth2Client(metadata: registrar.metadata, configuration: Server.glewlwyd.clientCredentials())
            let initial = try await machine.clientCredentials(scopes: ["read"]).accessToken
            let registration = try await registrar.register(metadata, initialAccessToken: initial)
            #expect(!registration.clientID.isEmpty)
            #expect(registration.metadata.clientName == "swift-oauth2 with initial token")
            try await registrar.delete(registration)
        }

        @Test func aConfiguredClientIDRegistersNothing() async throws {
            let registrar = try await Self.registrar(.glewlwyd)
            let (client, registration) = try await registrar.client(for: Server.glewlwyd.confidential())
            #expect(registration == nil)
            #expect(client.configuration.clientID == Server.glewlwyd.confidential().clientID)
        }

        /// A browser that signs alice in on DOT's pages and, since DOT asks consent for a
        /// dynamically registered client (its `skip_authorization` is off), posts the consent
        /// form as a user clicking "Authorize" would, then follows the redirect to the listener.
        static func dotBrowser() -> BrowserChoice {
            .custom { url in
                do {
                    let session = Browser()
                    try await Server.dot.logIn(clientID: "", scopes: [], browser: session)
                    let (page, body) = try await session.get(url)
                    try #require(page.status.code == 200, "DOT shows its consent form")
                    var fields = Browser.hiddenInputs(String(decoding: body, as: UTF8.self))
                    try #require(fields.contains { $0.0 == "csrfmiddlewaretoken" })
                    fields.append(("allow", "Authorize"))
                    let (response, _) = try await session.form(url, fields)
                    let location = try #require(response.headerFields[.location], "DOT redirects after consent")
                    _ = try await session.get(try #require(URL(string: location, relativeTo: url)?.absoluteURL))
                    return true
                } catch {
                    Issue.record("the browser failed: \(error)")
                    return false
                }
            }
        }

        @Test func dotSignInRegistersWhenTheConfigurationHasNoClientIDAndTheDeletedClientIsRefused() async throws {
            let registrar = try await Self.registrar(.dot)
            let store = MemoryTokenStore()
            let signIn = LoopbackSignIn(timeout: .seconds(60), browser: Self.dotBrowser(), output: TextCapture())
            let result = try await signIn.signIn(
                registrar: registrar, configuration: ClientConfiguration(clientID: "", scopes: ["read"]),
                registering: RegistrationMetadata(tokenEndpointAuthMethod: .clientSecretBasic, clientName: "swift-oauth2 auto"), store: store,
                options: AuthorizationOptions(scopes: ["read"]))
            let registration = try #require(result.registration)
            #expect(registration.clientSecret != nil)
            #expect(result.client.configuration.clientID == registration.clientID)
            #expect(!result.tokens.accessToken.isEmpty)
            let refreshed = try await result.client.refresh(result.tokens)
            #expect(refreshed.refreshToken != result.tokens.refreshToken, "DOT rotates; the new client authenticated")
            try await registrar.delete(registration)
            do {
                _ = try await result.client.refresh(refreshed)
                Issue.record("a deleted client refreshed a token")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidClient, "\(error)")
            }
        }

        @Test(arguments: Server.allCases)
        func invalidMetadataIsRefusedWithATypedError(server: Server) async throws {
            let registrar = try await Self.registrar(server)
            let metadata: RegistrationMetadata
            let expected: OAuth2Error.Code
            switch server {
            case .glewlwyd:
                // Glewlwyd allows https:// redirect URIs and plain http:// on loopback only.
                metadata = RegistrationMetadata(redirectURIs: [URL(string: "http://example.com/callback")!])
                expected = .invalidRedirectURI
            case .dot:
                // DOT allows one grant type (besides refresh_token) per client.
                metadata = RegistrationMetadata(redirectURIs: [Server.redirectURI], grantTypes: ["authorization_code", "client_credentials"])
                expected = .invalidClientMetadata
            }
            do {
                let registration = try await registrar.register(metadata)
                Issue.record("\(server) registered \(registration)")
            } catch let error as OAuth2Error {
                #expect(error.code == expected)
                #expect(error.source == .server)
                #expect(error.statusCode == 400)
                #expect(error.message?.isEmpty == false)
            }
            do {
                _ = try await registrar.register(RegistrationMetadata(redirectURIs: [Server.redirectURI], tokenEndpointAuthMethod: "no_such_method"))
                Issue.record("\(server) registered an unknown auth method")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidClientMetadata)
            }
        }

        @Test func dotRegistrationReadUpdateDeleteAndTheDeletedClientIsRefused() async throws {
            let registrar = try await Self.registrar(.dot)
            #expect(registrar.metadata.registrationEndpoint != nil, "found in DOT's RFC 8414 document")
            let metadata = RegistrationMetadata(grantTypes: ["client_credentials"], tokenEndpointAuthMethod: .clientSecretBasic, clientName: "swift-oauth2 machine")
            let registration = try await registrar.register(metadata)
            #expect(registration.clientSecret != nil)
            #expect(registration.isManageable)
            let client = try registrar.client(for: registration, base: ClientConfiguration(clientID: "", scopes: ["read"]))
            let tokens = try await client.clientCredentials()
            #expect(!tokens.accessToken.isEmpty, "the registered client gets tokens")

            let read = try await registrar.read(registration)
            #expect(read.metadata.clientName == "swift-oauth2 machine")
            #expect(read.metadata.grantTypes == ["client_credentials"])
            var changed = read.metadata
            changed.clientName = "swift-oauth2 renamed"
            let updated = try await registrar.update(read, to: changed)
            #expect(updated.metadata.clientName == "swift-oauth2 renamed")
            #expect(updated.registrationAccessToken != registration.registrationAccessToken, "DOT rotates the registration access token on update")
            do {
                _ = try await registrar.read(registration)
                Issue.record("the rotated-out registration access token still works")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidToken)
            }
            try await registrar.delete(updated)
            do {
                _ = try await registrar.read(updated)
                Issue.record("a deleted registration was read")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidToken)
            }
            do {
                _ = try await client.clientCredentials()
                Issue.record("a deleted client got a token")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidClient)
            }
        }
    }
}
