import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// Rich Authorization Requests (RFC 9396) on the service side: a resource server requiring
/// `authorization_details` of a JWT access token or an introspection answer (JSON or a JWT,
/// RFC 9701), and a web route's requirement asking for a step-up when they are missing.
@Suite(.timeLimit(.minutes(1))) struct AuthorizationDetailRequirementTests {
    let date = ManualDate(TestIssuer.start)

    static let granted: JSONValue = [.object([
        "type": "payment_initiation", "actions": ["initiate", "status"], "locations": ["https://bank.example/payments"],
        "instructedAmount": .object(["currency": "EUR", "amount": "12.00"]),
    ])]

    func request(_ token: String) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/orders", headerFields: [.authorization: "Bearer \(token)"])
    }

    @Test func aJWTAccessTokensDetailsAreMatched() async throws {
        let server = ResourceServer(accessTokens: TestIssuer.verifier(date: date))
        let token = TestIssuer.token { $0["authorization_details"] = Self.granted }
        let initiate = AuthorizationDetail(type: "payment_initiation", actions: ["initiate"], members: ["instructedAmount": .object(["currency": "EUR"])])
        let authorized = try await server.verify(request(token), requiredAuthorizationDetails: [initiate])
        #expect(authorized.token.authorizationDetails?.first?.actions == ["initiate", "status"])

        let cancel = AuthorizationDetail(type: "payment_initiation", actions: ["cancel"])
        guard case .refused(let challenge) = await server.authorize(request(token), requiredAuthorizationDetails: [cancel]) else {
            Issue.record("an action not granted was accepted")
            return
        }
        #expect(challenge.status == .forbidden)
        #expect(challenge.error.code == .insufficientScope)
        #expect(challenge.error.reason == .missingAuthorizationDetails)

        let plain = TestIssuer.token()
        let error = await refusal { () async throws(AccessTokenError) in
            try await server.verify(request(plain), requiredAuthorizationDetails: [AuthorizationDetail(type: "payment_initiation")])
        }
        #expect(error?.reason == .missingAuthorizationDetails, "a token without details")
        _ = try await server.verify(request(plain), requiredAuthorizationDetails: [])
    }

    /// An introspector at an authorization server answering `body` with `contentType`,
    /// and serving `key`'s JWK set.
    func introspector(body: @escaping @Sendable () throws -> String, contentType: String, key: JWSSigningKey, format: IntrospectionFormat) throws -> TokenIntrospector {
        let jwks = URL(string: "https://id.example.com/jwks")!
        let transport = RecordingTransport { request, _ in
            if request.url == jwks { return jsonResponse(200, #"{"keys":[\#(JSONValue.object(key.publicKey!.jsonObject))]}"#) }
            return (HTTPResponse(status: .ok, headerFields: [.contentType: contentType]), Data(try body().utf8))
        }
        let metadata = ServerMetadata(
            issuer: URL(string: TestIssuer.issuer)!, tokenEndpoint: URL(string: "https://id.example.com/token")!,
            introspectionEndpoint: URL(string: "https://id.example.com/introspect")!, jwksURI: jwks,
            additionalFields: ["introspection_signing_alg_values_supported": ["ES256"]])
        let client = try OAuth2Client(
            metadata: metadata, configuration: ClientConfiguration(clientID: "orders-api", clientSecret: "api-secret"),
            environment: HTTPEnvironment(transport: transport, retryPolicy: .never))
        return TokenIntrospector(
            client: client, accepting: .audiences(["orders"]), issuer: nil, policy: .init(maximumLifetime: 0, negativeLifetime: 0), format: format,
            logger: CapturedLog().logger(), now: { Date() })
    }

    @Test func anIntrospectorAsksForJWTAnswersAndRefusesBadOnes() async throws {
        let key = try JWSSigningKey.generate(.es256, keyID: "as-1")
        let exp = Int64(Date().timeIntervalSince1970) + 600
        let answer: JSONValue = .object([
            "active": true, "aud": "orders", "scope": "orders:read", "exp": .integer(exp), "authorization_details": Self.granted,
        ])
        let good = try introspector(
            body: { try key.sign(claims: ["iss": .string(TestIssuer.issuer), "aud": "orders-api", "iat": .integer(Int64(Date().timeIntervalSince1970)), "token_introspection": answer], header: ["typ": "token-introspection+jwt"]) },
            contentType: "application/token-introspection+jwt", key: key, format: .jwt())
        let server = ResourceServer(introspection: good)
        let verified = try await server.verify(request("opaque-1"), requiredScopes: ["orders:read"], requiredAuthorizationDetails: [AuthorizationDetail(type: "payment_initiation")])
        #expect(verified.token.format == .introspected)

        // Signed by another key: the answer is not believed; the check is unavailable, not a pass.
        let stranger = try JWSSigningKey.generate(.es256, keyID: "as-1")
        let forged = try introspector(
            body: { try stranger.sign(claims: ["iss": .string(TestIssuer.issuer), "aud": "orders-api", "iat": .integer(Int64(Date().timeIntervalSince1970)), "token_introspection": answer], header: ["typ": "token-introspection+jwt"]) },
            contentType: "application/token-introspection+jwt", key: key, format: .jwt())
        let error = await refusal { () async throws(AccessTokenError) in try await forged.verify("opaque-1") }
        #expect(error?.code == .temporarilyUnavailable)

        // A plain JSON answer when a JWT was asked for is refused the same way.
        let unsigned = try introspector(body: { answer.description }, contentType: "application/json", key: key, format: .jwt())
        let plain = await refusal { () async throws(AccessTokenError) in try await unsigned.verify("opaque-1") }
        #expect(plain?.code == .temporarilyUnavailable)
    }

    @Test func aWebRouteAsksForAStepUpWhenTheDetailsAreMissing() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var record = WebSessionRecord(
            idHash: "h", account: "a", issuer: "https://op.example.com", subject: "alice", providerSessionID: nil, claims: [:],
            scopes: ["openid"], csrfToken: "c", createdAt: now, lastSeenAt: now, absoluteExpiry: now.addingTimeInterval(3600))
        let required = WebAccessRequirement(authorizationDetails: [AuthorizationDetail(type: "payment_initiation", actions: ["initiate"])])
        #expect(required.shortfall(of: record, now: now) == .stepUp, "none granted")
        record.authorizationDetails = AuthorizationDetail.entries(Self.granted)
        #expect(required.shortfall(of: record, now: now) == .none)
        #expect(WebAccessRequirement(authorizationDetails: [AuthorizationDetail(type: "payment_initiation", actions: ["cancel"])])
            .shortfall(of: record, now: now) == .stepUp)
        // Kept through the stores' JSON, and a requirement stored before the field existed decodes.
        let decoded = try JSONDecoder().decode(WebSessionRecord.self, from: JSONEncoder().encode(record))
        #expect(decoded.authorizationDetails == record.authorizationDetails)
        let old = try JSONDecoder().decode(WebAccessRequirement.self, from: Data(#"{"scopes":[],"claims":{},"acrValues":[]}"#.utf8))
        #expect(old.authorizationDetails.isEmpty)
        let roundTrip = try JSONDecoder().decode(WebAccessRequirement.self, from: JSONEncoder().encode(required))
        #expect(roundTrip == required)
    }
}

extension AuthorizationDetail {
    static func entries(_ value: JSONValue) -> [AuthorizationDetail]? {
        value.arrayValue?.compactMap(AuthorizationDetail.init(json:))
    }
}
