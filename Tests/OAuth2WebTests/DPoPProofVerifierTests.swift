import Crypto
import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// RFC 9449 §4.3 and §7 at the resource server: each check of a DPoP proof has a refused
/// case, proofs made with real keys by the library's own client-side code.
@Suite struct DPoPProofVerifierTests {
    let date = ManualDate(TestIssuer.start)
    let key = try! DPoPKey.generate()
    static let base = URL(string: "https://api.example.com")!
    static let target = URL(string: "https://api.example.com/orders/7")!

    func server(nonces: DPoPServerNonces? = nil, replayStore: any ReplayStore = MemoryReplayStore(), base: URL = base) -> ResourceServer {
        var dpop = DPoPProofVerifier(publicBaseURL: base, replayStore: replayStore, nonces: nonces)
        dpop.now = date.function
        return ResourceServer(accessTokens: TestIssuer.verifier(date: date), dpop: dpop, realm: "orders")
    }

    func boundToken(to thumbprint: String? = nil) -> String {
        TestIssuer.token { $0["cnf"] = ["jkt": .string(thumbprint ?? key.thumbprint)] }
    }

    func proof(
        for token: String, method: HTTPRequest.Method = .get, url: URL = target, nonce: String? = nil, at issued: Date? = nil,
        _ edit: (inout [String: JSONValue]) -> Void = { _ in }
    ) -> String {
        var claims = DPoPProof(method: method, url: url, accessToken: token, nonce: nonce, issuedAt: issued ?? date.now).claims
        edit(&claims)
        return try! key.signingKey.sign(claims: claims, header: ["typ": "dpop+jwt", "jwk": .object(key.publicJWK)])
    }

