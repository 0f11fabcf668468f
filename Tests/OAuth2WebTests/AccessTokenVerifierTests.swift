import Crypto
import Foundation
import OAuth2
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// RFC 9068 §4 and RFC 8725: each rule of the JWT access-token check has a refused case.
@Suite struct AccessTokenVerifierTests {
    let date = ManualDate(TestIssuer.start)

    func verify(_ token: String, scopes: [String] = [], algorithms: [JWSAlgorithm] = TrustedIssuer.defaultAlgorithms) async -> AccessTokenError? {
        await refusal { () async throws(AccessTokenError) in try await TestIssuer.verifier(algorithms: algorithms, date: date).verify(token, requiredScopes: scopes) }
    }

    @Test func acceptsAGoodTokenAndReadsItsClaims() async throws {
        let token = TestIssuer.token { $0["cnf"] = ["jkt": "thumb"] }
        let verified = try await TestIssuer.verifier(date: date).verify(token, requiredScopes: ["orders:read"])
        #expect(verified.format == .jwt)
        #expect(verified.issuer == TestIssuer.issuer)
        #expect(verified.subject == "user-1")
        #expect(verified.clientID == "client-1")
        #expect(verified.scopes == ["orders:read", "profile"])
        #expect(verified.audience == [TestIssuer.audience])
        #expect(verified.confirmationThumbprint == "thumb")
        #expect(verified.jwtID != nil)
        #expect(!verified.description.contains(token))
    }

    @Test func acceptsRS256AndTheMediaTypeForm() async throws {
        let token = TestIssuer.token(key: TestIssuer.rsaKey, header: ["typ": "application/at+jwt"])
        #expect(try await TestIssuer.verifier(date: date).verify(token).subject == "user-1")
    }

    /// `typ` is compared without case (RFC 7515 §4.1.9) and exactly otherwise; the claims the
    /// checks do not read are all there, decoded on first use, and equal for equal tokens.
    @Test func typIgnoresCaseAndTheWholeClaimsSetIsKept() async throws {
        for typ in ["AT+JWT", "At+Jwt", "Application/AT+jwt"] {
            #expect(try await TestIssuer.verifier(date: date).verify(TestIssuer.token(header: ["typ": .string(typ)])).subject == "user-1")
        }
        for typ in ["at+jwt ", "at-jwt", "at+jws", "jwt", "application/at+jwt+", "аt+jwt"] {
            #expect(await verify(TestIssuer.token(header: ["typ": .string(typ)]))?.reason == .typeMismatch, "\(typ)")
        }
        let token = TestIssuer.token { $0["tenant"] = ["id": "t-1", "tiers": ["gold"]] }
        let verifier = TestIssuer.verifier(date: date)
        let first = try await verifier.verify(token), second = try await verifier.verify(token)
        #expect(first.claims["tenant"]?.objectValue?["id"] == "t-1")
        #expect(first.claims["scope"] == "orders:read profile")
        #expect(first.claims.count == TestIssuer.claims().count + 1)
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(Set([first, second]).count == 1)
    }

    /// A `scope` string is kept as text and read in place: what it grants is exactly what its
    /// set holds, for odd spacing, scopes that are prefixes of others, and non-ASCII scopes
    /// (compared as `String`s compare, by canonical equivalence).
    @Test func scopeTextGrantsWhatItsSetHolds() async throws {
        let cases: [(String, [String])] = [
            ("  orders:read   profile ", ["orders:read", "profile", "orders", "read", "profile ", "", " ", "orders:read profile", "x"]),
            ("orders:read", ["orders:read", "orders:rea", "orders:readx", "Orders:read"]),
            ("caf\u{E9} r\u{E9}sum\u{E9}", ["caf\u{E9}", "cafe\u{301}", "r\u{E9}sum\u{E9}", "cafe"]),
            ("\u{212A}elvin", ["Kelvin", "\u{212A}elvin", "kelvin"]),
            ("", ["", "a"]),
        ]
        let verifier = TestIssuer.verifier(date: date)
        for (text, probes) in cases {
            let verified = try await verifier.verify(TestIssuer.token { $0["scope"] = .string(text) })
            let expected = Set(text.split(separator: " ").map(String.init))
            #expect(verified.scopes == expected, "\(text)")
            for probe in probes {
                #expect(verified.grants([probe]) == expected.contains(probe), "\(text) grants \(probe)?")
            }
            #expect(verified.grants(expected))
        }
        // The same token with its scopes as an array: the same answers, and an equal value.
        let text = try await verifier.verify(TestIssuer.token { $0["scope"] = "a b" })
        let array = try await verifier.verify(TestIssuer.token { $0["scope"] = ["a", "b"] })
        #expect(text.scopes == array.scopes && text.grants(["b", "a"]) && array.grants(["b", "a"]) && !text.grants(["c"]))
    }

