import Foundation
import HTTPTypes
import OAuth2
import OAuth2InteractiveSignIn
import OAuth2JOSE
import OAuth2TestSupport
import Testing

extension Integration {
    /// The same journey against every server: each feature is checked where the server
    /// offers it, and where it does not, the client must say so with a typed error. The
    /// verdicts go to `$OAUTH2_COMPAT_LOG`, from which `scripts/compat-table` writes
    /// docs/compatibility.md.
    @Suite struct Compatibility {
        @Test(arguments: JourneyServer.allCases, Feature.allCases)
        func feature(server: JourneyServer, feature: Feature) async throws {
            let probe = try await server.client(server.publicClient())
            let availability = server.availability(of: feature, metadata: probe.metadata)
            CompatibilityLog.record(server, feature, .started, evidence: availability.evidence)
            IntegrationLog.record(server.rawValue, variant: "compatibility/\(feature)")
            switch availability {
            case .offered:
                try await Journey(server: server).run(feature)
                CompatibilityLog.record(server, feature, .tested, evidence: availability.evidence)
            case .notOffered:
                try await Journey(server: server).refuse(feature, probe: probe)
                CompatibilityLog.record(server, feature, .notOffered, evidence: availability.evidence)
            case .serverBug(let note):
                await withKnownIssue(Comment(rawValue: note)) {
                    try await Journey(server: server).run(feature)
                }
                CompatibilityLog.record(server, feature, .serverBug, evidence: note)
            }
        }
    }
}

/// One server's journey, feature by feature.
struct Journey {
    let server: JourneyServer

