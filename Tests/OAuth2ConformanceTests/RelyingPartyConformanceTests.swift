import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

/// The OpenID Foundation's relying-party certification cases (and FAPI 2.0's client
/// cases) against a provider that misbehaves on purpose. Every case runs the real flow
/// over sockets: discovery, authorization (auto-approved), token request, ID-token
/// validation against the JWK set, UserInfo. A rejected case must leave no tokens in the
/// store and make no request after the refusal.
@Suite(.serialized) struct RelyingPartyConformanceTests {
    enum Keys {
        static let rsa = try! JWSSigningKey.generate(.rs256, keyID: "rsa-1")
        static let rsaRotated = try! JWSSigningKey.generate(.rs256, keyID: "rsa-2")
        static let ec = try! JWSSigningKey.generate(.es256, keyID: "ec-1")
        static let ps = try! JWSSigningKey.generate(.ps256, keyID: "ps-1")
    }

    enum Outcome: CustomStringConvertible {
        case accept
        case reject(OAuth2Error.Code, JOSEError.Reason?)
        var description: String {
            switch self {
            case .accept: return "accept"
            case .reject(let code, let reason): return "reject \(code) \(reason.map(\.rawValue) ?? "")"
            }
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var outcome: Outcome
        var configure: @Sendable (inout MisbehavingProvider.Behaviour) -> Void = { _ in }
        var options: IDTokenValidationOptions = IDTokenValidationOptions()
        var testDescription: String { "\(name) → \(outcome)" }
    }

