import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// OpenID Connect Back-Channel Logout 1.0 §2.4 and §2.6: each rule of the logout-token check
/// has a refused case, with tokens signed by real swift-crypto keys.
@Suite(.timeLimit(.minutes(1))) struct LogoutTokenVerifierTests {
    let date = ManualDate(TestIssuer.start)

    func verify(
        _ token: String, algorithms: [JWSAlgorithm] = TrustedIssuer.defaultAlgorithms, requiresExplicitType: Bool = false,
        requiresExpiration: Bool = false
    ) async -> LogoutTokenError? {
        let verifier = LogoutTokens.verifier(
            algorithms: algorithms, requiresExplicitType: requiresExplicitType, requiresExpiration: requiresExpiration, date: date)
        return await logoutRefusal { () async throws(LogoutTokenError) in try await verifier.verify(token) }
    }

    @Test func acceptsAGoodTokenAndReadsItsClaims() async throws {
        var claims = LogoutTokens.claims()
        claims["jti"] = "logout-1"
        let token = try TestIssuer.ecKey.sign(claims: claims, header: ["typ": "logout+jwt"])
        let verified = try await LogoutTokens.verifier(date: date).verify(token)
        #expect(verified.issuer == TestIssuer.issuer)
        #expect(verified.subject == "user-1")
        #expect(verified.sessionID == "session-1")
        #expect(verified.jwtID == "logout-1")
        #expect(verified.issuedAt == TestIssuer.start)
        #expect(verified.expiresAt == TestIssuer.start.addingTimeInterval(120))
        #expect(!verified.description.contains(token))
    }

    @Test func acceptsRS256TheMediaTypeFormAndSeveralAudiences() async throws {
        let token = LogoutTokens.token(key: TestIssuer.rsaKey, header: ["typ": "application/logout+jwt"]) {
            $0["aud"] = ["another-client", .string(LogoutTokens.clientID)]
        }
        #expect(try await LogoutTokens.verifier(date: date).verify(token).subject == "user-1")
    }

    @Test func acceptsGlewlwydsTokensWithoutExpTypedJWTWithinTheIatWindow() async throws {
        // Glewlwyd 2.7.5 (docs/compatibility.md, "Quirks met on the way"): no exp, typ JWT.
        let verified = try await LogoutTokens.verifier(date: date).verify(LogoutTokens.glewlwydToken())
        #expect(verified.expiresAt == nil)
        // The iat window bounds such a token's life: after it, it is refused.
        date.advance(by: 300 + 61)
        #expect(await verify(LogoutTokens.glewlwydToken(at: TestIssuer.start))?.reason == .jose(.issuedAtInvalid))
        // A verifier that asks for the specification's letter refuses them.
        #expect(await verify(LogoutTokens.glewlwydToken(at: date.now), requiresExplicitType: true)?.reason == .typeMismatch)
        #expect(await verify(LogoutTokens.glewlwydToken(at: date.now), requiresExpiration: true)?.reason == .missingClaim)
    }

    @Test func refusesAForgedSignature() async {
        // Same kid, another key: the signature does not verify with the published key.
        #expect(await verify(LogoutTokens.token(key: TestIssuer.otherECKey))?.reason == .jose(.signatureInvalid))
        // A valid token with its payload changed.
        let parts = LogoutTokens.token().split(separator: ".")
        var claims = LogoutTokens.claims()
        claims["sub"] = "admin"
        let tampered = parts[0] + "." + Base64URL.encode(Data(JSONValue.object(claims).description.utf8)) + "." + parts[2]
        #expect(await verify(String(tampered))?.reason == .jose(.signatureInvalid))
    }

    @Test func refusesNoneEvenWhenConfigured() async {
        let header = Base64URL.encode(Data(#"{"alg":"none","typ":"logout+jwt"}"#.utf8))
        let payload = Base64URL.encode(Data(JSONValue.object(LogoutTokens.claims()).description.utf8))
        let error = await verify("\(header).\(payload).", algorithms: ["none", .es256])
        #expect(error?.code == .invalidRequest)
        #expect(error?.reason == .jose(.algorithmNotAllowed))
    }

    @Test func refusesHMACKeyedWithThePublicKey() async throws {
        let publicJWK = JSONValue.object(TestIssuer.rsaKey.publicKey!.members).description
        let hmac = try JWSSigningKey(secret: publicJWK, algorithm: .hs256, keyID: "rsa-1")
        let token = try hmac.sign(claims: LogoutTokens.claims(), header: ["typ": "logout+jwt"])
        #expect(await verify(token, algorithms: [.hs256, .rs256])?.reason == .jose(.algorithmNotAllowed))
        #expect(!LogoutTokens.verifier(algorithms: [.hs256, .rs256], date: date).allowedAlgorithms.contains(.hs256))
    }

    @Test func refusesAnAlgorithmOutsideTheAllowList() async {
        #expect(await verify(LogoutTokens.token(key: TestIssuer.rsaKey), algorithms: [.es256])?.reason == .jose(.algorithmNotAllowed))
    }

    @Test func takesAGenericOrMissingTypeAsNoType() async throws {
        // `JWT` says nothing of the token's kind, as no typ does: accepted by default...
        for header: [String: JSONValue] in [["typ": "JWT"], ["typ": "jwt"], ["typ": "application/jwt"], [:]] {
            #expect(try await LogoutTokens.verifier(date: date).verify(LogoutTokens.token(header: header)).subject == "user-1")
            // ...and refused when an explicit logout+jwt is required.
            #expect(await verify(LogoutTokens.token(header: header), requiresExplicitType: true)?.reason == .typeMismatch)
        }
    }

    @Test func refusesAWrongType() async {
        // An access token or a DPoP proof is not a logout token.
        #expect(await verify(LogoutTokens.token(header: ["typ": "at+jwt"]))?.reason == .typeMismatch)
        #expect(await verify(LogoutTokens.token(header: ["typ": "dpop+jwt"]))?.reason == .typeMismatch)
    }

    @Test func refusesAnotherOrMissingIssuer() async {
        #expect(await verify(LogoutTokens.token { $0["iss"] = "https://evil.example.com" })?.reason == .jose(.issuerMismatch))
        #expect(await verify(LogoutTokens.token { $0["iss"] = nil })?.reason == .jose(.issuerMismatch))
        // Exact comparison: a trailing slash is another issuer.
        #expect(await verify(LogoutTokens.token { $0["iss"] = .string(TestIssuer.issuer + "/") })?.reason == .jose(.issuerMismatch))
    }

    @Test func refusesAnotherAudience() async {
        #expect(await verify(LogoutTokens.token { $0["aud"] = "another-client" })?.reason == .jose(.audienceMismatch))
        #expect(await verify(LogoutTokens.token { $0["aud"] = ["another-client"] })?.reason == .jose(.audienceMismatch))
        #expect(await verify(LogoutTokens.token { $0["aud"] = nil })?.reason == .jose(.audienceMismatch))
        #expect(await verify(LogoutTokens.token { $0["aud"] = [.string(LogoutTokens.clientID), 7] })?.reason == .jose(.invalidClaim))
    }

    @Test func refusesAnIatOutsideTheWindow() async throws {
        let start = Int64(TestIssuer.start.timeIntervalSince1970)
        // Five minutes old, plus the leeway: still accepted; a second more: refused.
        #expect(await verify(LogoutTokens.token { $0["iat"] = .integer(start - 360); $0["exp"] = nil }) == nil)
        #expect(await verify(LogoutTokens.token { $0["iat"] = .integer(start - 361); $0["exp"] = nil })?.reason == .jose(.issuedAtInvalid))
        // In the future beyond the leeway.
        #expect(await verify(LogoutTokens.token { $0["iat"] = .integer(start + 30) }) == nil)
        #expect(await verify(LogoutTokens.token { $0["iat"] = .integer(start + 120) })?.reason == .jose(.issuedAtInvalid))
        #expect(await verify(LogoutTokens.token { $0["iat"] = nil })?.reason == .missingClaim)
        #expect(await verify(LogoutTokens.token { $0["iat"] = "now" })?.reason == .jose(.invalidClaim))
    }

    @Test func refusesAPassedExp() async {
        let start = Int64(TestIssuer.start.timeIntervalSince1970)
        #expect(await verify(LogoutTokens.token { $0["exp"] = .integer(start - 61) })?.reason == .jose(.expired))
        #expect(await verify(LogoutTokens.token { $0["exp"] = .integer(start - 30) }) == nil)  // within leeway
        #expect(await verify(LogoutTokens.token { $0["exp"] = "later" })?.reason == .jose(.invalidClaim))
    }

    @Test func refusesATokenWithoutTheLogoutEvent() async {
        #expect(await verify(LogoutTokens.token { $0["events"] = nil })?.reason == .missingClaim)
        #expect(await verify(LogoutTokens.token { $0["events"] = "logout" })?.reason == .eventMissing)
        #expect(await verify(LogoutTokens.token { $0["events"] = [.string(LogoutTokens.event)] })?.reason == .eventMissing)
        #expect(await verify(LogoutTokens.token { $0["events"] = ["http://schemas.openid.net/event/other": [:]] })?.reason == .eventMissing)
        // The event's value must be a JSON object.
        #expect(await verify(LogoutTokens.token { $0["events"] = [LogoutTokens.event: "yes"] })?.reason == .eventMissing)
        #expect(await verify(LogoutTokens.token { $0["events"] = [LogoutTokens.event: true] })?.reason == .eventMissing)
        // A non-empty object is fine (§2.4: it SHOULD be empty).
        #expect(await verify(LogoutTokens.token { $0["events"] = [LogoutTokens.event: ["reason": "admin"]] }) == nil)
    }

    @Test func needsSubOrSid() async throws {
        #expect(await verify(LogoutTokens.token { $0["sub"] = nil; $0["sid"] = nil })?.reason == .subjectMissing)
        #expect(await verify(LogoutTokens.token { $0["sub"] = 12 })?.reason == .jose(.invalidClaim))
        let sidOnly = try await LogoutTokens.verifier(date: date).verify(LogoutTokens.token { $0["sub"] = nil })
        #expect(sidOnly.subject == nil && sidOnly.sessionID == "session-1")
        let subOnly = try await LogoutTokens.verifier(date: date).verify(LogoutTokens.token { $0["sid"] = nil })
        #expect(subOnly.subject == "user-1" && subOnly.sessionID == nil)
    }

    @Test func refusesANonce() async {
        // An ID token dressed as a logout token would carry one.
        #expect(await verify(LogoutTokens.token { $0["nonce"] = "n-0S6_WzA2Mj" })?.reason == .nonceForbidden)
    }

    @Test func refusesATokenWithoutJti() async {
        #expect(await verify(LogoutTokens.token { $0["jti"] = nil })?.reason == .missingClaim)
        #expect(await verify(LogoutTokens.token { $0["jti"] = 5 })?.reason == .jose(.invalidClaim))
        #expect(await verify(LogoutTokens.token { $0["jti"] = .string(String(repeating: "j", count: 257)) })?.reason == .jose(.invalidClaim))
    }

    @Test func refusesAReplayedJtiUntilTheWindowEnds() async throws {
        let store = RecordingReplayStore()
        let verifier = LogoutTokens.verifier(replayStore: store, date: date)
        let token = LogoutTokens.token()
        _ = try await verifier.verify(token)
        let error = await logoutRefusal { () async throws(LogoutTokenError) in try await verifier.verify(token) }
        #expect(error?.reason == .replayed)
        // Another token with the same jti is a replay too.
        let jti = try #require(JWS(compact: token).claims()["jti"])
        let again = LogoutTokens.token { $0["jti"] = jti; $0["sid"] = "session-2" }
        #expect(await logoutRefusal { () async throws(LogoutTokenError) in try await verifier.verify(again) }?.reason == .replayed)
        // The record is keyed by issuer and a hash of the jti, and lasts the iat window.
        let insert = try #require(store.inserts.first)
        #expect(insert.key.hasPrefix("logout:") && insert.key.count <= 128 && !insert.key.contains(jti.stringValue!))
        #expect(insert.expiresAt == TestIssuer.start.addingTimeInterval(300 + 60))
    }

    @Test func theSameJtiFromAnotherIssuerIsNotAReplay() async throws {
        let store = MemoryReplayStore()
        let first = LogoutTokens.verifier(replayStore: store, date: date)
        let second = LogoutTokens.verifier(replayStore: store, issuer: "https://partner.example.com", date: date)
        _ = try await first.verify(LogoutTokens.token { $0["jti"] = "shared" })
        let partner = LogoutTokens.token { $0["jti"] = "shared"; $0["iss"] = "https://partner.example.com" }
        #expect(try await second.verify(partner).jwtID == "shared")
    }

    @Test func aRefusedTokenDoesNotUseUpItsJti() async throws {
        let verifier = LogoutTokens.verifier(date: date)
        let refused = LogoutTokens.token { $0["jti"] = "j-1"; $0["aud"] = "another-client" }
        #expect(await logoutRefusal { () async throws(LogoutTokenError) in try await verifier.verify(refused) } != nil)
        #expect(try await verifier.verify(LogoutTokens.token { $0["jti"] = "j-1" }).jwtID == "j-1")
    }

    @Test func aFailingReplayStoreFailsClosed() async {
        let verifier = LogoutTokens.verifier(replayStore: RecordingReplayStore(fails: true), date: date)
        let error = await logoutRefusal { () async throws(LogoutTokenError) in try await verifier.verify(LogoutTokens.token()) }
        #expect(error?.code == .temporarilyUnavailable)
        #expect(error?.status == .badRequest)
    }

    @Test func refusesMalformedTokens() async {
        #expect(await verify("not-a-jwt")?.reason == .jose(.malformed))
        #expect(await verify(String(repeating: "a", count: LogoutTokenVerifier.maximumTokenSize + 1))?.reason == .malformed)
    }

    @Test func noTokenReachesTheErrorsOrTheLogs() async throws {
        let log = CapturedLog()
        let verifier = LogoutTokens.verifier(date: date, logger: log.logger())
        let tokens = [
            LogoutTokens.token { $0["aud"] = "another-client" }, LogoutTokens.token(key: TestIssuer.otherECKey),
            LogoutTokens.token { $0["nonce"] = "n" }, "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
        ]
        for token in tokens {
            let error = await logoutRefusal { () async throws(LogoutTokenError) in try await verifier.verify(token) }
            let text = try #require(error).description
            #expect(!text.contains(token))
            for part in token.split(separator: ".") where part.count > 8 { #expect(!text.contains(part)) }
        }
        #expect(log.lines.count == tokens.count)
        for token in tokens { #expect(!log.text.contains(token)) }
    }
}

/// Keys from the issuer's JWKS URL (through the library's transport seam): an unknown `kid`
/// makes one refetch, rate-limited by the cache.
@Suite(.timeLimit(.minutes(1))) struct LogoutTokenKeySetTests {
    let date = ManualDate(TestIssuer.start)

    @Test func anUnknownKidMakesOneRefetch() async throws {
        let rotated = Locked(false)
        let transport = RecordingTransport { _, _ in
            AccessTokenKeySetTests.keySetResponse(
                rotated.withLock { $0 } ? [TestIssuer.ecKey, TestIssuer.rotatedKey] : [TestIssuer.ecKey])
        }
        let keys = try TrustedIssuer.KeySource.jwks(
            AccessTokenKeySetTests.jwksURL, environment: HTTPEnvironment(transport: transport), policy: AccessTokenKeySetTests.shortLived)
        let verifier = LogoutTokens.verifier(keys: keys, date: date)
        _ = try await verifier.verify(LogoutTokens.token())
        #expect(transport.count == 1)
        // The provider rotated its keys: the new kid makes one refetch, and the token passes.
        rotated.withLock { $0 = true }
        #expect(try await verifier.verify(LogoutTokens.token(key: TestIssuer.rotatedKey)).subject == "user-1")
        #expect(transport.count == 2)
        // Forged tokens with random kids do not make the client hammer the provider.
        date.advance(by: 1)
        for index in 0..<3 {
            let stranger = try JWSSigningKey.generate(.es256, keyID: "random-\(index)")
            let error = await logoutRefusal { () async throws(LogoutTokenError) in try await verifier.verify(LogoutTokens.token(key: stranger)) }
            #expect(error?.reason == .jose(.keyNotFound))
        }
        #expect(transport.count == 2)
    }

    @Test func noKeysAndTheEndpointDownIsTemporarilyUnavailable() async throws {
        let transport = RecordingTransport { _, _ in jsonResponse(500, "{}") }
        let keys = try TrustedIssuer.KeySource.jwks(AccessTokenKeySetTests.jwksURL, environment: HTTPEnvironment(transport: transport))
        let verifier = LogoutTokens.verifier(keys: keys, date: date)
        let error = await logoutRefusal { () async throws(LogoutTokenError) in try await verifier.verify(LogoutTokens.token()) }
        #expect(error?.code == .temporarilyUnavailable)
        #expect(error?.reason == .unavailable)
    }
}