    @Test func refusesAForgedSignature() async {
        // Same kid, another key: the signature does not verify with the published key.
        let forged = TestIssuer.token(key: TestIssuer.otherECKey)
        #expect(await verify(forged)?.reason == .jose(.signatureInvalid))
        // A valid token with its payload changed.
        let parts = TestIssuer.token().split(separator: ".")
        var claims = TestIssuer.claims()
        claims["sub"] = "admin"
        let tampered = parts[0] + "." + Base64URL.encode(Data(JSONValue.object(claims).description.utf8)) + "." + parts[2]
        #expect(await verify(String(tampered))?.reason == .jose(.signatureInvalid))
    }

    @Test func refusesAnAlgorithmOutsideTheAllowList() async {
        let error = await verify(TestIssuer.token(key: TestIssuer.rsaKey), algorithms: [.es256])
        #expect(error?.code == .invalidToken)
        #expect(error?.reason == .jose(.algorithmNotAllowed))
    }

    @Test func refusesNoneEvenWhenConfigured() async {
        let header = Base64URL.encode(Data(#"{"alg":"none","typ":"at+jwt"}"#.utf8))
        let payload = Base64URL.encode(Data(JSONValue.object(TestIssuer.claims()).description.utf8))
        #expect(await verify("\(header).\(payload).", algorithms: ["none", .es256])?.reason == .jose(.algorithmNotAllowed))
    }

    @Test func refusesHMACKeyedWithThePublicKey() async throws {
        // The classic confusion: HS256 with the issuer's public key (as published) as the secret.
        let publicJWK = JSONValue.object(TestIssuer.rsaKey.publicKey!.members).description
        let hmac = try JWSSigningKey(secret: publicJWK, algorithm: .hs256, keyID: "rsa-1")
        let token = try hmac.sign(claims: TestIssuer.claims(), header: ["typ": "at+jwt"])
        #expect(await verify(token, algorithms: [.hs256, .rs256])?.reason == .jose(.algorithmNotAllowed))
        #expect(!TestIssuer.verifier(algorithms: [.hs256, .rs256], date: date).issuers[0].allowedAlgorithms.contains(.hs256))
    }

    @Test func refusesAWrongOrMissingType() async {
        #expect(await verify(TestIssuer.token(header: ["typ": "JWT"]))?.reason == .typeMismatch)
        #expect(await verify(TestIssuer.token(header: [:]))?.reason == .typeMismatch)
        // An ID token or a DPoP proof is not an access token.
        #expect(await verify(TestIssuer.token(header: ["typ": "dpop+jwt"]))?.reason == .typeMismatch)
    }

    @Test func refusesAnUntrustedOrMissingIssuer() async {
        #expect(await verify(TestIssuer.token { $0["iss"] = "https://evil.example.com" })?.reason == .jose(.issuerMismatch))
        #expect(await verify(TestIssuer.token { $0["iss"] = nil })?.reason == .jose(.issuerMismatch))
        // Exact comparison: a trailing slash is another issuer.
        #expect(await verify(TestIssuer.token { $0["iss"] = .string(TestIssuer.issuer + "/") })?.reason == .jose(.issuerMismatch))
    }

    @Test func refusesAnotherAudience() async throws {
        #expect(await verify(TestIssuer.token { $0["aud"] = "https://other-api.example.com" })?.reason == .jose(.audienceMismatch))
        #expect(await verify(TestIssuer.token { $0["aud"] = nil })?.reason == .jose(.audienceMismatch))
        #expect(await verify(TestIssuer.token { $0["aud"] = [.string(TestIssuer.audience), 7] })?.reason == .jose(.invalidClaim))
        // One of several audiences is enough.
        let token = TestIssuer.token { $0["aud"] = ["https://other-api.example.com", .string(TestIssuer.audience)] }
        #expect(try await TestIssuer.verifier(date: date).verify(token).audience.count == 2)
    }

    /// There is no "any audience" for JWT access tokens: an issuer trusted for no audience
    /// accepts none of its tokens, whatever they name.
    @Test func anIssuerTrustedForNoAudienceAcceptsNoToken() async {
        var verifier = AccessTokenVerifier(issuers: [TrustedIssuer(issuer: TestIssuer.issuer, audiences: [], keys: .fixed(TestIssuer.keySet))])
        verifier.now = date.function
        for audience: JSONValue in [.string(TestIssuer.audience), "", ["a", "b"], []] {
            let error = await refusal { () async throws(AccessTokenError) in try await verifier.verify(TestIssuer.token { $0["aud"] = audience }) }
            #expect(error?.reason == .jose(.audienceMismatch), "aud \(audience)")
        }
    }

    @Test func refusesAnExpiredTokenWithLeeway() async throws {
        let token = TestIssuer.token()
        date.advance(by: 3600 + 59)  // within the 60 s leeway
        #expect(try await TestIssuer.verifier(date: date).verify(token).subject == "user-1")
        date.advance(by: 2)
        #expect(await verify(token)?.reason == .jose(.expired))
        #expect(await verify(TestIssuer.token { $0["exp"] = nil })?.reason == .jose(.expired))
        #expect(await verify(TestIssuer.token { $0["exp"] = "tomorrow" })?.reason == .jose(.invalidClaim))
    }

    @Test func refusesATokenNotValidYet() async {
        let start = Int64(TestIssuer.start.timeIntervalSince1970)
        #expect(await verify(TestIssuer.token { $0["nbf"] = .integer(start + 120) })?.reason == .notYetValid)
        #expect(await verify(TestIssuer.token { $0["nbf"] = .integer(start + 30) }) == nil)  // within leeway
        #expect(await verify(TestIssuer.token { $0["iat"] = .integer(start + 120) })?.reason == .jose(.issuedAtInvalid))
        #expect(await verify(TestIssuer.token { $0["iat"] = nil })?.reason == .jose(.issuedAtInvalid))
    }

    @Test(arguments: ["sub", "client_id", "jti"])
    func refusesATokenWithoutARequiredClaim(_ name: String) async {
        #expect(await verify(TestIssuer.token { $0[name] = nil })?.reason == .missingClaim)
        #expect(await verify(TestIssuer.token { $0[name] = 42 })?.reason == .jose(.invalidClaim))
    }

    @Test func refusesAMissingScope() async {
        let error = await verify(TestIssuer.token(), scopes: ["orders:read", "orders:write"])
        #expect(error?.code == .insufficientScope)
        #expect(error?.requiredScopes == ["orders:read", "orders:write"])
        #expect(error?.status == .forbidden)
        #expect(await verify(TestIssuer.token { $0["scope"] = ["orders:write", "orders:read"] }, scopes: ["orders:write"]) == nil)
        #expect(await verify(TestIssuer.token { $0["scope"] = 3 })?.reason == .jose(.invalidClaim))
    }

    @Test func readsTheCertificateThumbprintOfACertificateBoundToken() async throws {
        // Bound to an mTLS certificate (RFC 8705 §3.1): the verifier reads the thumbprint; the
        // resource server compares it with the presented certificate's.
        let verified = try await TestIssuer.verifier(date: date).verify(
            TestIssuer.token { $0["cnf"] = ["x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"] })
        #expect(verified.certificateThumbprint == "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2")
        #expect(verified.isCertificateBound && !verified.isDPoPBound)
        #expect(await verify(TestIssuer.token { $0["cnf"] = ["x5t#S256": 3] })?.reason == .jose(.invalidClaim))
        #expect(await verify(TestIssuer.token { $0["cnf"] = ["x5t#S256": ""] })?.reason == .jose(.invalidClaim))
    }

    @Test func refusesATokenBoundByAnUnsupportedConfirmationMethod() async {
        // Bound by a raw key (RFC 7800 `jwk`): not checkable here, so not a bearer token either.
        #expect(await verify(TestIssuer.token { $0["cnf"] = ["jwk": ["kty": "EC"]] })?.reason == .bindingMismatch)
        #expect(await verify(TestIssuer.token { $0["cnf"] = "jkt" })?.reason == .jose(.invalidClaim))
        #expect(await verify(TestIssuer.token { $0["cnf"] = [:] }) == nil)
    }

    @Test func picksTheKeysOfTheTokensIssuer() async throws {
        let second = try JWSSigningKey.generate(.es256, keyID: "ec-1")
        var verifier = AccessTokenVerifier(issuers: [
            TrustedIssuer(issuer: TestIssuer.issuer, audiences: [TestIssuer.audience], keys: .fixed(TestIssuer.keySet)),
            TrustedIssuer(issuer: "https://partner.example.com", audiences: ["api"], keys: .fixed(JSONWebKeySet(keys: [second.publicKey!]))),
        ])
        verifier.now = date.function
        let partner = TestIssuer.token(key: second) { $0["iss"] = "https://partner.example.com"; $0["aud"] = "api" }
        #expect(try await verifier.verify(partner).issuer == "https://partner.example.com")
        // Signed by the partner's key but claiming the first issuer: refused.
        let confused = TestIssuer.token(key: second)
        #expect(await refusal { () async throws(AccessTokenError) in try await verifier.verify(confused) }?.reason == .jose(.signatureInvalid))
        // The first issuer's audience is not the partner's.
        let crossed = TestIssuer.token(key: second) { $0["iss"] = "https://partner.example.com" }
        #expect(await refusal { () async throws(AccessTokenError) in try await verifier.verify(crossed) }?.reason == .jose(.audienceMismatch))
    }

    @Test func refusesAnEncryptedOrMalformedToken() async {
        #expect(await verify("a.b.c.d.e")?.reason == .jose(.malformed))
        #expect(await verify("not a token")?.reason == .jose(.malformed))
        #expect(await verify("")?.code == .invalidToken)
    }
}
