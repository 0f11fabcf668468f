import Foundation
import HTTPTypes
import OAuth2Internals
import Testing
@testable import OAuth2

/// The client side of the identity assertion grant (MCP enterprise-managed authorization,
/// SEP-990; draft-ietf-oauth-identity-assertion-authz-grant): leg 1 at the identity
/// provider, leg 2 at the authorization server, each rule without a socket.
@Suite struct IdentityAssertionGrantTests {
    static let idp = "https://idp.example.com"
    static let authorizationServer = Fixtures.issuer  // https://as.example.com
    static let resource = URL(string: "https://mcp.example.com/mcp")!
    static let idToken = "id-token-header.id-token-payload.id-token-signature"

    static let idpMetadata = ServerMetadata(
        issuer: URL(string: idp)!, authorizationEndpoint: URL(string: "https://idp.example.com/authorize")!,
        tokenEndpoint: URL(string: "https://idp.example.com/token")!)

    /// A signed JWT with header `typ`, as an identity provider would issue.
    static func assertion(typ: String? = "oauth-id-jag+jwt") throws -> String {
        let key = try JWSSigningKey.generate(.es256, keyID: "idp-key")
        let claims: [String: JSONValue] = [
            "iss": .string(idp), "sub": "alice", "aud": .string(authorizationServer), "client_id": "client-1",
            "jti": "jti-1", "iat": 1_700_000_000, "exp": 1_700_000_300, "resource": .string(resource.absoluteString),
        ]
        return try key.sign(claims: claims, header: typ.map { ["typ": .string($0)] } ?? [:])
    }

