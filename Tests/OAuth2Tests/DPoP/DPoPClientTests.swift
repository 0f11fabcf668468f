import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// DPoP through the client: proofs on token, PAR and resource requests, nonce retries, the
/// Bearer downgrade refused. The transport only answers; every rule is the library's.
@Suite struct DPoPClientTests {
    static let dpopToken = #"{"access_token":"at-1","token_type":"DPoP","expires_in":300,"refresh_token":"rt-1"}"#

    func dpopClient(_ transport: StubTransport, allowsBearer: Bool = false, key: DPoPKey? = nil) throws -> (OAuth2Client, DPoPKey) {
        let key = try key ?? DPoPKey.generate()
        var configuration = Fixtures.configuration()
        configuration.dpop = DPoPOptions(key: key, allowsBearerTokens: allowsBearer)
        return (try Fixtures.client(transport, configuration: configuration), key)
    }

    func proof(_ sent: StubTransport.Sent) throws -> DecodedProof {
        try DecodedProof(try #require(sent.request.headerFields[HTTPField.Name("DPoP")!], "no DPoP header"))
    }

    @Test func everyTokenRequestCarriesAProof() async throws {
        let transport = StubTransport(status: 200, json: Self.dpopToken)
        let (client, key) = try dpopClient(transport)
        let tokens = try await client.clientCredentials(scopes: ["read"])
        #expect(tokens.tokenType == .dpop)
        _ = try await client.refresh(tokens)
        _ = try await client.password(username: "u", password: "p")
        #expect(transport.sent.count == 3)
        var ids: Set<String> = []
        for sent in transport.sent {
            let proof = try proof(sent)
            #expect(proof.verifiesWithItsOwnKey)
            #expect(proof.jwk.thumbprint == key.thumbprint)
            #expect(proof.claims["htm"] == "POST")
            #expect(proof.claims["htu"] == "https://as.example.com/token")
            #expect(proof.claims["ath"] == nil)
            ids.insert(try #require(proof.claims["jti"]?.stringValue))
            #expect(sent.request.headerFields[.authorization]?.hasPrefix("Basic ") == true, "client authentication is unchanged")
        }
        #expect(ids.count == 3)
        #expect(transport.sent[1].form["grant_type"] == "refresh_token")
    }

    @Test func aUseDPoPNonceErrorIsRetriedOnceWithTheNonce() async throws {
        let transport = StubTransport { request, _ in
            let proof = try DecodedProof(request.headerFields[HTTPField.Name("DPoP")!]!)
            if proof.claims["nonce"] == "server-nonce-1" { return response(200, Self.dpopToken) }
            return response(400, #"{"error":"use_dpop_nonce","error_description":"Authorization server requires nonce in DPoP proof"}"#,
                headers: [HTTPField.Name("DPoP-Nonce")!: "server-nonce-1"])
        }
        let (client, _) = try dpopClient(transport)
        _ = try await client.clientCredentials()
        #expect(transport.sent.count == 2)
        let first = try proof(transport.sent[0]), second = try proof(transport.sent[1])
        #expect(first.claims["nonce"] == nil)
        #expect(second.claims["nonce"] == "server-nonce-1")
        #expect(first.claims["jti"] != second.claims["jti"])
        // The nonce is remembered: the next request sends it at once.
        _ = try await client.clientCredentials()
        #expect(transport.sent.count == 3)
        #expect(try proof(transport.sent[2]).claims["nonce"] == "server-nonce-1")
        // …and the copies of the client share it.
        let copy = client.withDPoP(client.configuration.dpop)
        _ = try await copy.clientCredentials()
        #expect(try proof(transport.sent[3]).claims["nonce"] == "server-nonce-1")
    }

    @Test func clientsSharingANonceStoreShareWhatOneLearnt() async throws {
        let transport = StubTransport { request, _ in
            let proof = try DecodedProof(request.headerFields[HTTPField.Name("DPoP")!]!)
            if proof.claims["nonce"] == "server-nonce-1" { return response(200, Self.dpopToken) }
            return response(400, #"{"error":"use_dpop_nonce"}"#, headers: [HTTPField.Name("DPoP-Nonce")!: "server-nonce-1"])
        }
        // Two replicas: two clients of their own, one key, one store.
        let shared = MemoryDPoPNonceStore()
        let key = try DPoPKey.generate()
        var configuration = Fixtures.configuration()
        configuration.dpop = DPoPOptions(key: key, nonceStore: shared)
        let first = try Fixtures.client(transport, configuration: configuration)
        let second = try Fixtures.client(transport, configuration: configuration)
        _ = try await first.clientCredentials()
        #expect(transport.sent.count == 2, "the first replica is refused once")
        #expect(await shared.nonce(forOrigin: "https://as.example.com:443") == "server-nonce-1")
        _ = try await second.clientCredentials()
        #expect(transport.sent.count == 3, "the second replica's first request carries the nonce")
        #expect(try proof(transport.sent[2]).claims["nonce"] == "server-nonce-1")
        // A client of its own store learns on its own.
        configuration.dpop = DPoPOptions(key: key)
        let alone = try Fixtures.client(transport, configuration: configuration)
        _ = try await alone.clientCredentials()
        #expect(transport.sent.count == 5)
    }

    @Test func anInvalidNonceInAStoreIsNotSent() async throws {
        let transport = StubTransport(status: 200, json: Self.dpopToken)
        let shared = MemoryDPoPNonceStore()
        await shared.remember("bad nonce", forOrigin: "https://as.example.com:443")
        var configuration = Fixtures.configuration()
        configuration.dpop = DPoPOptions(key: try DPoPKey.generate(), nonceStore: shared)
        _ = try await Fixtures.client(transport, configuration: configuration).clientCredentials()
        #expect(try proof(transport.sent[0]).claims["nonce"] == nil)
    }

    @Test func aNonceFromASuccessfulAnswerIsUsedNext() async throws {
        let transport = StubTransport { _, _ in response(200, Self.dpopToken, headers: [HTTPField.Name("DPoP-Nonce")!: "next-nonce"]) }
        let (client, _) = try dpopClient(transport)
        _ = try await client.clientCredentials()
        _ = try await client.clientCredentials()
        #expect(try proof(transport.sent[0]).claims["nonce"] == nil)
        #expect(try proof(transport.sent[1]).claims["nonce"] == "next-nonce")
    }

    @Test func theNonceRetryHappensOnlyOnce() async throws {
        let counter = StubCounter()
        let transport = StubTransport { _, _ in
            let n = counter.next()
            return response(400, #"{"error":"use_dpop_nonce"}"#, headers: [HTTPField.Name("DPoP-Nonce")!: "nonce-\(n)"])
        }
        let (client, _) = try dpopClient(transport)
        await #expect(throws: OAuth2Error.self) { _ = try await client.clientCredentials() }
        do {
            _ = try await client.clientCredentials()
        } catch let error as OAuth2Error {
            #expect(error.code == .useDPoPNonce)
        }
        #expect(transport.sent.count == 4, "two requests, each retried once")
    }

    @Test func aNonceErrorWithoutANonceIsNotRetried() async throws {
        let transport = StubTransport(status: 400, json: #"{"error":"use_dpop_nonce"}"#)
        let (client, _) = try dpopClient(transport)
        await #expect(throws: OAuth2Error.self) { _ = try await client.clientCredentials() }
        #expect(transport.sent.count == 1)
    }

    @Test func aRetryMakesANewClientAssertion() async throws {
        let transport = StubTransport { request, _ in
            let proof = try DecodedProof(request.headerFields[HTTPField.Name("DPoP")!]!)
            if proof.claims["nonce"] != nil { return response(200, Self.dpopToken) }
            return response(400, #"{"error":"use_dpop_nonce"}"#, headers: [HTTPField.Name("DPoP-Nonce")!: "n"])
        }
        var configuration = Fixtures.configuration(method: .clientSecretJWT)
        configuration.dpop = DPoPOptions(key: try DPoPKey.generate())
        let client = try Fixtures.client(transport, configuration: configuration)
        _ = try await client.clientCredentials()
        let assertions = transport.sent.compactMap { $0.form["client_assertion"] }
        #expect(assertions.count == 2)
        #expect(assertions[0] != assertions[1])
        let ids = try assertions.map { try JWS(compact: $0).claims()["jti"] }
        #expect(ids[0] != ids[1], "a replayed jti would be refused")
    }

    @Test func everyDevicePollCarriesAProofAndABearerAnswerIsRefused() async throws {
        let transport = DevicePollingTests.transport([DevicePollingTests.pending, (200, Self.dpopToken)])
        let (client, key) = try dpopClient(transport)
        let tokens = try await client.pollDeviceToken(DevicePollingTests.authorization(), clock: ImmediateClock())
        #expect(tokens.tokenType == .dpop)
        #expect(transport.sent.count == 2)
        let proofs = try transport.sent.map { try proof($0) }
        #expect(proofs.allSatisfy { $0.jwk.thumbprint == key.thumbprint && $0.claims["htu"] == "https://as.example.com/token" })
        #expect(proofs[0].claims["jti"] != proofs[1].claims["jti"])
        let bearer = DevicePollingTests.transport([(200, DevicePollingTests.tokens)])
        let (strict, _) = try dpopClient(bearer)
        do {
            _ = try await strict.pollDeviceToken(DevicePollingTests.authorization(), clock: ImmediateClock())
            Issue.record("a Bearer token was accepted for a DPoP device grant")
        } catch let error as OAuth2Error {
            #expect(error.code == .unboundToken)
        }
    }

    @Test func aBearerAnswerToADPoPRequestIsRefused() async throws {
        let transport = StubTransport(status: 200, json: #"{"access_token":"at-1","token_type":"Bearer","expires_in":300}"#)
        let (client, _) = try dpopClient(transport)
        do {
            _ = try await client.clientCredentials()
            Issue.record("a Bearer token was accepted for a DPoP request")
        } catch let error as OAuth2Error {
            #expect(error.code == .unboundToken)
            #expect(!error.description.contains("at-1"))
        }
        let (lenient, _) = try dpopClient(transport, allowsBearer: true)
        #expect(try await lenient.clientCredentials().tokenType == .bearer)
    }

    @Test func authorizationRequestsCarryTheThumbprint() throws {
        let transport = StubTransport(status: 500, json: "{}")
        let (client, key) = try dpopClient(transport)
        let request = try client.authorizationRequest()
        let query = try #require(URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems)
        #expect(query.first { $0.name == "dpop_jkt" }?.value == key.thumbprint)
        var configuration = Fixtures.configuration()
        configuration.dpop = DPoPOptions(key: key, bindsAuthorizationCode: false)
        let unbound = try Fixtures.client(transport, configuration: configuration).authorizationRequest()
        #expect(!unbound.url.absoluteString.contains("dpop_jkt"))
        #expect(transport.sent.isEmpty)
    }

    @Test func resourceRequestsCarryAProofWithTheTokenHash() async throws {
        let transport = StubTransport(status: 200, json: #"{"ok":true}"#)
        let (client, key) = try dpopClient(transport)
        let tokens = TokenSet(accessToken: "at-1", tokenType: .dpop)
        let url = URL(string: "https://api.example.com/things?page=2#top")!
        let (answer, _) = try await client.perform(HTTPRequest(method: .put, url: url), body: Data("x".utf8), with: tokens)
        #expect(answer.status == .ok)
        let sent = try #require(transport.sent.first)
        #expect(sent.request.headerFields[.authorization] == "DPoP at-1")
        let proof = try proof(sent)
        #expect(proof.jwk.thumbprint == key.thumbprint)
        #expect(proof.claims["htm"] == "PUT")
        #expect(proof.claims["htu"] == "https://api.example.com/things")
        #expect(proof.claims["ath"]?.stringValue == DPoPProof.accessTokenHash("at-1"))
    }

    @Test func aResourceServersNonceChallengeIsAnsweredOnce() async throws {
        let transport = StubTransport { request, _ in
            let proof = try DecodedProof(request.headerFields[HTTPField.Name("DPoP")!]!)
            if request.authority == "as.example.com" { return response(200, Self.dpopToken) }
            if proof.claims["nonce"] == "rs-nonce" { return response(200, "{}") }
            return response(401, "", contentType: nil, headers: [
                .wwwAuthenticate: #"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof""#,
                HTTPField.Name("DPoP-Nonce")!: "rs-nonce",
            ])
        }
        let (client, _) = try dpopClient(transport)
        let tokens = TokenSet(accessToken: "at-1", tokenType: .dpop)
        let (first, _) = try await client.perform(HTTPRequest(method: .get, url: URL(string: "https://api.example.com/a")!), with: tokens)
        #expect(first.status == .ok)
        #expect(transport.sent.count == 2)
        // Remembered for that server only.
        _ = try await client.perform(HTTPRequest(method: .get, url: URL(string: "https://api.example.com/b")!), with: tokens)
        #expect(transport.sent.count == 3)
        #expect(try proof(transport.sent[2]).claims["nonce"] == "rs-nonce")
        _ = try await client.clientCredentials().accessToken
        #expect(try proof(transport.sent.last!).claims["nonce"] == nil, "the authorization server has its own nonces")
    }

    @Test func aRefusedTokenIsReturnedNotRetried() async throws {
        let transport = StubTransport { _, _ in
            response(401, "", contentType: nil, headers: [.wwwAuthenticate: #"DPoP error="invalid_token""#])
        }
        let (client, _) = try dpopClient(transport)
        let (answer, _) = try await client.perform(
            HTTPRequest(method: .get, url: URL(string: "https://api.example.com/a")!), with: TokenSet(accessToken: "at", tokenType: .dpop))
        #expect(answer.status == .unauthorized)
        #expect(transport.sent.count == 1)
    }

    @Test func bearerTokensGoWithoutAProof() async throws {
        let transport = StubTransport(status: 200, json: "{}")
        let (client, _) = try dpopClient(transport, allowsBearer: true)
        _ = try await client.perform(HTTPRequest(method: .get, url: URL(string: "https://api.example.com/a")!), with: TokenSet(accessToken: "at"))
        #expect(transport.sent[0].request.headerFields[.authorization] == "Bearer at")
        #expect(transport.sent[0].request.headerFields[HTTPField.Name("DPoP")!] == nil)
    }

    @Test func aDPoPTokenNeedsAKeyAndHTTPS() async throws {
        let transport = StubTransport(status: 200, json: "{}")
        let plain = try Fixtures.client(transport)
        let tokens = TokenSet(accessToken: "at", tokenType: .dpop)
        await #expect(throws: OAuth2Error.self) {
            _ = try await plain.perform(HTTPRequest(method: .get, url: URL(string: "https://api.example.com/a")!), with: tokens)
        }
        let (client, _) = try dpopClient(transport)
        do {
            _ = try await client.perform(HTTPRequest(method: .get, url: URL(string: "http://api.example.com/a")!), with: tokens)
            Issue.record("a token went over plain HTTP")
        } catch let error as OAuth2Error {
            #expect(error.code == .insecureEndpoint)
        }
        #expect(transport.sent.isEmpty)
    }

    @Test func userInfoSendsADPoPTokenWithAProof() async throws {
        var metadata = Fixtures.metadata
        metadata = metadata.filling(from: ServerMetadata(userInfoEndpoint: URL(string: "https://as.example.com/userinfo")!))
        let transport = StubTransport(status: 200, json: #"{"sub":"alice"}"#)
        let key = try DPoPKey.generate(.edDSA)
        var configuration = Fixtures.configuration()
        configuration.dpop = DPoPOptions(key: key)
        let client = try Fixtures.client(transport, metadata: metadata, configuration: configuration)
        let info = try await client.userInfo(accessToken: "at-9", tokenType: .dpop, expectedSubject: "alice")
        #expect(info.subject == "alice")
        let proof = try proof(transport.sent[0])
        #expect(proof.header["alg"] == "EdDSA")
        #expect(proof.claims["htm"] == "GET")
        #expect(proof.claims["htu"] == "https://as.example.com/userinfo")
        #expect(transport.sent[0].request.headerFields[.authorization] == "DPoP at-9")
        // Without the key, the library says what is missing instead of sending a useless request.
        let keyless = try Fixtures.client(transport, metadata: metadata)
        await #expect(throws: OAuth2Error.self) { _ = try await keyless.userInfo(accessToken: "at-9", tokenType: .dpop, expectedSubject: nil) }
        #expect(transport.sent.count == 1)
    }

    @Test func theKeyIsKeptWithTheStoredSession() async throws {
        try await withTemporaryDirectory { directory in
        let store = try FileTokenStore(directory: directory.appendingPathComponent("tokens"))
        let key = try DPoPKey.generate()
        var record = StoredTokenSession(key: TokenSessionKey(issuer: Fixtures.issuer, clientID: "client-1"), tokens: TokenSet(accessToken: "at", tokenType: .dpop))
        record.setDPoPKey(key)
        try await store.save(record)
        let loaded = try #require(try await store.load(record.key))
        let restored = try #require(try loaded.dpopKey())
        #expect(restored.thumbprint == key.thumbprint)
        #expect(restored.algorithm == .es256)
        var cleared = loaded
        cleared.setDPoPKey(nil)
        #expect(try cleared.dpopKey() == nil)
        var broken = loaded
        broken.additionalFields[StoredTokenSession.dpopKeyField] = .string("not a key")
        #expect(throws: JOSEError.self) { try broken.dpopKey() }
        }
    }

    @Test func theBoundThumbprintIsReadFromAJWTAccessToken() throws {
        let signer = try JWSSigningKey.generate(.rs256)
        let key = try DPoPKey.generate()
        let token = try signer.sign(claims: ["sub": "alice", "cnf": .object(["jkt": .string(key.thumbprint)])])
        #expect(TokenSet(accessToken: token, tokenType: .dpop).accessTokenKeyThumbprint == key.thumbprint)
        #expect(TokenSet(accessToken: "opaque").accessTokenKeyThumbprint == nil)
    }

    @Test func proofsAndAssertionsNeverReachTheLog() async throws {
        let log = CapturedLog()
        let transport = StubTransport(status: 200, json: Self.dpopToken)
        var configuration = Fixtures.configuration(method: .clientSecretJWT)
        configuration.dpop = DPoPOptions(key: try DPoPKey.generate())
        let client = try Fixtures.client(transport, configuration: configuration, logger: log.logger(level: .trace))
        _ = try await client.clientCredentials()
        let sent = try #require(transport.sent.first)
        let proof = try #require(sent.request.headerFields[HTTPField.Name("DPoP")!])
        let assertion = try #require(sent.form["client_assertion"])
        #expect(!log.lines.isEmpty)
        #expect(!log.text.contains(proof))
        #expect(!log.text.contains(assertion))
        #expect(!log.text.contains(String(proof.split(separator: ".")[1])), "not even the claims")
        #expect(!log.text.contains("at-1") && !log.text.contains("rt-1"))
    }
}

/// A thread-safe counter for stub handlers.
final class StubCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int { lock.withLock { value += 1; return value } }
}