    static let cases: [Case] = [
        Case(name: "rp-id_token-sig-rs256", outcome: .accept),
        Case(name: "rp-id_token-sig-es256", outcome: .accept) { $0.signingKey = Keys.ec },
        Case(name: "rp-id_token-kid-absent-single-jwks", outcome: .accept) {
            $0.publishedKeys = [Keys.rsa]
            $0.includeKeyID = false
        },
        Case(name: "rp-id_token-kid-absent-multiple-jwks", outcome: .accept) {
            $0.publishedKeys = [Keys.rsaRotated, Keys.ec, Keys.rsa]
            $0.includeKeyID = false
        },
        Case(name: "rp-id_token-issuer-mismatch", outcome: .reject(.invalidIDToken, .issuerMismatch)) {
            $0.claims = { $0["iss"] = "https://example.org/" }
        },
        Case(name: "rp-id_token-sub (missing)", outcome: .reject(.invalidIDToken, .subjectMismatch)) { $0.claims = { $0["sub"] = nil } },
        Case(name: "rp-id_token-aud (wrong)", outcome: .reject(.invalidIDToken, .audienceMismatch)) { $0.claims = { $0["aud"] = "another-client" } },
        Case(name: "rp-id_token-aud (missing)", outcome: .reject(.invalidIDToken, .audienceMismatch)) { $0.claims = { $0["aud"] = nil } },
        Case(name: "rp-id_token-iat (missing)", outcome: .reject(.invalidIDToken, .issuedAtInvalid)) { $0.claims = { $0["iat"] = nil } },
        Case(name: "rp-id_token-sig-none", outcome: .reject(.invalidIDToken, .algorithmNotAllowed)) {
            $0.rewriteIDToken = { token in
                let parts = token.split(separator: ".")
                return Base64URLEncoding.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "." + parts[1] + "."
            }
        },
        Case(name: "rp-id_token-bad-sig-rs256", outcome: .reject(.invalidIDToken, .signatureInvalid)) { $0.rewriteIDToken = flipSignatureBit },
        Case(name: "rp-id_token-bad-sig-es256", outcome: .reject(.invalidIDToken, .signatureInvalid)) {
            $0.signingKey = Keys.ec
            $0.rewriteIDToken = flipSignatureBit
        },
        Case(
            name: "rp-id_token-bad-sig-hs256", outcome: .reject(.invalidIDToken, .signatureInvalid),
            configure: { $0.signingKey = try! JWSSigningKey(secret: "not-the-client-secret", algorithm: .hs256) },
            options: IDTokenValidationOptions(allowedAlgorithms: [.hs256])),
        Case(
            name: "HS256 signed with the client secret, configured", outcome: .accept,
            configure: { $0.signingKey = try! JWSSigningKey(secret: MisbehavingProvider.clientSecret, algorithm: .hs256) },
            options: IDTokenValidationOptions(allowedAlgorithms: [.hs256])),
        Case(name: "HS256 signed with the client secret, not configured", outcome: .reject(.invalidIDToken, .algorithmNotAllowed)) {
            $0.signingKey = try! JWSSigningKey(secret: MisbehavingProvider.clientSecret, algorithm: .hs256)
        },
        Case(
            name: "HS256 keyed with the provider's public RSA key", outcome: .reject(.invalidIDToken, .signatureInvalid),
            configure: { $0.signingKey = try! JWSSigningKey(secret: Keys.rsa.publicKey!.jsonObject.description, algorithm: .hs256) },
            options: IDTokenValidationOptions(allowedAlgorithms: [.hs256, .rs256])),
        Case(name: "rp-nonce-invalid", outcome: .reject(.invalidIDToken, .nonceMismatch)) { $0.claims = { $0["nonce"] = "a-different-nonce" } },
        Case(name: "rp-userinfo-bad-sub-claim", outcome: .reject(.invalidUserInfo, .subjectMismatch)) { $0.userInfo = { $0["sub"] = "mallory" } },
        Case(name: "rp-userinfo-bearer-header", outcome: .accept),
        Case(name: "FAPI: expired exp", outcome: .reject(.invalidIDToken, .expired)) {
            $0.claims = { $0["exp"] = .integer(Int64(Date().timeIntervalSince1970) - 3600) }
        },
        Case(name: "FAPI: missing exp", outcome: .reject(.invalidIDToken, .expired)) { $0.claims = { $0["exp"] = nil } },
        Case(name: "FAPI: missing aud", outcome: .reject(.invalidIDToken, .audienceMismatch)) { $0.claims = { $0["aud"] = nil } },
        Case(name: "FAPI: missing iss", outcome: .reject(.invalidIDToken, .issuerMismatch)) { $0.claims = { $0["iss"] = nil } },
        Case(name: "FAPI: missing nonce", outcome: .reject(.invalidIDToken, .nonceMismatch)) { $0.claims = { $0["nonce"] = nil } },
        Case(name: "FAPI: extra untrusted audience", outcome: .reject(.invalidIDToken, .untrustedAudience)) {
            $0.claims = {
                $0["aud"] = [.string(MisbehavingProvider.clientID), "https://untrusted.example"]
                $0["azp"] = .string(MisbehavingProvider.clientID)
            }
        },
        Case(
            name: "extra audience that is trusted", outcome: .accept,
            configure: {
                $0.claims = {
                    $0["aud"] = [.string(MisbehavingProvider.clientID), "https://api.example"]
                    $0["azp"] = .string(MisbehavingProvider.clientID)
                }
            },
            options: IDTokenValidationOptions(trustedAudiences: ["https://api.example"])),
        Case(name: "several audiences without azp", outcome: .reject(.invalidIDToken, .authorizedPartyMismatch)) {
            $0.claims = { $0["aud"] = [.string(MisbehavingProvider.clientID), "https://api.example"] }
        },
        Case(name: "FAPI: alternate algorithm (RS256 where only PS256 is advertised)", outcome: .reject(.invalidIDToken, .algorithmNotAllowed)) {
            $0.metadata = { $0["id_token_signing_alg_values_supported"] = ["PS256"] }
            $0.publishedKeys = [Keys.rsa, Keys.ps]
        },
        Case(name: "PS256 where PS256 is advertised", outcome: .accept) {
            $0.metadata = { $0["id_token_signing_alg_values_supported"] = ["PS256"] }
            $0.publishedKeys = [Keys.ps]
            $0.signingKey = Keys.ps
        },
        Case(name: "at_hash that does not match the access token", outcome: .reject(.invalidIDToken, .accessTokenHashMismatch)) {
            $0.claims = { $0["at_hash"] = "AAAAAAAAAAAAAAAAAAAAAA" }
        },
        Case(name: "iat in the future", outcome: .reject(.invalidIDToken, .issuedAtInvalid)) {
            $0.claims = { $0["iat"] = .integer(Int64(Date().timeIntervalSince1970) + 3600) }
        },
        Case(name: "the only published key has use: enc", outcome: .reject(.invalidIDToken, .keyNotFound)) { $0.publishedUse = "enc" },
        Case(name: "signed by a key the provider does not publish", outcome: .reject(.invalidIDToken, .keyNotFound)) {
            $0.signingKey = Keys.rsaRotated
        },
        Case(name: "FAPI: authorization response with a wrong iss", outcome: .reject(.issuerMismatch, nil)) {
            $0.authorizationResponse = { $0["iss"] = "https://attacker.example" }
        },
        Case(name: "FAPI: authorization response without iss (promised by metadata)", outcome: .reject(.issuerMismatch, nil)) {
            $0.authorizationResponse = { $0["iss"] = nil }
        },
        Case(name: "FAPI: authorization response with a wrong state", outcome: .reject(.stateMismatch, nil)) {
            $0.authorizationResponse = { $0["state"] = "forged" }
        },
        Case(name: "FAPI: authorization response without state", outcome: .reject(.stateMismatch, nil)) {
            $0.authorizationResponse = { $0["state"] = nil }
        },
        Case(name: "FAPI: token response without expires_in", outcome: .accept) { $0.tokenResponse = { $0["expires_in"] = nil } },
        Case(name: "FAPI: token_type in lower case", outcome: .accept) { $0.tokenResponse = { $0["token_type"] = "bearer" } },
        Case(name: "token response without id_token to an openid request", outcome: .reject(.invalidIDToken, .malformed)) {
            $0.tokenResponse = { $0["id_token"] = nil }
        },
    ]