    static func exchangeAnswer(_ token: String, issuedType: String = TokenTypeURI.identityAssertionGrant.rawValue,
                               tokenType: String? = "N_A", extra: String = "") -> String {
        var members = [#""access_token":"\#(token)""#, #""issued_token_type":"\#(issuedType)""#, #""expires_in":300"#]
        if let tokenType { members.append(#""token_type":"\#(tokenType)""#) }
        if !extra.isEmpty { members.append(extra) }
        return "{" + members.joined(separator: ",") + "}"
    }

    static func idpClient(_ transport: StubTransport) throws -> OAuth2Client {
        try Fixtures.client(transport, metadata: idpMetadata)
    }

    // MARK: - Leg 1

    @Test func theTokenTypeIsIdJag() {
        #expect(TokenTypeURI.identityAssertionGrant.rawValue == "urn:ietf:params:oauth:token-type:id-jag")
        #expect(TokenTypeURI(name: "id-jag") == .identityAssertionGrant)
        #expect(IdentityAssertionGrant.jwtType == "oauth-id-jag+jwt")
    }

    @Test func leg1SendsExactlyTheDraftsParametersToTheIdentityProvider() async throws {
        let assertion = try Self.assertion()
        let transport = StubTransport(json: Self.exchangeAnswer(assertion, extra: #""scope":"mcp:read""#))
        let client = try Self.idpClient(transport)
        let grant = try await client.requestIdentityAssertionGrant(
            idToken: Self.idToken, audience: Self.authorizationServer, resource: Self.resource, scopes: ["mcp:read"])
        #expect(grant.assertion == assertion)
        #expect(grant.audience == Self.authorizationServer)
        #expect(grant.resource == Self.resource)
        #expect(grant.scopes == ["mcp:read"])
        #expect(grant.expiresAt != nil)

        let sent = try #require(transport.sent.first)
        #expect(transport.sent.count == 1)
        #expect(sent.request.url?.absoluteString == "https://idp.example.com/token")
        let form = sent.form
        #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange")
        #expect(form["requested_token_type"] == "urn:ietf:params:oauth:token-type:id-jag")
        #expect(form["subject_token"] == Self.idToken)
        #expect(form["subject_token_type"] == "urn:ietf:params:oauth:token-type:id_token")
        #expect(form["audience"] == Self.authorizationServer)
        #expect(form["resource"] == Self.resource.absoluteString)
        #expect(form["scope"] == "mcp:read")
        #expect(form["actor_token"] == nil && form["actor_token_type"] == nil, "draft §4.3: no actor token")
        #expect(sent.request.headerFields[.authorization]?.hasPrefix("Basic ") == true, "the client authenticates as configured")
    }

    @Test func leg1WithoutResourceOrScopeSendsNeither() async throws {
        let transport = StubTransport(json: Self.exchangeAnswer(try Self.assertion()))
        let grant = try await Self.idpClient(transport).requestIdentityAssertionGrant(idToken: Self.idToken, audience: Self.authorizationServer)
        let form = try #require(transport.sent.first).form
        #expect(form["resource"] == nil && form["scope"] == nil)
        #expect(grant.resource == nil && grant.scopes == nil)
    }

    @Test(arguments: [
        ("urn:ietf:params:oauth:token-type:access_token", "N_A"),   // another issued type
        ("urn:ietf:params:oauth:token-type:jwt", "N_A"),
        ("urn:ietf:params:oauth:token-type:id-jag", "Bearer"),        // an access token's token_type
        ("urn:ietf:params:oauth:token-type:id-jag", "DPoP"),
    ])
    func leg1RefusesAnAnswerThatIsNoIdentityAssertionGrant(_ issuedType: String, _ tokenType: String) async throws {
        let assertion = try Self.assertion()
        let transport = StubTransport(json: Self.exchangeAnswer(assertion, issuedType: issuedType, tokenType: tokenType))
        do {
            _ = try await Self.idpClient(transport).requestIdentityAssertionGrant(idToken: Self.idToken, audience: Self.authorizationServer)
            Issue.record("accepted issued_token_type \(issuedType) with token_type \(tokenType)")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidResponse)
            #expect(!error.description.contains(assertion), "no token in the message")
        }
    }

    @Test func leg1AcceptsAnAnswerWithoutTokenType() async throws {
        // Lenient where servers deviate: token_type REQUIRED N_A, but its absence changes nothing.
        let transport = StubTransport(json: Self.exchangeAnswer(try Self.assertion(), tokenType: nil))
        _ = try await Self.idpClient(transport).requestIdentityAssertionGrant(idToken: Self.idToken, audience: Self.authorizationServer)
    }

    @Test(arguments: [nil, "JWT", "at+jwt"] as [String?])
    func leg1RefusesAJWTWithoutTheIdJagType(_ typ: String?) async throws {
        let assertion = try Self.assertion(typ: typ)
        let transport = StubTransport(json: Self.exchangeAnswer(assertion))
        do {
            _ = try await Self.idpClient(transport).requestIdentityAssertionGrant(idToken: Self.idToken, audience: Self.authorizationServer)
            Issue.record("accepted typ \(typ ?? "none")")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidResponse)
            #expect(error.message?.contains("typ") == true)
            #expect(!error.description.contains(assertion))
        }
    }

    @Test func leg1AcceptsTheMediaTypeFormOfTyp() async throws {
        let transport = StubTransport(json: Self.exchangeAnswer(try Self.assertion(typ: "application/OAUTH-ID-JAG+JWT")))
        _ = try await Self.idpClient(transport).requestIdentityAssertionGrant(idToken: Self.idToken, audience: Self.authorizationServer)
    }

    @Test(arguments: [
        #"{"issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#,   // no assertion
        #"{"access_token":"","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#,
        #"{"access_token":"not-a-jwt","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#,
        #"{"access_token":"a.b","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#,
    ])
    func leg1RefusesAMissingOrMalformedAssertion(_ body: String) async throws {
        let transport = StubTransport(json: body)
        do {
            _ = try await Self.idpClient(transport).requestIdentityAssertionGrant(idToken: Self.idToken, audience: Self.authorizationServer)
            Issue.record("accepted \(body)")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidResponse)
            #expect(!error.description.contains("not-a-jwt"))
        }
    }

    @Test(arguments: [
        ("invalid_grant", OAuth2Error.Code.invalidGrant), ("invalid_target", .invalidTarget),
        ("unsupported_grant_type", .unsupportedGrantType), ("invalid_client", .invalidClient),
    ])
    func leg1ErrorsAreTyped(_ serverCode: String, _ code: OAuth2Error.Code) async throws {
        let transport = StubTransport(status: 400, json: #"{"error":"\#(serverCode)","error_description":"Audience validation failed"}"#)
        do {
            _ = try await Self.idpClient(transport).requestIdentityAssertionGrant(idToken: Self.idToken, audience: Self.authorizationServer)
            Issue.record("no error")
        } catch let error as OAuth2Error {
            #expect(error.code == code)
            #expect(!error.description.contains(Self.idToken), "the ID token is not echoed")
        }
    }

    @Test func leg1RefusesAnEmptyIDTokenOrAudienceBeforeSending() async throws {
        let transport = StubTransport(json: Self.exchangeAnswer(try Self.assertion()))
        let client = try Self.idpClient(transport)
        for (idToken, audience) in [("", Self.authorizationServer), (Self.idToken, "")] {
            do {
                _ = try await client.requestIdentityAssertionGrant(idToken: idToken, audience: audience)
                Issue.record("sent")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidRequest)
            }
        }
        #expect(transport.sent.isEmpty)
    }

    // MARK: - Leg 2

    @Test func leg2PresentsTheAssertionWithTheJWTBearerGrant() async throws {
        let assertion = try Self.assertion()
        let transport = StubTransport(json: #"{"access_token":"mcp-at","token_type":"Bearer","expires_in":3600,"scope":"mcp:read"}"#)
        let client = try Fixtures.client(transport)
        let grant = IdentityAssertionGrant(
            assertion: assertion, audience: Self.authorizationServer, resource: Self.resource, scopes: ["mcp:read"])
        let tokens = try await client.jwtBearer(grant)
        #expect(tokens.accessToken == "mcp-at")
        #expect(tokens.scopes == ["mcp:read"])
        let sent = try #require(transport.sent.first)
        #expect(transport.sent.count == 1)
        #expect(sent.request.url?.absoluteString == "https://as.example.com/token")
        let form = sent.form
        #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        #expect(form["assertion"] == assertion)
        #expect(form["scope"] == "mcp:read")
        #expect(form["resource"] == Self.resource.absoluteString)
        #expect(form["subject_token"] == nil)
        #expect(sent.request.headerFields[.authorization]?.hasPrefix("Basic ") == true, "the client authenticates with the AS")
    }

    @Test func leg2ScopesOverrideTheGrants() async throws {
        let transport = StubTransport(json: #"{"access_token":"mcp-at","token_type":"Bearer"}"#)
        let grant = IdentityAssertionGrant(assertion: try Self.assertion(), audience: Self.authorizationServer, scopes: ["a", "b"])
        let tokens = try await Fixtures.client(transport).jwtBearer(grant, scopes: ["a"])
        #expect(transport.sent.first?.form["scope"] == "a")
        #expect(transport.sent.first?.form["resource"] == nil)
        #expect(tokens.scopes == ["a"])
    }

    @Test func leg2NeverSendsAGrantForAnotherServer() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        let grant = IdentityAssertionGrant(assertion: try Self.assertion(), audience: "https://other-as.example.com")
        do {
            _ = try await Fixtures.client(transport).jwtBearer(grant)
            Issue.record("sent")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidRequest)
            #expect(!error.description.contains(grant.assertion))
        }
        #expect(transport.sent.isEmpty, "the assertion went nowhere")
    }

    @Test func leg2NeverSendsAnExpiredGrant() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let client = try OAuth2Client(
            metadata: Fixtures.metadata, configuration: Fixtures.configuration(),
            pipeline: HTTPPipeline(
                transport: transport, interceptors: [], logger: .init(label: "test"),
                userAgent: HTTPEnvironment.defaultUserAgent, additionalHeaders: [:]),
            now: { now })
        let grant = IdentityAssertionGrant(
            assertion: try Self.assertion(), audience: Self.authorizationServer, expiresAt: now.addingTimeInterval(-1))
        do {
            _ = try await client.jwtBearer(grant)
            Issue.record("sent")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidRequest)
        }
        #expect(transport.sent.isEmpty)
        #expect(!grant.isExpired(at: now.addingTimeInterval(-2)))
    }

