import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// `requestToken(.refreshToken(…))` keeps the rules of a session's refresh (one path for
/// both): the refresh token sent survives an answer without one, Glewlwyd's empty 400 is
/// `invalid_grant`, and a new ID token names the subject of the one it replaces (OIDC Core
/// §12.2). No socket: a recording transport answers the token endpoint and the JWK set.
@Suite struct RefreshGrantTests {
    static let key = try! JWSSigningKey.generate(.es256, keyID: "k")
    static let jwksURI = URL(string: "https://as.example.com/jwks")!
    static let metadata = ServerMetadata(
        issuer: URL(string: Fixtures.issuer)!,
        authorizationEndpoint: URL(string: "https://as.example.com/authorize")!,
        tokenEndpoint: URL(string: "https://as.example.com/token")!,
        jwksURI: jwksURI,
        additionalFields: ["id_token_signing_alg_values_supported": ["ES256"]])

    /// A transport that serves the JWK set and answers the token endpoint with `token`.
    static func transport(_ token: @escaping @Sendable () -> (HTTPResponse, Data)) -> StubTransport {
        StubTransport { request, _ in
            if request.url == jwksURI { return response(200, #"{"keys":[\#(JSONValue.object(key.publicKey!.jsonObject))]}"#) }
            return token()
        }
    }

    /// An ID token of the fixture's issuer for `subject`.
    static func idToken(subject: String) throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        return try key.sign(claims: [
            "iss": .string(Fixtures.issuer), "sub": .string(subject), "aud": "client-1", "exp": .integer(now + 300), "iat": .integer(now),
        ])
    }

    static func tokenJSON(refreshToken: String? = nil, idToken: String? = nil) -> String {
        var members = [#""access_token":"at-2","token_type":"Bearer","expires_in":60"#]
        if let refreshToken { members.append(#""refresh_token":"\#(refreshToken)""#) }
        if let idToken { members.append(#""id_token":"\#(idToken)""#) }
        return "{" + members.joined(separator: ",") + "}"
    }

    static func failure(_ body: () async throws -> Void) async -> OAuth2Error? {
        do { try await body(); return nil } catch { return error as? OAuth2Error }
    }

    @Test func anAnswerWithoutARefreshTokenKeepsTheOneSent() async throws {
        let transport = Self.transport { response(200, Self.tokenJSON()) }
        let client = try Fixtures.client(transport, metadata: Self.metadata)
        let renewed = try await client.requestToken(.refreshToken("rt-1"))
        #expect(renewed.accessToken == "at-2")
        #expect(renewed.refreshToken == "rt-1", "the refresh token sent stays valid (RFC 6749 §6)")
        #expect(transport.sent.first?.form["refresh_token"] == "rt-1")
        // A rotated refresh token replaces it.
        let rotating = try Fixtures.client(Self.transport { response(200, Self.tokenJSON(refreshToken: "rt-2")) }, metadata: Self.metadata)
        #expect(try await rotating.requestToken(.refreshToken("rt-1")).refreshToken == "rt-2")
    }

    @Test func anEmpty400IsARefusedGrant() async throws {
        // Glewlwyd's answer to a revoked, expired or unknown refresh token: HTTP 400, no body.
        let client = try Fixtures.client(Self.transport { response(400, "", contentType: nil) }, metadata: Self.metadata)
        let refused = await Self.failure { _ = try await client.requestToken(.refreshToken("rt-dead")) }
        #expect(refused?.code == .invalidGrant)
        #expect(refused?.requiresReauthorization == true)
        // Only a refresh reads it so: an empty 400 to another grant is not a refused grant.
        let other = await Self.failure { _ = try await client.requestToken(.clientCredentials()) }
        #expect(other != nil)
        #expect(other?.code != .invalidGrant)
        // A 400 that says what is wrong keeps its code.
        let explained = try Fixtures.client(
            Self.transport { response(400, #"{"error":"invalid_request"}"#) }, metadata: Self.metadata)
        #expect(await Self.failure { _ = try await explained.requestToken(.refreshToken("rt-1")) }?.code == .invalidRequest)
    }

    @Test func aNewIDTokenMustNameThePreviousSubject() async throws {
        let previous = try #require(TokenSet(accessToken: "at-1", idToken: try Self.idToken(subject: "alice")).idTokenClaims)
        let bob = try Self.idToken(subject: "bob")
        let client = try Fixtures.client(Self.transport { response(200, Self.tokenJSON(idToken: bob)) }, metadata: Self.metadata)
        let refused = await Self.failure {
            _ = try await client.requestToken(.refreshToken("rt-1", previousIDTokenClaims: previous))
        }
        #expect(refused?.code == .invalidIDToken)
        #expect((refused?.underlyingError as? JOSEError)?.reason == .subjectMismatch)
        // The same subject passes; without previous claims there is nothing to compare.
        let alice = try Self.idToken(subject: "alice")
        let same = try Fixtures.client(Self.transport { response(200, Self.tokenJSON(idToken: alice)) }, metadata: Self.metadata)
        #expect(try await same.requestToken(.refreshToken("rt-1", previousIDTokenClaims: previous)).idTokenClaims?.subject == "alice")
        #expect(try await client.requestToken(.refreshToken("rt-1")).idTokenClaims?.subject == "bob")
    }

    @Test func aSessionsRefreshTakesTheSamePath() async throws {
        // The package-level refresh a session uses: the same rules, the answer merged.
        let alice = try Self.idToken(subject: "alice")
        let transport = Self.transport { response(200, Self.tokenJSON(idToken: try! Self.idToken(subject: "mallory"))) }
        let client = try Fixtures.client(transport, metadata: Self.metadata)
        let refused = await Self.failure { _ = try await client.refresh(TokenSet(accessToken: "at-1", refreshToken: "rt-1", idToken: alice)) }
        #expect(refused?.code == .invalidIDToken)
        let kept = try await Fixtures.client(Self.transport { response(200, Self.tokenJSON()) }, metadata: Self.metadata)
            .refresh(TokenSet(accessToken: "at-1", refreshToken: "rt-1", idToken: alice, scopes: ["openid"]))
        #expect(kept.refreshToken == "rt-1")
        #expect(kept.idToken == alice)
        #expect(kept.scopes == ["openid"])
    }
}