    @Sendable static func flipSignatureBit(_ token: String) -> String {
        var bytes = Array(token.utf8)
        let index = bytes.count - 5
        bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        return String(decoding: bytes, as: UTF8.self)
    }

    static func behaviour() -> MisbehavingProvider.Behaviour {
        MisbehavingProvider.Behaviour(publishedKeys: [Keys.rsa, Keys.ec], signingKey: Keys.rsa)
    }

    @Test(arguments: cases)
    func certificationCase(_ testCase: Case) async throws {
        var behaviour = Self.behaviour()
        testCase.configure(&behaviour)
        let provider = try await MisbehavingProvider(behaviour: behaviour)
        defer { Task { await provider.shutdown() } }
        let rp = RelyingParty(provider: provider, options: testCase.options)
        let client = try await rp.client()
        switch testCase.outcome {
        case .accept:
            let (tokens, info) = try await rp.signIn(client)
            #expect(info.subject == MisbehavingProvider.subject)
            #expect(tokens.idTokenClaims?.subject == MisbehavingProvider.subject)
            #expect(try await rp.store.list().count == 1)
            #expect(provider.log.last == "GET /op/userinfo", "the access token went in the Authorization header only")
        case .reject(let code, let reason):
            let error = await #expect(throws: OAuth2Error.self) { try await rp.signIn(client) }
            #expect(error?.code == code)
            #expect(error?.joseReason == reason)
            #expect(try await rp.store.list().isEmpty, "nothing was stored")
            let log = provider.log
            if code == .invalidUserInfo {
                #expect(log.last == "GET /op/userinfo")
            } else {
                #expect(!log.contains("GET /op/userinfo"), "no request after the refusal")
            }
            if code == .stateMismatch || code == .issuerMismatch {
                #expect(!log.contains("POST /op/token"), "a refused authorization response never reaches the token endpoint")
            }
            // The message never carries a token.
            #expect(!(error?.description.contains("eyJ") ?? true))
        }
    }

