import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// The framework-neutral request check: the `Authorization` header's forms, and the
/// responses of RFC 6750 §3 and RFC 9449 §7.1 (parsed back with the library's own
/// `WWWAuthenticate` reader).
@Suite struct ResourceServerTests {
    let date = ManualDate(TestIssuer.start)

    func server(dpop: Bool = true, bearer: Bool = true, logger: CapturedLog? = nil) -> ResourceServer {
        var verifier = DPoPProofVerifier(publicBaseURL: URL(string: "https://api.example.com")!, allowedAlgorithms: [.es256, .ps256])
        verifier.now = date.function
        return ResourceServer(
            accessTokens: TestIssuer.verifier(date: date, logger: logger?.logger() ?? .init(label: "test")), dpop: dpop ? verifier : nil,
            acceptsBearerTokens: bearer, realm: "orders", logger: logger?.logger() ?? .init(label: "test"))
    }

    func request(_ authorization: [String], path: String = "/orders") -> HTTPRequest {
        var fields = HTTPFields()
        for value in authorization { fields.append(HTTPField(name: .authorization, value: value)) }
        return HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: path, headerFields: fields)
    }

    func challenge(_ server: ResourceServer, _ request: HTTPRequest, scopes: [String] = []) async -> AccessTokenChallenge? {
        guard case .refused(let challenge) = await server.authorize(request, requiredScopes: scopes) else { return nil }
        return challenge
    }

    @Test func acceptsABearerToken() async throws {
        guard case .authorized(let access) = await server().authorize(request(["Bearer \(TestIssuer.token())"]), requiredScopes: ["profile"]) else {
            Issue.record("refused")
            return
        }
        #expect(access.scheme == .bearer)
        #expect(access.token.subject == "user-1")
        // The scheme is case-insensitive (RFC 9110 §11.1).
        #expect(try await server().verify(request(["bearer \(TestIssuer.token())"])).scheme == .bearer)
    }

    @Test func aRequestWithoutATokenGetsBareChallenges() async throws {
        for request in [request([]), request(["Basic dXNlcjpwYXNz"])] {
            let challenge = try #require(await challenge(server(), request))
            #expect(challenge.status == .unauthorized)
            #expect(challenge.error.code == .missingToken)
            let header = try #require(challenge.headerFields[.wwwAuthenticate])
            #expect(header == #"Bearer realm="orders", DPoP realm="orders", algs="ES256 PS256""#)
            #expect(!header.contains("error"))
        }
    }

    @Test func anInvalidTokenGetsInvalidTokenInTheSchemeItUsed() async throws {
        let expired = TestIssuer.token(at: date.now.addingTimeInterval(-7200))
        let challenge = try #require(await challenge(server(), request(["Bearer \(expired)"])))
        #expect(challenge.status == .unauthorized)
        let header = try #require(challenge.headerFields[.wwwAuthenticate])
        let parsed = try #require(WWWAuthenticate(header))
        #expect(parsed.scheme == "Bearer")
        #expect(parsed.parameters["error"] == "invalid_token")
        #expect(parsed.parameters["error_description"] == "The token has expired.")
        #expect(parsed.parameters["realm"] == "orders")
        #expect(!header.contains(expired))
    }

    @Test func aMissingScopeIs403WithTheScopeNeeded() async throws {
        let challenge = try #require(await challenge(server(), request(["Bearer \(TestIssuer.token())"]), scopes: ["orders:write", "orders:read"]))
        #expect(challenge.status == .forbidden)
        let parsed = try #require(WWWAuthenticate(challenge.headerFields[.wwwAuthenticate] ?? ""))
        #expect(parsed.parameters["error"] == "insufficient_scope")
        #expect(parsed.parameters["scope"] == "orders:write orders:read")
    }

    @Test func malformedRequestsAre400() async throws {
        let token = TestIssuer.token()
        for request in [
            request(["Bearer \(token)", "Bearer \(token)"]),  // two Authorization fields
            request(["Bearer"]), request(["Bearer a b"]), request(["Bearer ab=c"]), request(["Bearer \"quoted\""]),
            request(["Bearer \(token)"], path: "/orders?access_token=\(token)"),  // RFC 6750 §2.3 refused
        ] {
            let challenge = try #require(await challenge(server(), request))
            #expect(challenge.status == .badRequest)
            #expect(challenge.error.code == .invalidRequest)
            #expect(WWWAuthenticate(challenge.headerFields[.wwwAuthenticate] ?? "")?.parameters["error"] == "invalid_request")
        }
    }

    @Test func anAPIRequiringDPoPRefusesBearerTokensInADPoPChallenge() async throws {
        let challenge = try #require(await challenge(server(bearer: false), request(["Bearer \(TestIssuer.token())"])))
        let parsed = try #require(WWWAuthenticate(challenge.headerFields[.wwwAuthenticate] ?? ""))
        #expect(parsed.scheme == "DPoP")
        #expect(parsed.parameters["error"] == "invalid_token")
        #expect(parsed.parameters["algs"] == "ES256 PS256")
        #expect(!(challenge.headerFields[.wwwAuthenticate] ?? "").contains("Bearer"))
    }

    @Test func withoutDPoPTheDPoPSchemeIsRefused() async throws {
        let challenge = try #require(await challenge(server(dpop: false), request(["DPoP \(TestIssuer.token())"])))
        #expect(challenge.status == .badRequest)
        #expect(challenge.headerFields[.wwwAuthenticate]?.hasPrefix("Bearer ") == true)
    }

    @Test func unavailableIs503WithoutAChallenge() {
        let challenge = server().challenge(for: AccessTokenError(.temporarilyUnavailable, reason: .unavailable, "down"))
        #expect(challenge.status == .serviceUnavailable)
        #expect(challenge.headerFields[.wwwAuthenticate] == nil)
    }

    @Test func descriptionsAreQuotedSafely() {
        let error = AccessTokenError(.invalidToken, reason: .malformed, "A \"quoted\" \\ text\nwith é and a newline")
        let header = AccessTokenChallenge(error: error, schemes: [.bearer]).headerFields[.wwwAuthenticate] ?? ""
        #expect(header == #"Bearer error="invalid_token", error_description="A quoted  textwith  and a newline""#)
    }

    @Test func noTokenReachesTheLogsOrTheResponses() async throws {
        let log = CapturedLog()
        let server = server(logger: log)
        let tokens = [
            TestIssuer.token(at: date.now.addingTimeInterval(-7200)),  // expired
            TestIssuer.token(key: TestIssuer.otherECKey),  // forged
            TestIssuer.token { $0["iss"] = "https://evil.example.com" },
            "opaque-secret-token-value",
            // A header naming an attacker-chosen member twice: the name is not echoed back.
            Base64URL.encode(Data(#"{"alg":"ES256","typ":"at+jwt","marker-member-name-123":1,"marker-member-name-123":2}"#.utf8)) + ".e30.c2ln",
        ]
        for token in tokens {
            for scheme in ["Bearer", "DPoP"] {
                let challenge = try #require(await challenge(server, request(["\(scheme) \(token)"])))
                let rendered = challenge.headerFields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") + challenge.error.description
                #expect(!rendered.contains("marker-member") && !log.text.contains("marker-member"))
                for part in token.split(separator: ".") where part.count > 8 {
                    #expect(!rendered.contains(part))
                    #expect(!log.text.contains(part))
                }
            }
        }
        #expect(!log.lines.isEmpty)
    }
}
