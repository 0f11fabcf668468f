import Foundation
import HTTPTypes
import OAuth2Internals
import Testing
@testable import OAuth2

/// The legacy implicit grant (RFC 6749 §4.2, OIDC Core §3.2): off by default, the fragment
/// read like a token response, `state` checked, errors typed, no refresh token ever, and an
/// ID token that must carry the nonce and `at_hash`. No socket: a stub answers the JWK set.
@Suite struct ImplicitGrantTests {
    static let key = try! JWSSigningKey.generate(.es256, keyID: "k")
    static let jwksURI = URL(string: "https://as.example.com/jwks")!
    static let metadata = ServerMetadata(
        issuer: URL(string: Fixtures.issuer)!,
        authorizationEndpoint: URL(string: "https://as.example.com/authorize")!,
        tokenEndpoint: URL(string: "https://as.example.com/token")!,
        jwksURI: jwksURI,
        additionalFields: ["id_token_signing_alg_values_supported": ["ES256"]])

    /// A public client that allows the implicit grant (unless `allowed` is false), whose
    /// clock reads `now`.
    static func client(allowed: Bool = true, transport: StubTransport = jwks(), now: @escaping @Sendable () -> Date = { Date() }) throws -> OAuth2Client {
        var configuration = Fixtures.configuration(secret: nil)
        configuration.allowsImplicitGrant = allowed
        return try OAuth2Client(
            metadata: metadata, configuration: configuration,
            pipeline: HTTPPipeline(transport: transport, interceptors: [], logger: .init(label: "test"), userAgent: "t", additionalHeaders: [:]),
            now: now)
    }

