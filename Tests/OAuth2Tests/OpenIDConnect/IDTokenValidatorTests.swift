import Foundation
import HTTPTypes
import OAuth2Internals
import Testing
@testable import OAuth2

@Suite struct IDTokenValidatorTests {
    static let key = try! JWSSigningKey.generate(.es256, keyID: "k")
    static let keys = JSONWebKeySet(keys: [key.publicKey!])
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func claims(_ change: (inout [String: JSONValue]) -> Void = { _ in }) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": "https://op.example", "sub": "alice", "aud": "client",
            "exp": .integer(1_800_000_300), "iat": .integer(1_800_000_000), "nonce": "n-1",
        ]
        change(&claims)
        return claims
    }

    func validate(_ claims: [String: JSONValue], options: IDTokenValidationOptions = .init(), expecting: IDTokenValidator.Expectations = .init(nonce: "n-1")) throws(JOSEError) -> IDToken {
        let validator = IDTokenValidator(issuer: "https://op.example", clientID: "client", allowedAlgorithms: [.es256], options: options)
        let token = try Self.key.sign(claims: claims)
        return try validator.validate(token, keys: Self.keys, expecting: expecting, now: now)
    }

    @Test func acceptsAWellFormedToken() throws {
        let token = try validate(claims { $0["email"] = "a@example.com"; $0["_claim_names"] = ["x": "src1"] })
        #expect(token.claims.subject == "alice")
        #expect(token.claims.email == "a@example.com")
        #expect(token.claims.claimNames == ["x": "src1"], "aggregated/distributed claim names are kept")
        #expect(!token.description.contains("eyJ"))
    }

    @Test func leewayAppliesToExpAndIat() throws {
        // Expired 30 s ago: inside the default 60 s leeway, outside a 10 s one.
        let late = claims { $0["exp"] = .integer(1_800_000_000 - 30) }
        _ = try validate(late)
        #expect(reason { try validate(late, options: .init(leeway: 10)) } == .expired)
        let early = claims { $0["iat"] = .integer(1_800_000_000 + 30) }
        _ = try validate(early)
        #expect(reason { try validate(early, options: .init(leeway: 10)) } == .issuedAtInvalid)
        #expect(reason { try validate(claims { $0["exp"] = "soon" }) } == .invalidClaim)
    }

    @Test func maxAgeRequiresARecentAuthTime() throws {
        #expect(reason { try validate(claims(), expecting: .init(nonce: "n-1", maxAge: 600)) } == .authTimeInvalid)
        let old = claims { $0["auth_time"] = .integer(1_800_000_000 - 3_600) }
        #expect(reason { try validate(old, expecting: .init(nonce: "n-1", maxAge: 600)) } == .authTimeInvalid)
        let recent = claims { $0["auth_time"] = .integer(1_800_000_000 - 300) }
        _ = try validate(recent, expecting: .init(nonce: "n-1", maxAge: 600))
        #expect(reason { try validate(claims(), options: .init(requireAuthTime: true)) } == .authTimeInvalid)
    }

    @Test func codeAndAccessTokenHashesAreCheckedWhenPresent() throws {
        let code = "the-code"
        let cHash = try #require(JWSAlgorithm.es256.halfHash(of: code))
        _ = try validate(claims { $0["c_hash"] = .string(cHash) }, expecting: .init(nonce: "n-1", authorizationCode: code))
        #expect(reason { try validate(claims { $0["c_hash"] = .string(cHash) }, expecting: .init(nonce: "n-1", authorizationCode: "other")) } == .codeHashMismatch)
        let atHash = try #require(JWSAlgorithm.es256.halfHash(of: "at"))
        #expect(reason { try validate(claims { $0["at_hash"] = .string(atHash) }, expecting: .init(nonce: "n-1", accessToken: "other")) } == .accessTokenHashMismatch)
    }

    @Test func aRefreshedTokenKeepsIssuerSubjectAndNonce() throws {
        let first = try validate(claims()).claims
        _ = try validate(claims { $0["nonce"] = nil }, expecting: .init(previous: first))
        #expect(reason { try validate(claims { $0["sub"] = "bob" }, expecting: .init(previous: first)) } == .subjectMismatch)
        #expect(reason { try validate(claims { $0["nonce"] = "n-2" }, expecting: .init(previous: first)) } == .nonceMismatch)
    }

    @Test func algorithmsComeFromConfigurationThenMetadataThenRS256() {
        #expect(IDTokenValidator.allowedAlgorithms(configured: nil, advertised: nil) == [.rs256])
        #expect(IDTokenValidator.allowedAlgorithms(configured: nil, advertised: ["none", "HS256", "ES256"]) == [.es256],
            "none and HMAC never come from metadata")
        #expect(IDTokenValidator.allowedAlgorithms(configured: nil, advertised: ["none"]) == [.rs256])
        #expect(IDTokenValidator.allowedAlgorithms(configured: [.hs256], advertised: ["RS256"]) == [.hs256])
        let withoutSecret = IDTokenValidator(issuer: "i", clientID: "c", allowedAlgorithms: [.hs256, .none, .rs256])
        #expect(withoutSecret.allowedAlgorithms == [.rs256], "HMAC needs a client secret; none is dropped")
    }
}

