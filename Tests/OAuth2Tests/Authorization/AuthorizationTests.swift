import Foundation
import OAuth2Internals
import Testing
@testable import OAuth2

private func query(_ url: URL) -> [String: String] {
    let pairs = FormURLEncoding.decode(URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery ?? "") ?? []
    return Dictionary(pairs, uniquingKeysWith: { first, _ in first })
}

@Suite struct AuthorizationRequestTests {
    let client: OAuth2Client

    init() throws {
        client = try Fixtures.client(StubTransport(json: "{}"))
    }

    @Test func carriesPKCEStateAndNonce() throws {
        let request = try client.authorizationRequest()
        let items = query(request.url)
        #expect(items["response_type"] == "code")
        #expect(items["client_id"] == "client-1")
        #expect(items["redirect_uri"] == "http://127.0.0.1:9999/callback")
        #expect(items["scope"] == "openid read")
        #expect(items["state"] == request.state)
        #expect(items["nonce"] == request.nonce)
        #expect(items["code_challenge_method"] == "S256")
        #expect(items["code_challenge"] == (try PKCE(verifier: request.codeVerifier).challenge))
        #expect(items["code_verifier"] == nil, "the verifier never leaves the client in the front channel")
        #expect(request.state.count >= 43)
    }

    @Test func noNonceWithoutOpenID() throws {
        let request = try client.authorizationRequest(AuthorizationOptions(scopes: ["read"]))
        #expect(request.nonce == nil)
        #expect(query(request.url)["nonce"] == nil)
    }

    @Test func freshSecretsEachTime() throws {
        let first = try client.authorizationRequest()
        let second = try client.authorizationRequest()
        #expect(first.state != second.state)
        #expect(first.nonce != second.nonce)
        #expect(first.codeVerifier != second.codeVerifier)
    }

    @Test func addsTheOptionalParameters() throws {
        let options = AuthorizationOptions(
            prompt: ["login", "consent"], loginHint: "alice@example.com", maxAge: 300, acrValues: ["urn:mace:incommon:iap:silver"],
            uiLocales: ["fr-CA", "en"], resources: [URL(string: "https://api.example.com")!, URL(string: "https://b.example.com")!],
            responseMode: "query", additionalParameters: ["audience": "api", "state": "attacker", "code_challenge": "x"])
        let request = try client.authorizationRequest(options)
        let pairs = FormURLEncoding.decode(URLComponents(url: request.url, resolvingAgainstBaseURL: false)!.percentEncodedQuery!)!
        let items = Dictionary(pairs, uniquingKeysWith: { first, _ in first })
        #expect(items["prompt"] == "login consent")
        #expect(items["login_hint"] == "alice@example.com")
        #expect(items["max_age"] == "300")
        #expect(items["acr_values"] == "urn:mace:incommon:iap:silver")
        #expect(items["ui_locales"] == "fr-CA en")
        #expect(pairs.filter { $0.0 == "resource" }.map(\.1) == ["https://api.example.com", "https://b.example.com"])
        #expect(items["response_mode"] == "query")
        #expect(items["audience"] == "api")
        #expect(items["state"] == request.state, "extras never override the library's parameters")
        #expect(pairs.filter { $0.0 == "state" }.count == 1)
        #expect(request.maxAge == 300)
    }

    @Test func keepsTheEndpointsOwnQuery() throws {
        let metadata = ServerMetadata(
            issuer: URL(string: Fixtures.issuer)!, authorizationEndpoint: URL(string: "https://as.example.com/authorize?tenant=a")!,
            tokenEndpoint: URL(string: "https://as.example.com/token")!)
        let request = try Fixtures.client(StubTransport(json: "{}"), metadata: metadata).authorizationRequest()
        #expect(query(request.url)["tenant"] == "a")
        #expect(query(request.url)["response_type"] == "code")
    }

    @Test func needsARedirectURI() throws {
        var configuration = Fixtures.configuration()
        configuration.redirectURI = nil
        let client = try Fixtures.client(StubTransport(json: "{}"), configuration: configuration)
        #expect(throws: OAuth2Error.self) { try client.authorizationRequest() }
    }

    @Test func descriptionHidesSecrets() throws {
        let request = try client.authorizationRequest()
        #expect(!request.description.contains(request.state))
        #expect(!request.description.contains(request.codeVerifier))
    }

    @Test func survivesARoundTripThroughStorage() throws {
        let request = try client.authorizationRequest()
        let restored = try JSONDecoder().decode(AuthorizationRequest.self, from: JSONEncoder().encode(request))
        #expect(restored == request)
    }
}

