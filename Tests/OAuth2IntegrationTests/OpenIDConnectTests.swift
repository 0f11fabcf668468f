import Foundation
import HTTPTypes
import OAuth2
import Testing

extension Integration {
    /// ID tokens, UserInfo and logout against the real providers.
    @Suite struct OpenIDConnectAgainstRealServers {
        /// Signs in with the public client (code + PKCE, `openid`) through the real login pages.
        func signIn(_ server: Server, transport: TransportKind = .urlSession, browser: Browser = Browser()) async throws -> (OAuth2Client, TokenSet, AuthorizationRequest) {
            let configuration = server.publicClient(scopes: ["openid", "profile", "read"])
            let client = try await server.client(configuration, transport: transport)
            let request = try client.authorizationRequest()
            let callback = try await server.authorize(request, clientID: configuration.clientID, browser: browser)
            return (client, try await client.completeAuthorization(callbackURL: callback, request: request), request)
        }

        @Test(arguments: Server.allCases, TransportKind.allCases)
        func idTokensVerifyAgainstTheProvidersKeys(server: Server, transport: TransportKind) async throws {
            let (client, tokens, request) = try await signIn(server, transport: transport)
            let compact = try #require(tokens.idToken)
            let keys = try #require(try await client.keySet?.keys())
            #expect(!keys.keys.isEmpty)
            let token = try await client.validateIDToken(compact, expecting: .init(nonce: request.nonce, accessToken: tokens.accessToken))
            #expect(token.claims.issuer == server.issuer.absoluteString)
            #expect(token.claims.audiences.contains(client.configuration.clientID))
            #expect(token.claims.nonce == request.nonce)
            #expect(JWSAlgorithm.asymmetric.contains(try JWS(compact: compact).algorithm))
            // The same token with one signature bit changed is refused.
            var bytes = Array(compact.utf8)
            bytes[bytes.count - 3] = bytes[bytes.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let error = await #expect(throws: OAuth2Error.self) {
                try await client.validateIDToken(String(decoding: bytes, as: UTF8.self), expecting: .init(nonce: request.nonce))
            }
            #expect(error?.joseReason == .signatureInvalid)
            // And with another nonce.
            let nonceError = await #expect(throws: OAuth2Error.self) { try await client.validateIDToken(compact, expecting: .init(nonce: "other")) }
            #expect(nonceError?.joseReason == .nonceMismatch)
        }

        @Test(arguments: Server.allCases)
        func userInfoMatchesTheIDTokenSubject(server: Server) async throws {
            let (client, tokens, _) = try await signIn(server)
            let subject = try #require(tokens.idTokenClaims?.subject)
            let info = try await client.userInfo(for: tokens)
            #expect(info.subject == subject)
            let error = await #expect(throws: OAuth2Error.self) {
                try await client.userInfo(accessToken: tokens.accessToken, expectedSubject: subject + "-someone-else")
            }
            #expect(error?.code == .invalidUserInfo)
            #expect(error?.joseReason == .subjectMismatch)
            let refused = await #expect(throws: OAuth2Error.self) {
                try await client.userInfo(accessToken: "not-a-token", expectedSubject: subject)
            }
            #expect(refused?.statusCode == 401)
        }

        @Test(arguments: Server.allCases)
        func aRefreshedIDTokenIsVerifiedAndKeepsTheSubject(server: Server) async throws {
            let (client, tokens, _) = try await signIn(server)
            let refreshed = try await client.refresh(tokens)
            #expect(refreshed.idTokenClaims?.subject == tokens.idTokenClaims?.subject)
        }

        @Test func dotRPInitiatedLogoutAnswersWithTheState() async throws {
            let browser = Browser()
            let (client, tokens, _) = try await signIn(.dot, browser: browser)
            let logout = try client.endSessionRequest(EndSessionOptions(idTokenHint: tokens.idToken, postLogoutRedirectURI: Server.redirectURI))
            let callback = try await browser.redirect(from: logout.url)
            try logout.validateCallback(callback)
            // A forged state is refused.
            var forged = URLComponents(url: callback, resolvingAgainstBaseURL: false)!
            forged.queryItems = [URLQueryItem(name: "state", value: "forged")]
            #expect(throws: OAuth2Error.self) { try logout.validateCallback(forged.url!) }
            // The provider's session ended: a new authorization needs the login page again.
            let request = try client.authorizationRequest()
            let (response, _) = try await browser.get(request.url)
            #expect(response.headerFields[.location]?.contains("/accounts/login/") == true)
        }
    }
}