@Suite struct JWKSCacheTests {
    final class Counter: @unchecked Sendable {
        let lock = NSLock()
        var value = 0
        func next() -> Int { lock.withLock { value += 1; return value } }
    }

    @Test func honoursCacheControlWithinTheFloorAndCeiling() async {
        let cache = JWKSCache(url: URL(string: "https://op.example/jwks")!, policy: .init()) { (JSONWebKeySet(keys: []), nil) }
        #expect(await cache.lifetime(nil) == 3_600)
        #expect(await cache.lifetime("public, max-age=300") == 300)
        #expect(await cache.lifetime("max-age=5") == 60, "the floor")
        #expect(await cache.lifetime("max-age=9999999") == 86_400, "the ceiling")
        #expect(await cache.lifetime("no-store") == 60)
    }

    @Test func sharesOneFetchAndRateLimitsForcedRefetches() async throws {
        let counter = Counter()
        let cache = JWKSCache(url: URL(string: "https://op.example/jwks")!, policy: .init()) {
            _ = counter.next()
            try await Task.sleep(for: .milliseconds(20))
            return (JSONWebKeySet(keys: []), "max-age=600")
        }
        let start = Date(timeIntervalSince1970: 1_000)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 { group.addTask { _ = try await cache.keys(now: start) } }
            try await group.waitForAll()
        }
        #expect(counter.value == 1)
        _ = try await cache.keys(now: start.addingTimeInterval(599))
        #expect(counter.value == 1, "cached for max-age")
        #expect(try await cache.refreshed(now: start.addingTimeInterval(1)) != nil)
        #expect(counter.value == 2)
        #expect(try await cache.refreshed(now: start.addingTimeInterval(5)) == nil, "rate-limited")
        #expect(try await cache.refreshed(now: start.addingTimeInterval(12)) != nil)
        _ = try await cache.keys(now: start.addingTimeInterval(12 + 601))
        #expect(counter.value == 4, "expired sets are fetched again")
    }

    @Test func theCachedSetIsReadWithoutTheActorUntilItExpires() async throws {
        let counter = Counter()
        let cache = JWKSCache(url: URL(string: "https://op.example/jwks")!, policy: .init()) {
            _ = counter.next()
            return (JSONWebKeySet(keys: []), "max-age=600")
        }
        let start = Date(timeIntervalSince1970: 1_000)
        #expect(cache.cachedKeys(now: start) == nil, "nothing fetched yet: no fetch is started either")
        #expect(counter.value == 0)
        _ = try await cache.keys(now: start)
        #expect(cache.cachedKeys(now: start.addingTimeInterval(599)) != nil)
        #expect(cache.cachedKeys(now: start.addingTimeInterval(600)) == nil, "expired")
        _ = try await cache.refreshed(now: start.addingTimeInterval(700))
        #expect(cache.cachedKeys(now: start.addingTimeInterval(1_200)) != nil, "a forced refetch renews the snapshot")
        #expect(counter.value == 2)
    }

    @Test func aClientFetchesTheSetOnceAndRefusesABrokenOne() async throws {
        let key = try JWSSigningKey.generate(.rs256, keyID: "r")
        let jwks = String(decoding: JSONWebKeySet(keys: [key.publicKey!]).jsonData, as: UTF8.self)
        let transport = StubTransport { request, _ in
            request.path == "/jwks" ? response(200, jwks, headers: [.cacheControl: "max-age=120"]) : response(404, "")
        }
        var fields = Fixtures.metadata.fields
        fields["jwks_uri"] = "https://as.example.com/jwks"
        let metadata = try ServerMetadata(fields: fields)
        let client = try Fixtures.client(transport, metadata: metadata)
        let token = try key.sign(claims: [
            "iss": .string(Fixtures.issuer), "sub": "s", "aud": "client-1",
            "exp": .integer(Int64(Date().timeIntervalSince1970) + 60), "iat": .integer(Int64(Date().timeIntervalSince1970)),
        ])
        _ = try await client.validateIDToken(token, expecting: .init())
        _ = try await client.validateIDToken(token, expecting: .init())
        #expect(transport.sent.count == 1)
        #expect(transport.sent.first?.request.headerFields[.accept]?.contains("jwk-set+json") == true)

        let broken = StubTransport(json: #"{"keys": "nope"}"#)
        let brokenClient = try Fixtures.client(broken, metadata: metadata)
        let error = await #expect(throws: OAuth2Error.self) { try await brokenClient.validateIDToken(token, expecting: .init()) }
        #expect(error?.code == .invalidResponse)
    }
}