    /// Checks an offered feature end to end.
    func run(_ feature: Feature) async throws {
        switch feature {
        case .discovery:
            let client = try await server.client(server.publicClient())
            #expect(client.metadata.issuer == server.issuer.absoluteString)
            #expect(client.metadata.tokenEndpoint != nil)
            #expect(client.metadata.jwksURI != nil)
        case .signIn:
            let (_, tokens, _) = try await signIn(server.publicClient())
            if server.issuesIDTokens {
                #expect(tokens.idTokenClaims?.subject.isEmpty == false, "a verified ID token")
            }
        case .refresh:
            let (client, first, _) = try await signIn(server.publicClient())
            let refreshed = try await client.refresh(first)
            #expect(refreshed.accessToken != first.accessToken)
            #expect(refreshed.refreshToken != nil, "a rotated refresh token is kept, an unchanged one too")
            let again = try await client.refresh(refreshed)
            #expect(!again.accessToken.isEmpty, "the refresh token the client kept works")
        case .userInfo:
            let (client, tokens, _) = try await signIn(server.publicClient())
            let me = try await client.userInfo(for: tokens)
            #expect(me.subject == tokens.idTokenClaims?.subject)
        case .introspection:
            let (client, tokens) = try await confidentialTokens()
            let answer = try await client.introspect(tokens.accessToken, hint: .accessToken)
            #expect(answer.active)
        case .revocation:
            let (client, tokens) = try await confidentialTokens()
            try await client.revoke(tokens.accessToken, hint: .accessToken)
            if client.metadata.introspectionEndpoint != nil {
                #expect(try await !client.introspect(tokens.accessToken, hint: .accessToken).active, "revoked")
            }
        case .logout where server.logsOutInChromium:
            try await logOutInChromium()
        case .logout:
            let browser = Browser()
            let (client, tokens, _) = try await signIn(server.publicClient(), browser: browser)
            let pages = PageLog()
            let signOut = LoopbackSignIn(
                port: server.loopbackPort(for: client.configuration.clientID), callbackPath: server.postLogoutPath, timeout: .seconds(60),
                browser: .custom { url in
                    do {
                        let back = try await server.confirmLogout(url, browser: browser)
                        let (response, body) = try await browser.get(back)
                        pages.add(callback: back, response: response, body: String(decoding: body, as: UTF8.self))
                        return true
                    } catch {
                        Issue.record("the browser failed: \(error)")
                        return false
                    }
                },
                output: TextCapture())
            try await Integration.LoopbackSignInAgainstRealServers.withFreePort {
                try await signOut.signOut(client: client, options: EndSessionOptions(idTokenHint: tokens.idToken))
            }
            #expect(pages.all.first?.body.contains("Signed out") == true, "the listener saw the post-logout redirect, its state checked")
        case .clientCredentials:
            let client = try await server.client(try server.clientCredentialsClient())
            let tokens = try await client.clientCredentials()
            #expect(!tokens.accessToken.isEmpty)
        case .password:
            let client = try await server.client(try server.passwordClient())
            let tokens = try await client.password(username: Server.username, password: Server.password)
            #expect(!tokens.accessToken.isEmpty)
        case .device:
            let configuration = try server.deviceClient()
            let client = try await server.deviceOAuth2Client(configuration)
            let authorization = try await client.startDeviceAuthorization()
            try await server.approveDevice(userCode: authorization.userCode, configuration: configuration)
            let tokens = try await client.pollDeviceToken(authorization)
            #expect(!tokens.accessToken.isEmpty)
        case .par:
            var configuration = server.publicClient()
            configuration.usePushedAuthorizationRequests = true
            let counter = RequestCounter()
            let (_, tokens, _) = try await signIn(configuration, interceptors: [counter])
            #expect(counter.count(.pushedAuthorization) == 1)
            #expect(!tokens.accessToken.isEmpty)
        case .dpop:
            var configuration = server.publicClient()
            configuration.dpop = DPoPOptions(key: try DPoPKey.generate(server.dpopAlgorithm))
            let (client, tokens, _) = try await signIn(configuration)
            #expect(tokens.tokenType == .dpop)
            if case .offered = server.availability(of: .userInfo, metadata: client.metadata) {
                #expect(try await client.userInfo(for: tokens).subject == tokens.idTokenClaims?.subject, "the bound token works")
            }
        case .jwtClientAuthentication:
            let client = try await server.client(try server.jwtClient())
            let tokens = try await client.clientCredentials()
            #expect(!tokens.accessToken.isEmpty)
        case .registration:
            let registrar = try await ClientRegistrar(server: .issuer(server.issuer), environment: HTTPEnvironment(transport: URLSessionTransport.shared, metadataCache: MetadataCache()))
            let registration = try await registrar.register(server.registrationMetadata)
            #expect(!registration.clientID.isEmpty)
            if server == .lemonldap {
                // Its registered ids and secrets may hold a `/`, which it does not form-decode
                // in Basic credentials: the quirk sends them as they are. A new client reaches
                // every portal worker within 2 s.
                try await Task.sleep(for: .seconds(2.5))
                let configuration = ClientConfiguration(
                    clientID: registration.clientID, clientSecret: registration.clientSecret, authenticationMethod: .clientSecretBasic,
                    redirectURI: Server.redirectURI, scopes: ["openid"], quirks: [.basicAuthenticationWithoutFormEncoding])
                let (_, tokens, _) = try await signIn(configuration)
                #expect(tokens.idTokenClaims?.audiences.contains(registration.clientID) == true, "signed in with the registered client")
            }
        case .ciba:
            // Only Glewlwyd offers it (note(_:)): its CIBA instance, the user approving with their session.
            let configuration = Server.cibaPollClient()
            let client = try await Server.glewlwyd.client(configuration, issuer: Server.glewlwydCIBAIssuer)
            let message = "CIBA-COMPAT-" + String(UInt32.random(in: 0...UInt32.max), radix: 36).uppercased()
            let authentication = try await client.startBackchannelAuthentication(
                BackchannelAuthenticationRequest(hint: .loginHint(Server.cibaLoginHint), bindingMessage: message))
            try await Server.glewlwyd.decideBackchannel(bindingMessage: message, clientID: configuration.clientID, scopes: configuration.scopes)
            let tokens = try await client.pollBackchannelToken(authentication)
            #expect(tokens.idTokenClaims?.subject.isEmpty == false, "a verified ID token")
        case .richAuthorization:
            // Only Glewlwyd offers it among the suite's servers: its own instance and client.
            try #require(server == .glewlwyd, "the suite knows no RAR set-up for \(server.rawValue)")
            let rich = Integration.RichAuthorizationAgainstGlewlwydTests.self
            let client = try await rich.client()
            let tokens = try await rich.signIn(client, AuthorizationOptions(authorizationDetails: [try AuthorizationDetail(rich.payment)]))
            #expect(try tokens.authorizationDetails(of: Integration.RichAuthorizationAgainstGlewlwydTests.PaymentInitiation.self) == [rich.payment])
        case .jwtIntrospection:
            let (client, tokens) = try await confidentialTokens()
            // RFC 9701 wants aud to be the introspecting client; a server naming the token's
            // audience instead (Glewlwyd: the scopes, or the resource asked for) is accepted
            // by naming that audience.
            let audiences = [client.configuration.clientID, "openid read", "read openid", "read"]
            let answer = try await client.introspect(tokens.accessToken, hint: .accessToken, format: .jwt(.init(audiences: audiences)))
            #expect(answer.active)
        case .mtlsClientAuthentication, .certificateBoundTokens:
            guard server == .glewlwyd else { throw JourneyError.noDriver(server, "mutual TLS") }
            let glewlwyd = Integration.MutualTLSAgainstGlewlwyd()
            for (certificate, clientID, method) in [
                ("client", Integration.MutualTLSAgainstGlewlwyd.caClientID, ClientAuthenticationMethod.tlsClientAuth),
                ("self", Integration.MutualTLSAgainstGlewlwyd.selfSignedClientID, .selfSignedTLSClientAuth),
            ] {
                let tokens = try await glewlwyd.clientCredentials(clientID, method: method, presenting: certificate)
                if feature == .certificateBoundTokens {
                    let cnf = try JWS(compact: tokens.accessToken).claims()["cnf"]?.objectValue
                    #expect(cnf?["x5t#S256"]?.stringValue == (try Integration.MutualTLSAgainstGlewlwyd.thumbprint(of: certificate)))
                } else {
                    #expect(!tokens.accessToken.isEmpty)
                }
            }
        case .tokenExchange:
            let client = try await Authgent.client()
            let subject = try await Authgent.subjectToken(client)
            let answer = try await client.exchangeToken(
                TokenExchangeRequest(subject: .init(subject.accessToken, type: .accessToken), audiences: ["https://backend.example.test"]))
            #expect(answer.issuedTokenType == .accessToken)
        case .jarm:
            // None of the suite's servers offers JARM (their metadata); one that starts to
            // fails here, loudly, until it has a journey (JARMSignInTests has the embedded
            // provider's).
            Issue.record("no journey for JARM at \(server) yet")
        case .encryptedRequestObjects, .encryptedIntrospection:
            // A client registered for the run and, for request objects, an instance with
            // encryption keys of its own: only Glewlwyd's admin side is scripted.
            try #require(server == .glewlwyd, "the suite knows no set-up for \(feature) at \(server.rawValue)")
            if feature == .encryptedRequestObjects {
                try await Integration.EncryptedAnswersAgainstGlewlwydTests.RequestObjects.signIn(algorithm: .rsaOAEP256, encryption: .a256GCM, pushed: true)
            } else {
                try await Integration.EncryptedAnswersAgainstGlewlwydTests.encryptedIntrospection(algorithm: .rsaOAEP256, encryption: .a256GCM, keyType: "RSA")
            }
        case .encryptedIDTokens:
            // A client with this run's encryption key needs the server's admin side: only
            // Glewlwyd's is scripted. Another server advertising encryption fails here, loudly.
            guard server == .glewlwyd else {
                Issue.record("no journey for encrypted ID tokens at \(server) yet")
                return
            }
            let key = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "enc-compatibility")
            let registered = Integration.EncryptedAnswersAgainstGlewlwydTests.RegisteredClient()
            try await registered.register(key: key, algorithm: .rsaOAEP256, encryption: .a128CBCHS256)
            do {
                var configuration = ClientConfiguration(
                    clientID: registered.id, clientSecret: registered.secret, redirectURI: Server.redirectURI, scopes: ["openid", "read"])
                configuration.encryption = EncryptionOptions(decryptionKeys: [key], requiresEncryptedIDTokens: true)
                let client = try await Server.glewlwyd.client(configuration)
                let request = try await client.startAuthorization()
                let tokens = try await client.completeAuthorization(
                    callbackURL: try await Server.glewlwyd.authorize(request, clientID: registered.id), request: request)
                #expect(tokens.idTokenClaims?.subject.isEmpty == false, "the encrypted ID token, decrypted and verified")
            } catch {
                await registered.remove()
                throw error
            }
            await registered.remove()
        }
    }

    /// Where the server does not offer `feature`, the client's call fails with a typed error
    /// that says so (or, for what has no call of its own, nothing is sent).
    func refuse(_ feature: Feature, probe: OAuth2Client) async throws {
        func missing(_ body: () async throws -> Void) async {
            let error = await #expect(throws: OAuth2Error.self) { try await body() }
            #expect(error?.code == .missingEndpoint, "\(feature): \(String(describing: error))")
        }
        switch feature {
        case .userInfo: await missing { _ = try await probe.userInfo(accessToken: "unused", expectedSubject: nil) }
        case .introspection: await missing { _ = try await probe.introspect("unused") }
        case .revocation: await missing { try await probe.revoke("unused") }
        case .logout: await missing { _ = try probe.endSessionRequest() }
        case .device: await missing { _ = try await probe.startDeviceAuthorization() }
        case .par: await missing { _ = try await probe.pushAuthorizationRequest() }
        case .ciba: await missing { _ = try await probe.startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint(Server.username))) }
        case .registration:
            let registrar = try await ClientRegistrar(server: .issuer(server.issuer), environment: HTTPEnvironment(transport: URLSessionTransport.shared, metadataCache: MetadataCache()))
            await missing { _ = try await registrar.register(server.registrationMetadata) }
        case .tokenExchange, .clientCredentials, .password:
            // The grant is refused with the server's own words, typed.
            let client = try await server.client(server.confidentialClient())
            let error = await #expect(throws: OAuth2Error.self) {
                switch feature {
                case .clientCredentials: _ = try await client.clientCredentials()
                case .password: _ = try await client.password(username: Server.username, password: Server.password)
                default:
                    _ = try await client.exchangeToken(TokenExchangeRequest(subject: .init("unused", type: .accessToken)))
                }
            }
            #expect(error?.source == .server, "the server's own refusal, typed: \(String(describing: error))")
        case .jwtIntrospection:
            // Asked for a JWT anyway, the server answers JSON (or refuses): never believed.
            guard probe.metadata.introspectionEndpoint != nil else {
                await missing { _ = try await probe.introspect("unused", format: .jwt()) }
                return
            }
            let (client, tokens) = try await confidentialTokens()
            await #expect(throws: OAuth2Error.self) { _ = try await client.introspect(tokens.accessToken, hint: .accessToken, format: .jwt()) }
        case .discovery, .signIn, .refresh, .dpop, .jwtClientAuthentication, .encryptedIDTokens, .richAuthorization,
            .mtlsClientAuthentication, .certificateBoundTokens, .jarm, .encryptedRequestObjects, .encryptedIntrospection:
            // Nothing of the client's to refuse: the evidence (metadata) is the record.
            break
        }
    }

    /// Sign-in and RP-initiated logout in headless Chromium, on the server's real pages (its
    /// logout is finished by its pages' JavaScript).
    func logOutInChromium() async throws {
        let chromium = try Chromium(name: "compatibility-\(server.rawValue)-logout")
        let configuration = server.publicClient()
        let client = try await server.client(configuration)
        let port = server.loopbackPort(for: configuration.clientID)
        let signIn = LoopbackSignIn(
            port: port, callbackPath: Server.redirectURI.path, timeout: .seconds(90),
            browser: .custom { url in await chromium.open(url, step: "sign-in") }, output: TextCapture())
        let tokens = try await Integration.LoopbackSignInAgainstRealServers.withFreePort { try await signIn.signIn(client: client) }
        #expect(try await chromium.pageText("sign-in").contains("Signed in"))
        let signOut = LoopbackSignIn(
            port: port, callbackPath: server.postLogoutPath, timeout: .seconds(90),
            browser: .custom { url in await chromium.open(url, step: "sign-out") }, output: TextCapture())
        try await Integration.LoopbackSignInAgainstRealServers.withFreePort {
            try await signOut.signOut(client: client, options: EndSessionOptions(idTokenHint: tokens.idToken))
        }
        #expect(try await chromium.pageText("sign-out").contains("Signed out"), "the listener saw the post-logout redirect, its state checked")
    }

    /// A sign-in through the loopback listener, the user approving on the server's pages.
    func signIn(
        _ configuration: ClientConfiguration, browser: Browser = Browser(), interceptors: [any HTTPInterceptor] = []
    ) async throws -> (OAuth2Client, TokenSet, PageLog) {
        let client = try await OAuth2Client(
            server: .issuer(server.issuer),
            configuration: configuration,
            environment: HTTPEnvironment(interceptors: interceptors, metadataCache: MetadataCache()))
        IntegrationLog.record(server.rawValue, variant: "compatibility")
        let pages = PageLog()
        let signIn = LoopbackSignIn(
            port: server.loopbackPort(for: configuration.clientID), callbackPath: Server.redirectURI.path, timeout: .seconds(60),
            browser: .custom { url in
                do {
                    let callback = try await server.approve(url, configuration: configuration, browser: browser)
                    let (response, body) = try await browser.get(callback)
                    pages.add(callback: callback, response: response, body: String(decoding: body, as: UTF8.self))
                    return true
                } catch {
                    Issue.record("the browser failed: \(error)")
                    return false
                }
            },
            output: TextCapture())
        let tokens = try await Integration.LoopbackSignInAgainstRealServers.withFreePort { try await signIn.signIn(client: client) }
        #expect(!tokens.accessToken.isEmpty)
        let page = try #require(pages.all.first)
        #expect(page.body.contains("Signed in"))
        if let code = URLComponents(url: page.callback, resolvingAgainstBaseURL: false)?.queryItems?.first(where: { $0.name == "code" })?.value {
            #expect(!page.body.contains(code), "the listener's page never shows the code")
        }
        return (client, tokens, pages)
    }

    /// Tokens of the confidential client (the one allowed to introspect and revoke).
    func confidentialTokens() async throws -> (OAuth2Client, TokenSet) {
        try await server.introspectionTokens { configuration in
            let (client, tokens, _) = try await signIn(configuration)
            return (client, tokens)
        }
    }
}
