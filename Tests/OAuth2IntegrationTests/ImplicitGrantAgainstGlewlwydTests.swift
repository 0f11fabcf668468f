import Crypto
import Foundation
import HTTPTypes
import OAuth2
import OAuth2InteractiveSignIn
import Testing

extension Integration {
    /// The legacy implicit grant against Glewlwyd (its `implicit-public` client has the
    /// `token` and `id_token` response types): the fragment reaches the loopback listener
    /// through its relay page, posted the way the page's script posts it.
    @Suite struct ImplicitGrantAgainstGlewlwyd {
        static let server = Server.glewlwyd
        static let clientID = Server.env("OAUTH2_TEST_GLEWLWYD_IMPLICIT_ID", "implicit-public")

        static func configuration(scopes: [String] = ["openid", "read"]) -> ClientConfiguration {
            var configuration = ClientConfiguration(clientID: clientID, redirectURI: Server.redirectURI, scopes: scopes)
            configuration.allowsImplicitGrant = true
            return configuration
        }

        /// What the relay's browser saw.
        final class RelayLog: @unchecked Sendable {
            private let lock = NSLock()
            private var entries: [(callback: URL, page: String, csp: String?, status: Int, text: String)] = []
            func add(_ entry: (callback: URL, page: String, csp: String?, status: Int, text: String)) { lock.withLock { entries.append(entry) } }
            var all: [(callback: URL, page: String, csp: String?, status: Int, text: String)] { lock.withLock { entries } }
        }

        /// A browser that signs alice in on Glewlwyd, follows the redirect and relays the
        /// fragment to the listener — after first posting a copy with a forged `state`,
        /// which must not end the sign-in.
        static func browser(scopes: [String], log: RelayLog) -> BrowserChoice {
            .custom { url in
                do {
                    let session = Browser()
                    let callback = try await server.authorize(url: url, scopes: scopes, clientID: clientID, browser: session)
                    let fragment = try #require(callback.fragment(percentEncoded: true), "Glewlwyd redirected without a fragment")
                    let state = try #require(URLComponents(string: "http://x/?" + fragment)?.queryItems?.first { $0.name == "state" }?.value)
                    let forged = try #require(URL(string: callback.absoluteString.replacingOccurrences(of: "state=\(state)", with: "state=forged")))
                    let refused = try await session.relayFragment(of: forged)
                    log.add((forged, refused.page, refused.csp, refused.answer.status.code, refused.text))
                    let relayed = try await session.relayFragment(of: callback)
                    log.add((callback, relayed.page, relayed.csp, relayed.answer.status.code, relayed.text))
                    return true
                } catch {
                    Issue.record("the browser failed: \(error)")
                    return false
                }
            }
        }

        @available(*, deprecated)
        static func signIn(_ responseType: ImplicitResponseType, scopes: [String], log: RelayLog) async throws -> (TokenSet, OAuth2Client) {
            let client = try await server.client(configuration(scopes: scopes))
            let signIn = LoopbackSignIn(
                port: Server.redirectURI.port ?? 9999, callbackPath: Server.redirectURI.path, timeout: .seconds(60),
                browser: browser(scopes: scopes, log: log), output: TextCapture())
            let tokens = try await LoopbackSignInAgainstRealServers.withFreePort {
                try await signIn.implicitSignIn(client: client, responseType: responseType)
            }
            return (tokens, client)
        }

        /// The relay's pages and answers: the forged post refused, the real one accepted,
        /// no token echoed, the script the one its CSP allows.
        static func checkRelay(_ log: RelayLog, tokens: TokenSet) throws {
            let entries = log.all
            try #require(entries.count == 2)
            #expect(entries[0].status == 400, "a forged state is answered 400 and the wait goes on")
            #expect(entries[1].status == 200)
            #expect(entries[1].text.contains("Signed in"))
            for entry in entries {
                #expect(!entry.page.contains(tokens.accessToken) && !entry.text.contains(tokens.accessToken), "no page echoes the token")
                #expect(entry.page.contains("<script>\(LoopbackPages.fragmentRelayScript)</script>"))
                #expect(entry.csp?.contains("script-src \(LoopbackPages.fragmentRelayScriptSource);") == true)
            }
        }