    func request(token: String, proofs: [String], scheme: String = "DPoP", method: HTTPRequest.Method = .get, authority: String = "api.example.com", path: String = "/orders/7?page=2") -> HTTPRequest {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .authorization, value: "\(scheme) \(token)"))
        for proof in proofs { fields.append(HTTPField(name: .dpop, value: proof)) }
        return HTTPRequest(method: method, scheme: "https", authority: authority, path: path, headerFields: fields)
    }

    func refusal(_ server: ResourceServer, _ request: HTTPRequest, scopes: [String] = []) async -> AccessTokenError? {
        await OAuth2WebTests.refusal { () async throws(AccessTokenError) in try await server.verify(request, requiredScopes: scopes) }
    }

    func proofRefusal(_ proof: String, token: String? = nil) async -> AccessTokenError? {
        let token = token ?? boundToken()
        return await refusal(server(), request(token: token, proofs: [proof]))
    }

    @Test func acceptsAValidProofForABoundToken() async throws {
        let token = boundToken()
        let access = try await server().verify(request(token: token, proofs: [proof(for: token)]), requiredScopes: ["orders:read"])
        #expect(access.scheme == .dpop)
        #expect(access.token.confirmationThumbprint == key.thumbprint)
        #expect(access.responseHeaderFields[.dpopNonce] == nil)
    }

    @Test func refusesAProofWithAnotherType() async throws {
        let token = boundToken()
        let claims = DPoPProof(method: .get, url: Self.target, accessToken: token, issuedAt: date.now).claims
        for typ: JSONValue? in ["JWT", "at+jwt", nil] {
            var header: [String: JSONValue] = ["jwk": .object(key.publicJWK)]
            header["typ"] = typ
            #expect(await proofRefusal(try key.signingKey.sign(claims: claims, header: header), token: token)?.reason == .typeMismatch)
        }
    }

    @Test func refusesNoneAndHMACProofs() async throws {
        let token = boundToken()
        let claims = DPoPProof(method: .get, url: Self.target, accessToken: token, issuedAt: date.now).claims
        let header = Base64URL.encode(Data(JSONValue.object(["typ": "dpop+jwt", "alg": "none", "jwk": .object(key.publicJWK)]).description.utf8))
        let unsigned = header + "." + Base64URL.encode(Data(JSONValue.object(claims).description.utf8)) + "."
        #expect(await proofRefusal(unsigned, token: token)?.reason == .jose(.algorithmNotAllowed))
        let hmac = try JWSSigningKey(secret: JSONValue.object(key.publicJWK).description)
        let keyed = try hmac.sign(claims: claims, header: ["typ": "dpop+jwt", "jwk": .object(key.publicJWK)])
        let error = await proofRefusal(keyed, token: token)
        #expect(error?.code == .invalidDPoPProof)
        #expect(error?.reason == .jose(.algorithmNotAllowed))
    }

    @Test func refusesAProofWithoutAPublicKeyOrWithAPrivateOne() async throws {
        let token = boundToken()
        let claims = DPoPProof(method: .get, url: Self.target, accessToken: token, issuedAt: date.now).claims
        let missing = try key.signingKey.sign(claims: claims, header: ["typ": "dpop+jwt"])
        #expect(await proofRefusal(missing, token: token)?.reason == .invalidProofKey)
        let privateJWK = try key.signingKey.sign(claims: claims, header: ["typ": "dpop+jwt", "jwk": .object(key.privateJWK)])
        #expect(await proofRefusal(privateJWK, token: token)?.reason == .invalidProofKey)
        let symmetric = try key.signingKey.sign(claims: claims, header: ["typ": "dpop+jwt", "jwk": ["kty": "oct", "k": "c2VjcmV0"]])
        #expect(await proofRefusal(symmetric, token: token)?.reason == .invalidProofKey)
    }

    @Test func refusesAProofSignedByAnotherKeyThanItsJWK() async throws {
        let token = boundToken()
        let other = try DPoPKey.generate()
        let claims = DPoPProof(method: .get, url: Self.target, accessToken: token, issuedAt: date.now).claims
        let forged = try other.signingKey.sign(claims: claims, header: ["typ": "dpop+jwt", "jwk": .object(key.publicJWK)])
        #expect(await proofRefusal(forged, token: token)?.reason == .jose(.signatureInvalid))
    }

    @Test func refusesAProofForAnotherMethod() async {
        let token = boundToken()
        #expect(await proofRefusal(proof(for: token, method: .post), token: token)?.reason == .methodMismatch)
    }

    @Test func refusesAProofForAnotherURL() async {
        let token = boundToken()
        #expect(await proofRefusal(proof(for: token, url: URL(string: "https://api.example.com/orders/8")!), token: token)?.reason == .urlMismatch)
        #expect(await proofRefusal(proof(for: token, url: URL(string: "https://evil.example.com/orders/7")!), token: token)?.reason == .urlMismatch)
        #expect(await proofRefusal(proof(for: token, url: URL(string: "http://api.example.com/orders/7")!), token: token)?.reason == .urlMismatch)
    }

    @Test func comparesTheURLNormalised() async throws {
        let token = boundToken()
        let spelled = proof(for: token) { $0["htu"] = "HTTPS://API.Example.COM:443/orders/%37" }
        #expect(try await server().verify(request(token: token, proofs: [spelled])).scheme == .dpop)
    }

    @Test func buildsTheURLFromThePublicBaseURLNeverFromTheHostHeader() async throws {
        let token = boundToken()
        // A client that sends Host: evil.example.com and a proof for that host is refused…
        let forHost = proof(for: token, url: URL(string: "https://evil.example.com/orders/7")!)
        let error = await refusal(server(), request(token: token, proofs: [forHost], authority: "evil.example.com"))
        #expect(error?.reason == .urlMismatch)
        // …and a proof for the public URL is accepted whatever Host says (a reverse proxy).
        let forBase = proof(for: token)
        #expect(try await server().verify(request(token: token, proofs: [forBase], authority: "10.0.0.7:8080")).scheme == .dpop)
        // With a path prefix that the proxy strips.
        let prefixed = proof(for: token, url: URL(string: "https://example.com/api/orders/7")!)
        let behindProxy = server(base: URL(string: "https://example.com/api/")!)
        #expect(try await behindProxy.verify(request(token: token, proofs: [prefixed], authority: "localhost:8080")).scheme == .dpop)
    }

    @Test func refusesAProofTooOldOrFromTheFuture() async {
        let token = boundToken()
        #expect(await proofRefusal(proof(for: token, at: date.now.addingTimeInterval(-66)), token: token)?.reason == .jose(.issuedAtInvalid))
        #expect(await proofRefusal(proof(for: token, at: date.now.addingTimeInterval(30)), token: token)?.reason == .jose(.issuedAtInvalid))
        #expect(await proofRefusal(proof(for: token) { $0["iat"] = nil }, token: token)?.reason == .missingClaim)
        #expect(await proofRefusal(proof(for: token, at: date.now.addingTimeInterval(-50)), token: token) == nil)
    }

    @Test func refusesAProofForAnotherAccessToken() async {
        let token = boundToken()
        let other = boundToken()
        #expect(await proofRefusal(proof(for: other), token: token)?.reason == .accessTokenHashMismatch)
        #expect(await proofRefusal(proof(for: token) { $0["ath"] = nil }, token: token)?.reason == .missingClaim)
    }

    @Test func refusesAProofWithoutAnID() async {
        let token = boundToken()
        #expect(await proofRefusal(proof(for: token) { $0["jti"] = nil }, token: token)?.reason == .missingClaim)
        #expect(await proofRefusal(proof(for: token) { $0["jti"] = .string(String(repeating: "j", count: 300)) }, token: token)?.reason == .jose(.invalidClaim))
    }

    @Test func refusesAReplayedProof() async throws {
        let token = boundToken()
        let server = server()
        let once = proof(for: token)
        _ = try await server.verify(request(token: token, proofs: [once]))
        let error = await refusal(server, request(token: token, proofs: [once]))
        #expect(error?.code == .invalidDPoPProof)
        #expect(error?.reason == .replayed)
        // The same jti with another key is another record (keyed by thumbprint + jti).
        let otherKey = try DPoPKey.generate()
        let otherToken = TestIssuer.token { $0["cnf"] = ["jkt": .string(otherKey.thumbprint)] }
        var claims = DPoPProof(method: .get, url: Self.target, accessToken: otherToken, issuedAt: date.now).claims
        claims["jti"] = try JWS(compact: once).claims()["jti"]
        let sameID = try otherKey.signingKey.sign(claims: claims, header: ["typ": "dpop+jwt", "jwk": .object(otherKey.publicJWK)])
        _ = try await server.verify(request(token: otherToken, proofs: [sameID]))
    }

    @Test func refusesATokenBoundToAnotherKey() async {
        let other = try! DPoPKey.generate()
        let token = boundToken(to: other.thumbprint)
        let error = await proofRefusal(proof(for: token), token: token)
        #expect(error?.code == .invalidToken)
        #expect(error?.reason == .confirmationMismatch)
    }

    @Test func refusesABoundTokenAsBearerAndAnUnboundOneAsDPoP() async {
        let bound = boundToken()
        let asBearer = await refusal(server(), request(token: bound, proofs: [], scheme: "Bearer"))
        #expect(asBearer?.code == .invalidToken)
        #expect(asBearer?.reason == .bindingMismatch)
        let unbound = TestIssuer.token()
        let asDPoP = await refusal(server(), request(token: unbound, proofs: [proof(for: unbound)]))
        #expect(asDPoP?.code == .invalidToken)
        #expect(asDPoP?.reason == .bindingMismatch)
    }

    @Test func refusesNoProofOrSeveral() async {
        let token = boundToken()
        #expect(await refusal(server(), request(token: token, proofs: []))?.code == .invalidDPoPProof)
        #expect(await refusal(server(), request(token: token, proofs: [proof(for: token), proof(for: token)]))?.code == .invalidDPoPProof)
    }

    @Test func noncesAreIssuedCheckedAndRotated() async throws {
        let nonces = DPoPServerNonces(secret: SymmetricKey(size: .bits256), lifetime: 300)
        let server = server(nonces: nonces)
        let token = boundToken()
        // No nonce: 401 use_dpop_nonce, with the nonce to use.
        guard case .refused(let challenge) = await server.authorize(request(token: token, proofs: [proof(for: token)])) else {
            Issue.record("accepted without a nonce")
            return
        }
        #expect(challenge.status == .unauthorized)
        #expect(challenge.error.code == .useDPoPNonce)
        let nonce = try #require(challenge.headerFields[.dpopNonce])
        let parsed = try #require(WWWAuthenticate(challenge.headerFields[.wwwAuthenticate] ?? ""))
        #expect(parsed.scheme == "DPoP")
        #expect(parsed.parameters["error"] == "use_dpop_nonce")
        // With it: accepted, and no new nonce yet.
        let access = try await server.verify(request(token: token, proofs: [proof(for: token, nonce: nonce)]))
        #expect(access.responseHeaderFields[.dpopNonce] == nil)
        // In the next window it is still accepted, and the response carries the new one.
        date.advance(by: 300)
        let later = try await server.verify(request(token: token, proofs: [proof(for: token, nonce: nonce)]))
        let fresh = try #require(later.responseHeaderFields[.dpopNonce])
        #expect(fresh != nonce)
        // Two windows later it is refused; so is a nonce the server never issued.
        date.advance(by: 300)
        #expect(await refusal(server, request(token: token, proofs: [proof(for: token, nonce: nonce)]))?.code == .useDPoPNonce)
        let forged = DPoPServerNonces().current(now: date.now)
        let error = await refusal(server, request(token: token, proofs: [proof(for: token, nonce: forged)]))
        #expect(error?.code == .useDPoPNonce)
        #expect(error?.dpopNonce == nonces.current(now: date.now))
    }

    @Test func replicasWithOneSecretAcceptEachOthersNonces() {
        let secret = SymmetricKey(size: .bits256)
        let first = DPoPServerNonces(secret: secret)
        let second = DPoPServerNonces(secret: secret)
        #expect(second.validity(of: first.current(now: date.now), now: date.now) == .current)
        #expect(DPoPServerNonces().validity(of: first.current(now: date.now), now: date.now) == .invalid)
        #expect(first.validity(of: "not-a-nonce", now: date.now) == .invalid)
    }

    @Test func theMemoryReplayStoreExpiresRecordsAndFailsClosedWhenFull() async throws {
        let store = MemoryReplayStore(capacity: 2)
        let now = date.now
        #expect(try await store.insertIfAbsent("a", expiresAt: now.addingTimeInterval(60), now: now))
        #expect(try await !store.insertIfAbsent("a", expiresAt: now.addingTimeInterval(60), now: now))
        #expect(try await store.insertIfAbsent("b", expiresAt: now.addingTimeInterval(60), now: now))
        await #expect(throws: MemoryReplayStore.Full.self) { try await store.insertIfAbsent("c", expiresAt: now.addingTimeInterval(60), now: now) }
        let later = now.addingTimeInterval(61)
        #expect(try await store.insertIfAbsent("a", expiresAt: later.addingTimeInterval(60), now: later))
        #expect(try await store.insertIfAbsent("c", expiresAt: later.addingTimeInterval(60), now: later))
        // A full store refuses the proof (503), never forgets a live record.
        let full = MemoryReplayStore(capacity: 1)
        let server = server(replayStore: full)
        let token = boundToken()
        _ = try await server.verify(request(token: token, proofs: [proof(for: token)]))
        #expect(await refusal(server, request(token: token, proofs: [proof(for: token)]))?.code == .temporarilyUnavailable)
    }
}