    @Test func rpKeyRotationOPSignKey() async throws {
        let provider = try await MisbehavingProvider(behaviour: Self.behaviour())
        defer { Task { await provider.shutdown() } }
        let rp = RelyingParty(provider: provider)
        let client = try await rp.client()
        _ = try await rp.signIn(client)
        // The provider rotates its signing key; the client's cached JWK set lacks the new kid.
        provider.behaviour.publishedKeys = [Keys.rsaRotated]
        provider.behaviour.signingKey = Keys.rsaRotated
        provider.clearLog()
        let (tokens, _) = try await rp.signIn(client)
        #expect(tokens.idTokenClaims != nil)
        #expect(provider.log.filter { $0 == "GET /op/jwks" }.count == 1, "one refetch of the JWK set")
        // A token naming an unknown kid right after does not make the client refetch again
        // (rate limit), and is refused.
        provider.behaviour.signingKey = try JWSSigningKey.generate(.rs256, keyID: "rsa-unknown")
        provider.clearLog()
        let error = await #expect(throws: OAuth2Error.self) { try await rp.signIn(client) }
        #expect(error?.joseReason == .keyNotFound)
        #expect(!provider.log.contains("GET /op/jwks"))
    }

    @Test func rpDiscoveryIssuerNotMatchingConfig() async throws {
        var behaviour = Self.behaviour()
        behaviour.metadata = { $0["issuer"] = "https://example.com/op" }
        let provider = try await MisbehavingProvider(behaviour: behaviour)
        defer { Task { await provider.shutdown() } }
        let error = await #expect(throws: OAuth2Error.self) { try await RelyingParty(provider: provider).client() }
        #expect(error?.code == .issuerMismatch)
        #expect(!provider.log.contains("GET /op/jwks"))
    }

    @Test func aRefreshedIDTokenMustKeepIssuerAndSubject() async throws {
        let provider = try await MisbehavingProvider(behaviour: Self.behaviour())
        defer { Task { await provider.shutdown() } }
        let rp = RelyingParty(provider: provider)
        let client = try await rp.client()
        let (tokens, _) = try await rp.signIn(client)
        // Build what a refresh answer would carry and validate it as the client does.
        let nowSeconds = Int64(Date().timeIntervalSince1970)
        func idToken(sub: String) throws -> String {
            try Keys.rsa.sign(claims: [
                "iss": .string(provider.issuer), "sub": .string(sub), "aud": .string(MisbehavingProvider.clientID),
                "exp": .integer(nowSeconds + 300), "iat": .integer(nowSeconds),
            ])
        }
        let previous = try #require(tokens.idTokenClaims)
        _ = try await client.validateIDToken(try idToken(sub: MisbehavingProvider.subject), expecting: .init(previous: previous))
        let error = await #expect(throws: OAuth2Error.self) {
            try await client.validateIDToken(try idToken(sub: "mallory"), expecting: .init(previous: previous))
        }
        #expect(error?.joseReason == .subjectMismatch)
    }
}

/// A relying party of the misbehaving provider: discovers it, signs in through its
/// authorization endpoint, checks UserInfo, and stores the tokens only after every check.
struct RelyingParty {
    let provider: MisbehavingProvider
    var options = IDTokenValidationOptions()
    let store = MemoryTokenStore()
    let transport = URLSessionTransport()

    func client() async throws -> OAuth2Client {
        let configuration = ClientConfiguration(
            clientID: MisbehavingProvider.clientID, clientSecret: MisbehavingProvider.clientSecret,
            redirectURI: URL(string: "http://127.0.0.1:9/callback")!, scopes: ["openid", "profile"],
            idTokenValidation: options)
        return try await OAuth2Client(
            server: .issuer(URL(string: provider.issuer)!),
            configuration: configuration,
            environment: HTTPEnvironment(transport: transport, metadataCache: MetadataCache()))
    }

    func signIn(_ client: OAuth2Client) async throws -> (TokenSet, UserInfo) {
        let request = try client.authorizationRequest()
        let (response, _) = try await transport.send(HTTPRequest(method: .get, url: request.url), body: nil)
        let location = try #require(response.headerFields[.location].flatMap(URL.init(string:)))
        let tokens = try await client.completeAuthorization(callbackURL: location, request: request)
        let info = try await client.userInfo(for: tokens)
        try await store.save(StoredTokenSession(
            key: TokenSessionKey(issuer: provider.issuer, clientID: MisbehavingProvider.clientID), tokens: tokens,
            subject: tokens.idTokenClaims?.subject))
        return (tokens, info)
    }
}
