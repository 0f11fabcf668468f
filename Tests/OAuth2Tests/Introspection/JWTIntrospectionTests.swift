import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// JWT answers from the introspection endpoint (RFC 9701): asked for with `Accept`, their
/// media type, `typ`, signature, `iss`, `aud` and `iat` checked, `token_introspection` read.
/// No socket: a recording transport answers the introspection endpoint and the JWK set.
@Suite struct JWTIntrospectionTests {
    static let key = try! JWSSigningKey.generate(.es256, keyID: "as-1")
    static let jwksURI = URL(string: "https://as.example.com/jwks")!
    static let metadata = Fixtures.metadata.filling(from: ServerMetadata(
        jwksURI: jwksURI, additionalFields: ["introspection_signing_alg_values_supported": ["ES256"]]))

    static let introspection: JSONValue = .object([
        "active": true, "scope": "read", "client_id": "client-9", "sub": "alice",
        "authorization_details": [.object(["type": "payment_initiation", "actions": ["initiate"]])],
    ])

    static func claims(
        iss: String = Fixtures.issuer, aud: JSONValue = "client-1", iat: Date = Date(), introspection: JSONValue? = JWTIntrospectionTests.introspection
    ) -> [String: JSONValue] {
        var claims: [String: JSONValue] = ["iss": .string(iss), "aud": aud, "iat": .integer(Int64(iat.timeIntervalSince1970))]
        if let introspection { claims["token_introspection"] = introspection }
        return claims
    }

    static func signed(_ claims: [String: JSONValue] = claims(), key: JWSSigningKey = key, typ: String = "token-introspection+jwt") throws -> String {
        try key.sign(claims: claims, header: ["typ": .string(typ)])
    }

    /// A transport serving the key set and answering the introspection endpoint with `body`.
    static func transport(_ body: String, contentType: String = "application/token-introspection+jwt") -> StubTransport {
        StubTransport { request, _ in
            if request.url == jwksURI { return response(200, #"{"keys":[\#(JSONValue.object(key.publicKey!.jsonObject))]}"#) }
            return response(200, body, contentType: contentType)
        }
    }

    func introspect(_ transport: StubTransport, _ options: IntrospectionJWTValidator.Options = .init()) async throws -> IntrospectionResponse {
        try await Fixtures.client(transport, metadata: Self.metadata).introspect("at-1", hint: .accessToken, format: .jwt(options))
    }

    func refusal(_ transport: StubTransport, _ options: IntrospectionJWTValidator.Options = .init()) async -> OAuth2Error? {
        do {
            _ = try await introspect(transport, options)
            Issue.record("accepted")
            return nil
        } catch let error as OAuth2Error {
            return error
        } catch {
            Issue.record("untyped: \(error)")
            return nil
        }
    }

    @Test func aGoodAnswerIsAskedForCheckedAndRead() async throws {
        let transport = Self.transport(try Self.signed())
        let answer = try await introspect(transport)
        #expect(answer.active)
        #expect(answer.scopes == ["read"])
        #expect(answer.clientID == "client-9")
        #expect(answer.authorizationDetails == [AuthorizationDetail(type: "payment_initiation", actions: ["initiate"])])
        let sent = try #require(transport.sent.first { $0.request.path == "/introspect" })
        #expect(sent.request.headerFields[.accept] == "application/token-introspection+jwt")
        #expect(sent.form["token"] == "at-1")
        #expect(sent.request.headerFields[.authorization] != nil, "the client authenticates")
    }

    @Test func anAudienceArrayOrAConfiguredAudienceIsAccepted() async throws {
        _ = try await introspect(Self.transport(try Self.signed(Self.claims(aud: ["other", "client-1"]))))
        _ = try await introspect(Self.transport(try Self.signed(Self.claims(aud: "https://rs.example"))), .init(audiences: ["https://rs.example"]))
    }

    @Test func aBadSignatureIsRefused() async throws {
        let stranger = try JWSSigningKey.generate(.es256, keyID: "as-1")
        let error = await refusal(Self.transport(try Self.signed(key: stranger)))
        #expect(error?.code == .invalidIntrospectionResponse)
        #expect(error?.joseReason == .signatureInvalid)
    }

    @Test func anAlgorithmNotAllowedIsRefused() async throws {
        let hmac = try JWSSigningKey(secret: "s3cr3t-s3cr3t-s3cr3t-s3cr3t-s3cr3t")
        let error = await refusal(Self.transport(try Self.signed(key: hmac)))
        #expect(error?.joseReason == .algorithmNotAllowed)
    }

    @Test func anotherIssuerIsRefused() async throws {
        let error = await refusal(Self.transport(try Self.signed(Self.claims(iss: "https://evil.example"))))
        #expect(error?.code == .invalidIntrospectionResponse)
        #expect(error?.joseReason == .issuerMismatch)
    }

    @Test func anotherAudienceIsRefused() async throws {
        let error = await refusal(Self.transport(try Self.signed(Self.claims(aud: "another-client"))))
        #expect(error?.joseReason == .audienceMismatch)
        let none = await refusal(Self.transport(try Self.signed(Self.claims(aud: .null))))
        #expect(none?.joseReason == .audienceMismatch)
    }

    @Test func aStaleOrFutureIatIsRefused() async throws {
        let stale = await refusal(Self.transport(try Self.signed(Self.claims(iat: Date().addingTimeInterval(-3600)))))
        #expect(stale?.joseReason == .issuedAtInvalid)
        let future = await refusal(Self.transport(try Self.signed(Self.claims(iat: Date().addingTimeInterval(3600)))))
        #expect(future?.joseReason == .issuedAtInvalid)
        var claims = Self.claims()
        claims["iat"] = nil
        let missing = await refusal(Self.transport(try Self.signed(claims)))
        #expect(missing?.joseReason == .issuedAtInvalid)
    }

    @Test func anotherContentTypeIsRefused() async throws {
        let json = await refusal(Self.transport(#"{"active":true}"#, contentType: "application/json"))
        #expect(json?.code == .invalidIntrospectionResponse)
        let plainJWT = await refusal(Self.transport(try Self.signed(), contentType: "application/jwt"))
        #expect(plainJWT?.code == .invalidIntrospectionResponse)
    }

    @Test func aMissingTokenIntrospectionClaimIsRefused() async throws {
        let missing = await refusal(Self.transport(try Self.signed(Self.claims(introspection: nil))))
        #expect(missing?.joseReason == .invalidClaim)
        let noActive = await refusal(Self.transport(try Self.signed(Self.claims(introspection: .object(["scope": "read"])))))
        #expect(noActive?.joseReason == .invalidClaim)
    }

    @Test func anotherTypIsRefused() async throws {
        let error = await refusal(Self.transport(try Self.signed(typ: "JWT")))
        #expect(error?.joseReason == .invalidClaim)
    }

    @Test func anErrorAnswerIsTheServersError() async throws {
        let transport = StubTransport { _, _ in response(401, #"{"error":"invalid_client"}"#) }
        let error = await refusal(transport)
        #expect(error?.code == .invalidClient)
    }

    @Test func theValidatorDropsNoneAndHMAC() {
        let validator = IntrospectionJWTValidator(issuer: "i", audiences: ["a"], allowedAlgorithms: [.none, .hs256, .rs256])
        #expect(validator.allowedAlgorithms == [.rs256])
    }
}
