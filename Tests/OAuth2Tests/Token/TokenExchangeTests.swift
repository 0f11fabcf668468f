import Foundation
import HTTPTypes
import OAuth2Internals
import Testing
@testable import OAuth2

@Suite struct TokenTypeURITests {
    @Test func theRegisteredTypesAreRFC8693s() {
        #expect(TokenTypeURI.accessToken.rawValue == "urn:ietf:params:oauth:token-type:access_token")
        #expect(TokenTypeURI.refreshToken.rawValue == "urn:ietf:params:oauth:token-type:refresh_token")
        #expect(TokenTypeURI.idToken.rawValue == "urn:ietf:params:oauth:token-type:id_token")
        #expect(TokenTypeURI.jwt.rawValue == "urn:ietf:params:oauth:token-type:jwt")
        #expect(TokenTypeURI.saml1.rawValue == "urn:ietf:params:oauth:token-type:saml1")
        #expect(TokenTypeURI.saml2.rawValue == "urn:ietf:params:oauth:token-type:saml2")
        #expect(TokenTypeURI.registered.count == 6)
    }

    @Test(arguments: [
        ("access_token", TokenTypeURI.accessToken), ("jwt", .jwt), ("id_token", .idToken), ("refresh_token", .refreshToken),
        ("saml1", .saml1), ("saml2", .saml2), ("txn_token", "urn:ietf:params:oauth:token-type:txn_token"),
        ("urn:ietf:params:oauth:token-type:jwt", .jwt), ("https://example.com/token-type/x", "https://example.com/token-type/x"),
    ])
    func shortNamesAndURIsAreUnderstood(_ name: String, _ expected: TokenTypeURI) {
        #expect(TokenTypeURI(name: name) == expected)
    }

    @Test(arguments: ["", "access token", "jwt\n", "a/b", "é"])
    func unusableNamesAreRefused(_ name: String) {
        #expect(TokenTypeURI(name: name) == nil)
    }

    @Test func shortNameAndCoding() throws {
        #expect(TokenTypeURI.jwt.shortName == "jwt")
        #expect(TokenTypeURI(rawValue: "https://x/y").shortName == nil)
        let data = try JSONEncoder().encode([TokenTypeURI.idToken])
        #expect(String(decoding: data, as: UTF8.self) == #"["urn:ietf:params:oauth:token-type:id_token"]"#)
        #expect(try JSONDecoder().decode([TokenTypeURI].self, from: data) == [.idToken])
    }
}

@Suite struct TokenExchangeRequestTests {
    @Test func parametersFollowRFC8693InOrderWithRepeatedTargets() throws {
        let request = TokenExchangeRequest(
            subject: .init("subject-secret", type: .accessToken), actor: .init("actor-secret", type: .jwt),
            resources: [URL(string: "https://a.example/api")!, URL(string: "https://b.example/api")!],
            audiences: ["svc-1", "svc-2"], scopes: ["read", "write"], requestedTokenType: .accessToken)
        let parameters = try request.parameters()
        #expect(parameters.map(\.0) == [
            "subject_token", "subject_token_type", "actor_token", "actor_token_type", "resource", "resource",
            "audience", "audience", "scope", "requested_token_type",
        ])
        #expect(parameters.map(\.1) == [
            "subject-secret", TokenTypeURI.accessToken.rawValue, "actor-secret", TokenTypeURI.jwt.rawValue,
            "https://a.example/api", "https://b.example/api", "svc-1", "svc-2", "read write", TokenTypeURI.accessToken.rawValue,
        ])
    }

    @Test func theMinimumIsASubject() throws {
        let parameters = try TokenExchangeRequest(subject: .init("s", type: .idToken)).parameters()
        #expect(parameters.map(\.0) == ["subject_token", "subject_token_type"])
    }

    @Test func badRequestsAreRefusedBeforeSending() {
        let bad: [TokenExchangeRequest] = [
            TokenExchangeRequest(subject: .init("", type: .accessToken)),
            TokenExchangeRequest(subject: .init("s", type: TokenTypeURI(rawValue: ""))),
            TokenExchangeRequest(subject: .init("s", type: .accessToken), actor: .init("", type: .jwt)),
            TokenExchangeRequest(subject: .init("s", type: .accessToken), resources: [URL(string: "relative/path")!]),
            TokenExchangeRequest(subject: .init("s", type: .accessToken), resources: [URL(string: "https://a.example/#frag")!]),
            TokenExchangeRequest(subject: .init("s", type: .accessToken), audiences: [""]),
            TokenExchangeRequest(subject: .init("s", type: .accessToken), scopes: ["two words"]),
        ]
        for request in bad {
            #expect(throws: OAuth2Error.self) { try request.parameters() }
            do { _ = try request.parameters() } catch { #expect(error.code == .invalidRequest) }
        }
    }

    @Test func descriptionsNeverShowTokens() throws {
        let request = TokenExchangeRequest(
            subject: .init("subject-secret", type: .accessToken), actor: .init("actor-secret", type: .jwt), audiences: ["svc"])
        #expect(!request.description.contains("secret"))
        #expect(request.description.contains("access_token"))
        let grant = try Grant.tokenExchange(request)
        #expect(grant.type == "urn:ietf:params:oauth:grant-type:token-exchange")
        #expect(!grant.description.contains("secret"))
        #expect(grant.description.contains("subject_token_type=urn:ietf:params:oauth:token-type:access_token"))
    }
}