@Suite struct EndSessionTests {
    @Test func buildsTheLogoutURLAndChecksTheRedirectState() throws {
        var fields = Fixtures.metadata.fields
        fields["end_session_endpoint"] = "https://as.example.com/logout?x=1"
        let metadata = try ServerMetadata(fields: fields)
        let client = try Fixtures.client(StubTransport(json: "{}"), metadata: metadata)
        let redirect = URL(string: "http://127.0.0.1:8765/logged-out")!
        let request = try client.endSessionRequest(EndSessionOptions(
            idTokenHint: "eyJ.hint.sig", postLogoutRedirectURI: redirect, uiLocales: ["fr", "en"], additionalParameters: ["state": "mine", "extra": "1"]))
        let query = try #require(URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedQuery)
        let items = Dictionary(uniqueKeysWithValues: try #require(FormURLEncoding.decode(query)))
        #expect(items["x"] == "1")
        #expect(items["client_id"] == "client-1")
        #expect(items["id_token_hint"] == "eyJ.hint.sig")
        #expect(items["post_logout_redirect_uri"] == redirect.absoluteString)
        #expect(items["ui_locales"] == "fr en")
        #expect(items["extra"] == "1")
        let state = try #require(request.state)
        #expect(items["state"] == state, "extras never override the library's state")
        #expect(!request.description.contains("eyJ.hint.sig"))
        try request.validateCallback(URL(string: "http://127.0.0.1:8765/logged-out?state=\(state)")!)
        #expect(throws: OAuth2Error.self) { try request.validateCallback(URL(string: "http://127.0.0.1:8765/logged-out?state=other")!) }
        #expect(throws: OAuth2Error.self) { try request.validateCallback(URL(string: "http://127.0.0.1:8765/logged-out")!) }
        #expect(throws: OAuth2Error.self) { try request.validateCallback(URL(string: "http://127.0.0.1:8765/elsewhere?state=\(state)")!) }
        #expect(throws: OAuth2Error.self) { try client.endSessionRequest().validateCallback(URL(string: "http://127.0.0.1:8765/logged-out")!) }
    }

    @Test func aProviderWithoutEndSessionSaysSo() throws {
        let client = try Fixtures.client(StubTransport(json: "{}"))
        #expect(throws: OAuth2Error.self) { try client.endSessionRequest() }
    }
}

@Suite struct WWWAuthenticateTests {
    @Test func readsTheFirstChallenge() {
        let challenge = WWWAuthenticate(#"Bearer realm="api", error="invalid_token", error_description="The token \"expired\"""#)
        #expect(challenge?.scheme == "Bearer")
        #expect(challenge?.parameters["error"] == "invalid_token")
        #expect(challenge?.parameters["error_description"] == #"The token "expired""#)
        #expect(WWWAuthenticate(#"DPoP error=use_dpop_nonce, algs="ES256""#)?.parameters["error"] == "use_dpop_nonce")
        #expect(WWWAuthenticate("Bearer")?.parameters.isEmpty == true)
        #expect(WWWAuthenticate("  ") == nil)
    }
}