@Suite struct AuthorizationResponseTests {
    let request: AuthorizationRequest

    init() throws {
        let metadata = Fixtures.metadata.filling(from: try ServerMetadata(fields: ["authorization_response_iss_parameter_supported": .bool(false)]))
        request = try Fixtures.client(StubTransport(json: "{}"), metadata: metadata).authorizationRequest()
    }

    func callback(_ query: String) -> URL {
        URL(string: "http://127.0.0.1:9999/callback?\(query)")!
    }

    @Test func acceptsTheMatchingState() throws {
        let response = try AuthorizationResponse(callbackURL: callback("code=abc&state=\(request.state)"), request: request)
        #expect(response.code == "abc")
        #expect(!response.description.contains("abc"))
    }

    @Test func refusesATamperedOrMissingState() {
        for query in ["code=abc&state=\(request.state)x", "code=abc", "code=abc&state="] {
            #expect(throws: OAuth2Error.self) { try AuthorizationResponse(callbackURL: callback(query), request: request) }
            do { _ = try AuthorizationResponse(callbackURL: callback(query), request: request) } catch {
                #expect(error.code == .stateMismatch)
            }
        }
    }

    @Test func checksStateBeforeTrustingAnError() {
        do {
            _ = try AuthorizationResponse(callbackURL: callback("error=access_denied&state=forged"), request: request)
        } catch {
            #expect(error.code == .stateMismatch)
        }
    }

    @Test func typesAuthorizationErrors() {
        do {
            _ = try AuthorizationResponse(
                callbackURL: callback("error=access_denied&error_description=User+said+no&state=\(request.state)"), request: request)
            Issue.record("no error")
        } catch {
            #expect(error.code == .accessDenied)
            #expect(error.source == .server)
            #expect(error.message == "User said no")
            #expect(error.requiresReauthorization)
        }
    }

    @Test func checksTheIssuerParameter() throws {
        _ = try AuthorizationResponse(
            callbackURL: callback("code=c&state=\(request.state)&iss=\(FormURLEncoding.encode(Fixtures.issuer))"), request: request)
        do {
            _ = try AuthorizationResponse(
                callbackURL: callback("code=c&state=\(request.state)&iss=https%3A%2F%2Fevil.example.com"), request: request)
            Issue.record("a foreign issuer was accepted")
        } catch {
            #expect(error.code == .issuerMismatch)
        }
    }

    @Test func requiresTheIssuerWhenTheServerPromisedIt() throws {
        let metadata = Fixtures.metadata.filling(from: try ServerMetadata(fields: ["authorization_response_iss_parameter_supported": .bool(true)]))
        let request = try Fixtures.client(StubTransport(json: "{}"), metadata: metadata).authorizationRequest()
        do {
            _ = try AuthorizationResponse(callbackURL: callback("code=c&state=\(request.state)"), request: request)
            Issue.record("a missing iss was accepted")
        } catch {
            #expect(error.code == .issuerMismatch)
        }
    }

    @Test func readsTheFragment() throws {
        let url = URL(string: "http://127.0.0.1:9999/callback#code=frag&state=\(request.state)")!
        #expect(try AuthorizationResponse(callbackURL: url, request: request).code == "frag")
    }

    @Test func refusesAForeignRedirect() {
        for url in ["http://127.0.0.1:9998/callback?code=c&state=\(request.state)", "https://evil.example.com/callback?code=c&state=\(request.state)",
                    "http://127.0.0.1:9999/other?code=c&state=\(request.state)"] {
            do {
                _ = try AuthorizationResponse(callbackURL: URL(string: url)!, request: request)
                Issue.record("accepted \(url)")
            } catch {
                #expect(error.code == .redirectMismatch)
            }
        }
    }

    @Test func refusesRepeatedParameters() {
        #expect(throws: OAuth2Error.self) {
            try AuthorizationResponse(callbackURL: callback("code=a&code=b&state=\(request.state)"), request: request)
        }
    }

    @Test func needsACode() {
        do {
            _ = try AuthorizationResponse(callbackURL: callback("state=\(request.state)"), request: request)
        } catch {
            #expect(error.code == .invalidResponse)
        }
    }

    @Test func aFailedCheckNeverReachesTheTokenEndpoint() async throws {
        let transport = StubTransport(json: #"{"access_token":"t","token_type":"Bearer"}"#)
        let client = try Fixtures.client(transport)
        let request = try client.authorizationRequest()
        await #expect(throws: OAuth2Error.self) {
            try await client.completeAuthorization(callbackURL: callback("code=c&state=wrong"), request: request)
        }
        #expect(transport.sent.isEmpty)
    }
}