@Suite struct TokenExchangeResponseTests {
    let sentAt = Date(timeIntervalSince1970: 1_700_000_000)

    func parse(_ status: Int, _ body: String) throws(OAuth2Error) -> TokenExchangeResponse {
        let (head, data) = response(status, body)
        return try TokenExchangeResponse.parse(response: head, body: data, requestedScopes: ["read"], sentAt: sentAt, receivedAt: sentAt)
    }

    @Test func anIssuedAccessTokenIsATokenSetToo() throws {
        let answer = try parse(200, #"{"access_token":"at","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":60,"scope":"a b","x":1}"#)
        #expect(answer.issuedToken == "at")
        #expect(answer.issuedTokenType == .accessToken)
        #expect(answer.tokenType == "Bearer")
        #expect(!answer.isNotApplicable)
        #expect(answer.expiresAt == sentAt.addingTimeInterval(60))
        #expect(answer.scopes == ["a", "b"])
        #expect(answer.additionalFields == ["x": .integer(1)])
        let tokens = try #require(answer.tokenSet)
        #expect(tokens.accessToken == "at")
        #expect(tokens.tokenType == .bearer)
        #expect(tokens.expiresAt == answer.expiresAt)
        #expect(tokens.additionalFields["issued_token_type"] == .string(TokenTypeURI.accessToken.rawValue))
    }

    @Test func anNAResponseHoldsATokenThatIsNotAnAccessToken() throws {
        // RFC 8693 §2.2.1: access_token carries the issued token whatever it is; token_type N_A.
        let answer = try parse(200, #"{"access_token":"a.b.c","issued_token_type":"urn:ietf:params:oauth:token-type:jwt","token_type":"N_A","expires_in":60,"refresh_token":null,"scope":null}"#)
        #expect(answer.issuedToken == "a.b.c")
        #expect(answer.issuedTokenType == .jwt)
        #expect(answer.isNotApplicable)
        #expect(answer.tokenSet == nil)
        #expect(answer.refreshToken == nil)
        #expect(answer.scopes == ["read"], "no scope: the requested ones")
        #expect(try parse(200, #"{"access_token":"x","issued_token_type":"urn:ietf:params:oauth:token-type:saml2","token_type":"n_a"}"#).isNotApplicable)
    }

    @Test func aDPoPTokenAndAMissingTokenType() throws {
        let dpop = try parse(200, #"{"access_token":"at","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"DPoP"}"#)
        #expect(dpop.tokenSet?.tokenType == .dpop)
        let untyped = try parse(200, #"{"access_token":"at","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#)
        #expect(untyped.tokenType == nil)
        #expect(untyped.tokenSet?.tokenType == .bearer, "an access token without token_type is taken as Bearer")
        let idToken = try parse(200, #"{"access_token":"a.b.c","issued_token_type":"urn:ietf:params:oauth:token-type:id_token"}"#)
        #expect(idToken.tokenSet == nil, "an ID token without token_type is no access token")
    }

    @Test(arguments: [
        #"{"issued_token_type":"urn:ietf:params:oauth:token-type:jwt","token_type":"N_A"}"#,
        #"{"access_token":"","issued_token_type":"urn:ietf:params:oauth:token-type:jwt"}"#,
        #"{"access_token":"at","token_type":"Bearer"}"#,
        #"{"access_token":"at","issued_token_type":1}"#,
        #"{"access_token":"at","issued_token_type":"urn:x","token_type":3}"#,
        #"{"access_token":"at","issued_token_type":"urn:x","refresh_token":[]}"#,
        "<html>",
    ])
    func incompleteAnswersAreInvalidResponses(_ body: String) {
        do {
            _ = try parse(200, body)
            Issue.record("accepted \(body)")
        } catch {
            #expect(error.code == .invalidResponse)
        }
    }

    @Test(arguments: [
        (400, #"{"error":"invalid_grant","error_description":"Invalid subject_token"}"#, OAuth2Error.Code.invalidGrant),
        (400, #"{"error":"invalid_target"}"#, .invalidTarget),
        (401, #"{"error":"invalid_client"}"#, .invalidClient),
        (400, #"{"error":"unsupported_grant_type"}"#, .unsupportedGrantType),
        (200, #"{"error":"invalid_request"}"#, .invalidRequest),
    ])
    func errorsAreTyped(_ status: Int, _ body: String, _ code: OAuth2Error.Code) {
        do {
            _ = try parse(status, body)
            Issue.record("accepted an error")
        } catch {
            #expect(error.code == code)
            #expect(error.source == .server)
        }
    }

    @Test func descriptionsNeverShowTokens() throws {
        let answer = try parse(200, #"{"access_token":"issued-secret","issued_token_type":"urn:ietf:params:oauth:token-type:jwt","token_type":"N_A","refresh_token":"refresh-secret"}"#)
        for text in [answer.description, answer.debugDescription, String(reflecting: answer)] {
            #expect(!text.contains("secret"))
        }
        var dumped = ""
        dump(answer, to: &dumped)
        #expect(!dumped.contains("secret"))
    }
}

@Suite struct TokenExchangeClientTests {
    static let exchanged = #"{"access_token":"new-at","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}"#

    @Test func exchangeSendsTheGrantAuthenticatedAsTheClient() async throws {
        let transport = StubTransport(json: Self.exchanged)
        let client = try Fixtures.client(transport, configuration: Fixtures.configuration(method: .clientSecretBasic))
        let answer = try await client.exchangeToken(
            TokenExchangeRequest(subject: .init("old-at", type: .accessToken), audiences: ["a", "b"], requestedTokenType: .accessToken))
        #expect(answer.issuedToken == "new-at")
        let sent = try #require(transport.sent.first)
        #expect(sent.request.url?.absoluteString == "https://as.example.com/token")
        #expect(sent.request.headerFields[.authorization]?.hasPrefix("Basic ") == true)
        let pairs = try #require(FormURLEncoding.decode(String(decoding: sent.body ?? Data(), as: UTF8.self)))
        #expect(pairs.map(\.0) == ["grant_type", "subject_token", "subject_token_type", "audience", "audience", "requested_token_type"])
        #expect(sent.form["grant_type"] == Grant.tokenExchangeType)
        #expect(sent.form["subject_token"] == "old-at")
    }

    @Test func aMalformedRequestSendsNothing() async throws {
        let transport = StubTransport(json: Self.exchanged)
        let client = try Fixtures.client(transport)
        await #expect(throws: OAuth2Error.self) {
            _ = try await client.exchangeToken(TokenExchangeRequest(subject: .init("", type: .accessToken)))
        }
        #expect(transport.sent.isEmpty)
    }

    @Test func aSessionExchangesItsCurrentAccessTokenAndKeepsItsTokens() async throws {
        let transport = StubTransport(json: Self.exchanged)
        let client = try Fixtures.client(transport)
        let session = try await TokenSession(client: client, tokens: freshTokens("session-at"))
        let answer = try await session.exchange(audiences: ["downstream"])
        #expect(answer.issuedToken == "new-at")
        let sent = try #require(transport.sent.first)
        #expect(sent.form["subject_token"] == "session-at")
        #expect(sent.form["subject_token_type"] == TokenTypeURI.accessToken.rawValue)
        #expect(sent.form["audience"] == "downstream")
        #expect(session.tokens?.accessToken == "session-at")
    }

    @Test func aSessionWithoutTokensAsksForSignIn() async throws {
        let client = try Fixtures.client(StubTransport(json: Self.exchanged))
        do {
            _ = try await TokenSession(client: client).exchange(audiences: ["x"])
            Issue.record("exchanged without tokens")
        } catch let error as OAuth2Error {
            #expect(error.code == .signInRequired)
        }
    }
}

@Suite struct JWTBearerTests {
    @Test func anAssertionCarriesTheRFC7523Claims() throws {
        let issuedAt = Date(timeIntervalSince1970: 1_700_000_000)
        let assertion = JWTBearerAssertion(
            issuer: "https://idp.example", subject: "alice", audience: "https://as.example.com", issuedAt: issuedAt, lifetime: 120,
            id: "jti-1", additionalClaims: ["scope": .string("read"), "iss": .string("ignored")])
        let claims = assertion.claims
        #expect(claims["iss"] == .string("https://idp.example"))
        #expect(claims["sub"] == .string("alice"))
        #expect(claims["aud"] == .string("https://as.example.com"))
        #expect(claims["iat"] == .integer(1_700_000_000))
        #expect(claims["exp"] == .integer(1_700_000_120))
        #expect(claims["jti"] == .string("jti-1"))
        #expect(claims["scope"] == .string("read"))
        #expect(JWTBearerAssertion(issuer: "i", subject: "s", audience: "a").id != JWTBearerAssertion(issuer: "i", subject: "s", audience: "a").id)
    }

    @Test func theSignedAssertionVerifiesWithThePublicKey() throws {
        let key = try JWSSigningKey.generate(.es256, keyID: "k1")
        let jwt = try JWTBearerAssertion(issuer: "i", subject: "s", audience: "a").signed(with: key)
        let jws = try JWS(compact: jwt)
        #expect(jws.isSigned(by: try #require(key.publicKey)))
        #expect(jws.keyID == "k1")
        #expect(jws.type == "JWT")
        #expect(try jws.claims()["sub"] == .string("s"))
        #expect(throws: JOSEError.self) { try JWTBearerAssertion(issuer: "", subject: "s", audience: "a").signed(with: key) }
    }

    @Test func theGrantSendsTheAssertionAndScopes() async throws {
        let transport = StubTransport(json: #"{"access_token":"at","token_type":"Bearer"}"#)
        let client = try Fixtures.client(transport)
        let key = try JWSSigningKey.generate(.es256)
        let assertion = client.jwtBearerAssertion(issuer: "https://idp.example", subject: "alice")
        #expect(assertion.audience == Fixtures.issuer)
        let tokens = try await client.jwtBearer(signing: assertion, with: key, scopes: ["read"])
        #expect(tokens.accessToken == "at")
        let sent = try #require(transport.sent.first)
        #expect(sent.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        #expect(sent.form["scope"] == "read")
        #expect(sent.request.headerFields[.authorization]?.hasPrefix("Basic ") == true, "the client still authenticates (RFC 7523 §3.1)")
        let sentAssertion = try JWS(compact: try #require(sent.form["assertion"]))
        #expect(sentAssertion.isSigned(by: try #require(key.publicKey)))
        #expect(try sentAssertion.claims()["aud"] == .string(Fixtures.issuer))
    }

    @Test(arguments: ["", "a.b", "a..c", "a.b.c.d", "a b.c.d", "a.b.c!"])
    func aMalformedAssertionIsRefusedBeforeSending(_ assertion: String) async throws {
        let transport = StubTransport(json: #"{"access_token":"at","token_type":"Bearer"}"#)
        let client = try Fixtures.client(transport)
        do {
            _ = try await client.jwtBearer(assertion: assertion)
            Issue.record("sent a malformed assertion")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidRequest)
        }
        #expect(transport.sent.isEmpty)
    }

    @Test func aRefusedAssertionIsATypedInvalidGrant() async throws {
        let transport = StubTransport(status: 400, json: #"{"error":"invalid_grant","error_description":"Assertion verification failed"}"#)
        let client = try Fixtures.client(transport)
        do {
            _ = try await client.jwtBearer(assertion: "a.b.c")
            Issue.record("accepted")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidGrant)
            #expect(error.requiresReauthorization)
        }
    }

    @Test func theGrantDescriptionRedactsTheAssertion() throws {
        #expect(!(try Grant.jwtBearer(assertion: "aaa.bbb.ccc")).description.contains("bbb"))
    }
}
