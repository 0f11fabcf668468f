import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import OAuth2Web
import Testing

extension Integration {
    /// `WebSignIn` with a client that pushes its authorization requests (PAR), authenticates
    /// with `private_key_jwt` and binds its tokens to a DPoP key, against Glewlwyd: the web
    /// sign-in hands all three to the client it is given, and a person's sign-in ends with
    /// tokens bound to the app's key.
    @Suite struct WebSignInAgainstGlewlwyd {
        let server = Server.glewlwyd

        /// The app's sign-in routes under the redirect URI Glewlwyd has registered for the
        /// test clients (`…/callback` on the redirect port).
        func configuration(scopes: [String]) throws -> WebSignInConfiguration {
            var components = try #require(URLComponents(url: Server.redirectURI, resolvingAgainstBaseURL: false))
            let callbackPath = components.path
            components.path = ""
            var configuration = WebSignInConfiguration(publicBaseURL: try #require(components.url), scopes: scopes)
            configuration.callbackPath = callbackPath
            return configuration
        }

        /// The request a browser sends to the app, with the cookies it holds.
        func request(_ pathAndQuery: String, cookies: [String: String]) -> HTTPRequest {
            var request = HTTPRequest(method: .get, scheme: Server.redirectURI.scheme, authority: Server.redirectURI.host, path: pathAndQuery)
            if !cookies.isEmpty { request.headerFields[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
            return request
        }

        /// The cookies a response sets (a `Max-Age=0` one removed).
        func take(_ response: WebResponse, into cookies: inout [String: String]) {
            for cookie in response.headerFields[values: .setCookie] {
                let parts = cookie.split(separator: ";", maxSplits: 1)[0].split(separator: "=", maxSplits: 1).map(String.init)
                cookies[parts[0]] = cookie.contains("Max-Age=0") ? nil : (parts.count > 1 ? parts[1] : "")
            }
        }

        @Test("PAR, private_key_jwt and DPoP through the web sign-in: the user signed in with DPoP-bound tokens")
        func pushedPrivateKeyJWTAndDPoP() async throws {
            let key = try DPoPKey.generate()
            var clientConfiguration = Server.jwtKeyClient(try Server.jwtClientKey("jwt-client-ec.jwk.json"), scopes: ["openid", "read"])
            clientConfiguration.usePushedAuthorizationRequests = true
            clientConfiguration.dpop = DPoPOptions(key: key)
            let recorder = ProofRecorder()
            let client = try await server.client(clientConfiguration, interceptors: [recorder])
            let configuration = try configuration(scopes: clientConfiguration.scopes)
            clientConfiguration.redirectURI = configuration.redirectURI
            #expect(configuration.redirectURI == Server.redirectURI)
            let signIn = WebSignIn(client: client, configuration: configuration)

            // The login route pushes the request (with a DPoP proof and a client assertion)
            // and sends the browser to Glewlwyd with the request_uri only.
            var cookies: [String: String] = [:]
            let start = try #require(await signIn.handle(request("/auth/login?returnTo=%2Fprofile", cookies: cookies)))
            take(start, into: &cookies)
            #expect(start.status == .seeOther)
            let authorize = try #require(start.headerFields[.location].flatMap(URL.init(string:)))
            let parameters = Set(URLComponents(url: authorize, resolvingAgainstBaseURL: false)?.queryItems?.map(\.name) ?? [])
            #expect(parameters == ["client_id", "request_uri"])
            let push = try #require(recorder.entries(.pushedAuthorization).first)
            #expect(push.proof != nil, "the push carries a DPoP proof")
            #expect(push.body.contains("client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"))
            #expect(!push.body.contains("client_secret"))

            // The person signs in on Glewlwyd; the browser comes back to the callback route.
            let callback = try await server.authorize(url: authorize, scopes: clientConfiguration.scopes, clientID: clientConfiguration.clientID)
            let components = try #require(URLComponents(url: callback, resolvingAgainstBaseURL: false))
            let landed = try #require(await signIn.handle(request(components.path + "?" + (components.percentEncodedQuery ?? ""), cookies: cookies)))
            take(landed, into: &cookies)
            #expect(landed.status == .seeOther)
            #expect(landed.headerFields[.location] == configuration.url("/profile").absoluteString)
            let token = try #require(recorder.entries(.token).first)
            #expect(token.proof != nil, "the code is redeemed with a DPoP proof")
            #expect(token.body.contains("client_assertion="))

            // Signed in: the user's tokens are bound to the app's key.
            guard case .granted(let user) = await signIn.authorize(request("/profile", cookies: cookies)) else {
                Issue.record("not signed in after the callback")
                return
            }
            #expect(user.issuer == client.metadata.issuer)
            let tokens = try await user.tokenSession.freshTokens()
            #expect(tokens.tokenType == .dpop)
            #expect(tokens.accessTokenKeyThumbprint == key.thumbprint)
        }
    }
}