    @Test func leg2NeedsAnIssuer() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        let metadata = ServerMetadata(
            authorizationEndpoint: URL(string: "https://as.example.com/authorize")!, tokenEndpoint: URL(string: "https://as.example.com/token")!)
        let grant = IdentityAssertionGrant(assertion: try Self.assertion(), audience: Self.authorizationServer)
        do {
            _ = try await Fixtures.client(transport, metadata: metadata).jwtBearer(grant)
            Issue.record("sent")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidConfiguration)
        }
        #expect(transport.sent.isEmpty)
    }

    @Test func leg2RefusalIsTypedInvalidGrant() async throws {
        let transport = StubTransport(status: 400, json: #"{"error":"invalid_grant","error_description":"The identity assertion grant is refused: it has expired."}"#)
        let grant = IdentityAssertionGrant(assertion: try Self.assertion(), audience: Self.authorizationServer)
        do {
            _ = try await Fixtures.client(transport).jwtBearer(grant)
            Issue.record("no error")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidGrant)
            #expect(!error.description.contains(grant.assertion))
        }
    }

    @Test func descriptionsNeverShowTheAssertion() throws {
        let assertion = try Self.assertion()
        let grant = IdentityAssertionGrant(assertion: assertion, audience: Self.authorizationServer, resource: Self.resource)
        #expect(!grant.description.contains(assertion))
        #expect(!grant.debugDescription.contains(assertion))
        var dumped = ""
        dump(grant, to: &dumped)
        #expect(!dumped.contains(assertion))
        #expect(grant.description.contains(Self.authorizationServer))
    }

    // MARK: - The whole flow

    @Test func theFlowSendsTheIDTokenOnlyToTheIdentityProviderAndTheAssertionOnlyToTheAuthorizationServer() async throws {
        let assertion = try Self.assertion()
        let idpTransport = StubTransport(json: Self.exchangeAnswer(assertion, extra: #""scope":"mcp:read""#))
        let asTransport = StubTransport(json: #"{"access_token":"mcp-at","token_type":"Bearer","expires_in":3600}"#)
        let flow = IdentityAssertionAuthorization(
            identityProvider: try Self.idpClient(idpTransport), authorizationServer: try Fixtures.client(asTransport),
            resource: Self.resource, scopes: ["mcp:read"])
        #expect(try flow.audience() == Self.authorizationServer)
        let tokens = try await flow.tokens(idToken: Self.idToken)
        #expect(tokens.accessToken == "mcp-at")
        #expect(idpTransport.sent.count == 1 && asTransport.sent.count == 1)
        #expect(idpTransport.sent[0].form["audience"] == Self.authorizationServer)
        #expect(idpTransport.sent[0].form["resource"] == Self.resource.absoluteString)
        #expect(asTransport.sent[0].form["assertion"] == assertion)
        #expect(asTransport.sent[0].form["resource"] == Self.resource.absoluteString)
        for sent in asTransport.sent { #expect(!String(decoding: sent.body ?? Data(), as: UTF8.self).contains(Self.idToken)) }
        for sent in idpTransport.sent { #expect(!String(decoding: sent.body ?? Data(), as: UTF8.self).contains("assertion=")) }
    }

    @Test func theFlowStopsAtLeg1WhenTheIdentityProviderRefuses() async throws {
        let idpTransport = StubTransport(status: 400, json: #"{"error":"invalid_grant","error_description":"The subject token is refused: it has expired."}"#)
        let asTransport = StubTransport(json: StubTransport.tokenJSON)
        let flow = IdentityAssertionAuthorization(
            identityProvider: try Self.idpClient(idpTransport), authorizationServer: try Fixtures.client(asTransport))
        do {
            _ = try await flow.tokens(idToken: Self.idToken)
            Issue.record("no error")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidGrant)
        }
        #expect(asTransport.sent.isEmpty)
    }
}