        @Test @available(*, deprecated) func tokenResponseTypeThroughTheListener() async throws {
            let log = RelayLog()
            let (tokens, client) = try await Self.signIn(.token, scopes: ["openid", "read"], log: log)
            #expect(!tokens.accessToken.isEmpty)
            #expect(tokens.refreshToken == nil, "never a refresh token from the fragment")
            #expect(tokens.idToken == nil)
            #expect(tokens.tokenType == .bearer)
            let expiresAt = try #require(tokens.expiresAt, "Glewlwyd sends expires_in in the fragment")
            #expect(expiresAt > Date())
            #expect(tokens.scopes?.contains("read") == true)
            try Self.checkRelay(log, tokens: tokens)
            // The token works at Glewlwyd's UserInfo endpoint.
            let me = try await client.userInfo(for: tokens)
            #expect(!me.subject.isEmpty)
            // A session of these tokens works until they expire, then asks for a sign-in.
            let session = try await TokenSession(client: client, tokens: tokens)
            #expect(try await session.freshAccessToken() == tokens.accessToken)
            await #expect(throws: OAuth2Error.self) { try await session.refresh() }
        }

        @Test @available(*, deprecated) func idTokenTokenVerifiesTheIDTokenAndItsAtHash() async throws {
            let log = RelayLog()
            let (tokens, _) = try await Self.signIn(.idTokenToken, scopes: ["openid", "read"], log: log)
            let claims = try #require(tokens.idTokenClaims, "a verified ID token")
            #expect(!claims.subject.isEmpty)
            #expect(claims.nonce != nil, "the nonce came back (and matched)")
            let atHash = try #require(claims.accessTokenHash, "Glewlwyd's ID token has at_hash")
            // Computed here, not by the library: the left half of the access token's SHA-256
            // (Glewlwyd signs with RS256), base64url without padding.
            #expect(try JWS(compact: try #require(tokens.idToken)).algorithm == .rs256)
            let digest = Data(SHA256.hash(data: Data(tokens.accessToken.utf8)).prefix(16))
            let expected = digest.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(atHash == expected)
            #expect(tokens.refreshToken == nil)
            try Self.checkRelay(log, tokens: tokens)
        }

        /// Two real responses: each stands alone; swapping the access token under the other
        /// response's ID token is caught by at_hash, and a changed state by the state check.
        @Test @available(*, deprecated) func aStateMismatchAndASwappedTokenAreRefused() async throws {
            let client = try await Self.server.client(Self.configuration())
            func authorize() async throws -> (AuthorizationRequest, URL) {
                let request = try client.implicitAuthorizationRequest(.idTokenToken)
                let callback = try await Self.server.authorize(url: request.url, scopes: request.scopes, clientID: Self.clientID)
                return (request, callback)
            }
            let (first, firstCallback) = try await authorize()
            let (second, secondCallback) = try await authorize()
            func parameters(_ url: URL) -> [(String, String)] {
                (URLComponents(string: "http://x/?" + (url.fragment(percentEncoded: true) ?? ""))?.percentEncodedQueryItems ?? []).map { ($0.name, $0.value ?? "") }
            }
            func url(_ pairs: [(String, String)]) -> URL {
                URL(string: Server.redirectURI.absoluteString + "#" + pairs.map { "\($0.0)=\($0.1)" }.joined(separator: "&"))!
            }
            // The first response under the second request: its state is not the one sent.
            do {
                _ = try await client.completeImplicitAuthorization(callbackURL: firstCallback, request: second)
                Issue.record("a response with another request's state was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .stateMismatch)
            }
            // The second response with the first's access token: at_hash does not match.
            let firstToken = try #require(parameters(firstCallback).first { $0.0 == "access_token" }?.1)
            let swapped = url(parameters(secondCallback).map { $0.0 == "access_token" ? ($0.0, firstToken) : $0 })
            do {
                _ = try await client.completeImplicitAuthorization(callbackURL: swapped, request: second)
                Issue.record("an access token under another response's ID token was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidIDToken)
                #expect((error.underlyingError as? JOSEError)?.reason == .accessTokenHashMismatch)
                #expect(!error.description.contains(firstToken))
            }
            // Each real response, untouched, is accepted.
            #expect(try await client.completeImplicitAuthorization(callbackURL: firstCallback, request: first).idTokenClaims != nil)
            #expect(try await client.completeImplicitAuthorization(callbackURL: secondCallback, request: second).idTokenClaims != nil)
        }

        @Test @available(*, deprecated) func aClientWithoutTheImplicitGrantGetsATypedError() async throws {
            var configuration = Server.glewlwyd.publicClient()
            configuration.allowsImplicitGrant = true
            let client = try await Self.server.client(configuration)
            let request = try client.implicitAuthorizationRequest(.token)
            let callback = try await Self.server.authorize(url: request.url, scopes: request.scopes, clientID: configuration.clientID)
            do {
                _ = try await client.completeImplicitAuthorization(callbackURL: callback, request: request)
                Issue.record("Glewlwyd gave implicit tokens to a client without the token response type")
            } catch let error as OAuth2Error {
                #expect(error.source == .server)
                #expect(["unauthorized_client", "unsupported_response_type"].contains(error.code.rawValue), "\(error)")
            }
        }
    }
}