    static func jwks() -> StubTransport {
        StubTransport { request, _ in
            guard request.url == jwksURI else { return response(404, "") }
            return response(200, #"{"keys":[\#(JSONValue.object(key.publicKey!.jsonObject))]}"#)
        }
    }

    /// The redirect URI with `pairs` as its fragment.
    static func callback(_ pairs: [(String, String)], inQuery: Bool = false) -> URL {
        let encoded = FormURLEncoding.encode(pairs)
        return URL(string: Fixtures.redirect.absoluteString + (inQuery ? "?" : "#") + encoded)!
    }

    /// An ID token for `request` (nonce and at_hash of `accessToken` unless changed).
    static func idToken(for request: AuthorizationRequest, accessToken: String, _ change: (inout [String: JSONValue]) -> Void = { _ in }) throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(Fixtures.issuer), "sub": "alice", "aud": "client-1", "exp": .integer(now + 300), "iat": .integer(now),
            "nonce": .string(request.nonce ?? ""), "at_hash": .string(JWSAlgorithm.es256.halfHash(of: accessToken) ?? ""),
        ]
        change(&claims)
        return try key.sign(claims: claims)
    }

    @available(*, deprecated)
    static func request(_ client: OAuth2Client, _ type: ImplicitResponseType, scopes: [String]? = nil) throws -> AuthorizationRequest {
        try client.implicitAuthorizationRequest(type, options: AuthorizationOptions(scopes: scopes))
    }

    @available(*, deprecated)
    static func complete(_ client: OAuth2Client, _ url: URL, _ request: AuthorizationRequest) async throws(OAuth2Error) -> TokenSet {
        do { return try await client.completeImplicitAuthorization(callbackURL: url, request: request) } catch let error as OAuth2Error { throw error } catch {
            throw OAuth2Error(.invalidResponse, source: .client, message: "unexpected \(error)")
        }
    }

    static func code(_ body: () async throws -> Void) async -> OAuth2Error? {
        do { try await body(); return nil } catch let error as OAuth2Error { return error } catch { return nil }
    }

    @Test @available(*, deprecated) func offUnlessTheConfigurationAllowsIt() async throws {
        let client = try Self.client(allowed: false)
        #expect(ClientConfiguration(clientID: "x").allowsImplicitGrant == false)
        let refused = await Self.code { _ = try Self.request(client, .token) }
        #expect(refused?.code == .invalidConfiguration)
        #expect(refused?.message?.contains("allowsImplicitGrant") == true)
        // A request made while allowed cannot be completed by a client that does not allow it.
        let request = try Self.request(try Self.client(), .token)
        let url = Self.callback([("access_token", "at"), ("token_type", "Bearer"), ("state", request.state)])
        #expect(await Self.code { _ = try await Self.complete(client, url, request) }?.code == .invalidConfiguration)
    }

    @Test @available(*, deprecated) func theRequestAsksForTokensWithoutPKCE() throws {
        let client = try Self.client()
        let token = try Self.request(client, .token)
        let items = Dictionary(FormURLEncoding.decode(URLComponents(url: token.url, resolvingAgainstBaseURL: false)!.percentEncodedQuery!)!, uniquingKeysWith: { a, _ in a })
        #expect(items["response_type"] == "token")
        #expect(items["state"] == token.state)
        #expect(items["code_challenge"] == nil && items["code_challenge_method"] == nil, "there is no code to bind")
        #expect(token.codeVerifier.isEmpty)
        #expect(token.implicitResponseType == .token)

        let both = try Self.request(client, .idTokenToken)
        let bothItems = Dictionary(FormURLEncoding.decode(URLComponents(url: both.url, resolvingAgainstBaseURL: false)!.percentEncodedQuery!)!, uniquingKeysWith: { a, _ in a })
        #expect(bothItems["response_type"] == "id_token token")
        #expect(bothItems["nonce"] == both.nonce && both.nonce != nil, "OIDC Core §3.2.2.1: nonce is required")
        #expect(throws: OAuth2Error.self) { _ = try Self.request(client, .idTokenToken, scopes: ["read"]) }
        // Kept across a restart like any request; an older stored request decodes as a code request.
        let decoded = try JSONDecoder().decode(AuthorizationRequest.self, from: JSONEncoder().encode(both))
        #expect(decoded.implicitResponseType == .idTokenToken)
    }

    @Test @available(*, deprecated) func theFragmentIsReadLikeATokenResponse() throws {
        let request = try Self.request(try Self.client(), .token)
        let received = Date(timeIntervalSince1970: 1_800_000_000)
        let url = Self.callback([
            ("access_token", "at-1"), ("token_type", "bearer"), ("expires_in", "3600"), ("scope", "read"), ("state", request.state),
            ("session_state", "s"),
        ])
        let response = try ImplicitAuthorizationResponse(callbackURL: url, request: request, receivedAt: received)
        #expect(response.tokens.accessToken == "at-1")
        #expect(response.tokens.tokenType == .bearer)
        #expect(response.tokens.expiresAt == received.addingTimeInterval(3600))
        #expect(response.tokens.scopes == ["read"])
        #expect(response.tokens.refreshToken == nil)
        #expect(response.tokens.additionalFields["session_state"] == nil && response.tokens.additionalFields["state"] == nil)
        #expect(!response.description.contains("at-1"))
        // Without scope: the request's scopes.
        let bare = try ImplicitAuthorizationResponse(
            callbackURL: Self.callback([("access_token", "at-2"), ("state", request.state)]), request: request, receivedAt: received)
        #expect(bare.tokens.scopes == request.scopes)
        #expect(bare.tokens.expiresAt == nil)
    }

    @Test @available(*, deprecated) func everyCheckOfTheResponse() throws {
        let request = try Self.request(try Self.client(), .token)
        func failure(_ pairs: [(String, String)], inQuery: Bool = false) -> OAuth2Error? {
            do {
                _ = try ImplicitAuthorizationResponse(callbackURL: Self.callback(pairs, inQuery: inQuery), request: request)
                return nil
            } catch { return error }
        }
        let good: [(String, String)] = [("access_token", "at"), ("token_type", "Bearer")]
        #expect(failure(good)?.code == .stateMismatch, "no state")
        #expect(failure(good + [("state", "forged")])?.code == .stateMismatch)
        #expect(failure(good + [("state", request.state), ("state", request.state)])?.code == .invalidResponse, "repeated")
        #expect(failure(good + [("state", request.state), ("refresh_token", "rt")])?.code == .invalidResponse, "RFC 6749 §4.2.2: no refresh token")
        #expect(failure(good + [("state", request.state)], inQuery: true)?.code == .invalidResponse, "tokens in the query")
        #expect(failure([("token_type", "Bearer"), ("state", request.state)])?.code == .invalidResponse, "no access token")
        #expect(failure(good + [("state", request.state), ("iss", "https://evil.example")])?.code == .issuerMismatch)
        #expect(failure([("access_token", "at"), ("token_type", "MAC"), ("state", request.state)])?.code == .invalidResponse)
        let denied = failure([("error", "access_denied"), ("error_description", "no"), ("state", request.state)])
        #expect(denied?.code == .accessDenied && denied?.source == .server)
        #expect(failure([("error", "unsupported_response_type"), ("state", request.state)], inQuery: true)?.code.rawValue == "unsupported_response_type",
            "an error in the query is still typed")
        var other = URLComponents(url: Self.callback(good + [("state", request.state)]), resolvingAgainstBaseURL: false)!
        other.path = "/elsewhere"
        #expect(throws: OAuth2Error.self) { _ = try ImplicitAuthorizationResponse(callbackURL: other.url!, request: request) }
    }

    @Test @available(*, deprecated) func theTwoFlowsDoNotMix() async throws {
        let client = try Self.client()
        let implicit = try Self.request(client, .token)
        #expect(throws: OAuth2Error.self) { _ = try AuthorizationResponse(callbackURL: Self.callback([("code", "c"), ("state", implicit.state)], inQuery: true), request: implicit) }
        let code = try client.authorizationRequest()
        #expect(throws: OAuth2Error.self) {
            _ = try ImplicitAuthorizationResponse(callbackURL: Self.callback([("access_token", "at"), ("state", code.state)]), request: code)
        }
    }

    @Test @available(*, deprecated) func idTokenTokenVerifiesTheIDTokenWithNonceAndAtHash() async throws {
        let client = try Self.client()
        let request = try Self.request(client, .idTokenToken)
        func url(_ idToken: String?, accessToken: String = "at-1") -> URL {
            var pairs: [(String, String)] = [("access_token", accessToken), ("token_type", "Bearer"), ("expires_in", "600"), ("state", request.state)]
            if let idToken { pairs.append(("id_token", idToken)) }
            return Self.callback(pairs)
        }
        let tokens = try await Self.complete(client, url(try Self.idToken(for: request, accessToken: "at-1")), request)
        #expect(tokens.idTokenClaims?.subject == "alice")
        #expect(tokens.refreshToken == nil)

        func reason(_ idToken: String?, accessToken: String = "at-1") async -> JOSEError.Reason? {
            let error = await Self.code { _ = try await Self.complete(client, url(idToken, accessToken: accessToken), request) }
            #expect(error?.code == .invalidIDToken)
            return (error?.underlyingError as? JOSEError)?.reason
        }
        #expect(await reason(nil) == .malformed, "id_token token without an ID token")
        #expect(await reason(try Self.idToken(for: request, accessToken: "at-1") { $0["at_hash"] = nil }) == .accessTokenHashMismatch, "at_hash is required")
        #expect(await reason(try Self.idToken(for: request, accessToken: "other")) == .accessTokenHashMismatch, "at_hash of another token")
        #expect(await reason(try Self.idToken(for: request, accessToken: "at-1") { $0["nonce"] = nil }) == .nonceMismatch, "nonce is required")
        #expect(await reason(try Self.idToken(for: request, accessToken: "at-1") { $0["nonce"] = "replayed" }) == .nonceMismatch)
        #expect(await reason(try Self.idToken(for: request, accessToken: "at-1") { $0["aud"] = "someone-else" }) == .audienceMismatch)
        let other = try JWSSigningKey.generate(.es256, keyID: "k")
        let forged = try other.sign(claims: ["iss": .string(Fixtures.issuer), "sub": "alice", "aud": "client-1", "exp": .integer(Int64(Date().timeIntervalSince1970) + 300),
            "iat": .integer(Int64(Date().timeIntervalSince1970)), "nonce": .string(request.nonce!), "at_hash": .string(JWSAlgorithm.es256.halfHash(of: "at-1")!)])
        #expect(await reason(forged) == .signatureInvalid)
    }

    @Test @available(*, deprecated) func anIDTokenInAResponseToARequestWithoutANonceIsRefused() async throws {
        let client = try Self.client()
        let request = try Self.request(client, .token, scopes: ["read"])
        #expect(request.nonce == nil)
        let idToken = try Self.idToken(for: request, accessToken: "at")
        let error = await Self.code {
            _ = try await Self.complete(client, Self.callback([("access_token", "at"), ("id_token", idToken), ("state", request.state)]), request)
        }
        #expect(error?.code == .invalidIDToken)
    }

    @Test func theValidatorRequiresAtHashOnlyWhenAsked() throws {
        let validator = IDTokenValidator(issuer: "https://op.example", clientID: "c", allowedAlgorithms: [.es256])
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let claims = try IDTokenClaims(["iss": "https://op.example", "sub": "s", "aud": "c", "exp": .integer(1_800_000_300), "iat": .integer(1_800_000_000)])
        try validator.check(claims, algorithm: .es256, expecting: .init(accessToken: "at"), now: now)
        #expect(throws: JOSEError.self) {
            try validator.check(claims, algorithm: .es256, expecting: .init(accessToken: "at", requiresAccessTokenHash: true), now: now)
        }
    }

    @Test @available(*, deprecated) func aSessionOfImplicitTokensAsksForSignInWhenTheyExpire() async throws {
        let clock = ManualDate()
        let client = try Self.client(now: { clock.now })
        let request = try Self.request(client, .token)
        let url = Self.callback([("access_token", "at-1"), ("token_type", "Bearer"), ("expires_in", "600"), ("state", request.state)])
        let tokens = try await Self.complete(client, url, request)
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: client, tokens: tokens, store: store)
        #expect(try await session.freshAccessToken() == "at-1")
        clock.advance(by: 3600)
        let error = await Self.code { _ = try await session.freshAccessToken() }
        #expect(error?.code == .signInRequired)
        #expect(error?.requiresReauthorization == true)
    }
}
