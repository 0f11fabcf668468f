import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// A session's DPoP key: saved with its tokens, read back with them, used for every renewal
/// and every request.
@Suite struct SessionDPoPTests {
    static let proofHeader = HTTPField.Name("DPoP")!

    func dpopTokens(_ accessToken: String, lifetime: TimeInterval = 3600) -> TokenSet {
        TokenSet(accessToken: accessToken, tokenType: .dpop, refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(lifetime), issuedAt: Date())
    }

    /// A provider whose token endpoint issues DPoP tokens and whose API records the proofs.
    func provider() -> ScriptedProvider {
        let provider = ScriptedProvider()
        provider.onToken { _, count in
            response(200, #"{"access_token":"at-\#(count)","token_type":"DPoP","expires_in":3600,"refresh_token":"rt-\#(count)"}"#)
        }
        provider.onResource { authorization, _ in
            authorization?.hasPrefix("DPoP ") == true ? response(200, "{}") : response(401, "", contentType: nil)
        }
        return provider
    }

    @Test func theKeyIsSavedWithTheSignInsTokensAndUsedForRequests() async throws {
        let provider = provider()
        let key = try DPoPKey.generate()
        let store = MemoryTokenStore()
        let client = try provider.client().withDPoP(DPoPOptions(key: key))
        let session = try await TokenSession(client: client, tokens: dpopTokens("at-0"), store: store)
        let record = try #require(await store.load(session.key))
        #expect(try record.dpopKey()?.thumbprint == key.thumbprint)

        let request = try await session.authorize(HTTPRequest(method: .get, url: ScriptedProvider.api))
        #expect(request.headerFields[.authorization] == "DPoP at-0")
        let proof = try DecodedProof(try #require(request.headerFields[Self.proofHeader]))
        #expect(proof.jwk.thumbprint == key.thumbprint)
        #expect(proof.claims["ath"]?.stringValue == DPoPProof.accessTokenHash("at-0"))
        #expect(proof.claims["htu"] == "https://api.example.com/api")
    }

    @Test func aRestoredSessionUsesTheStoredKeyNotTheClients() async throws {
        let provider = provider()
        let stored = try DPoPKey.generate(.edDSA)
        let store = MemoryTokenStore()
        var record = StoredTokenSession(key: TokenSession.key(for: try provider.client()), tokens: dpopTokens("at-0", lifetime: -10))
        record.setDPoPKey(stored)
        await store.save(record)

        // A new process: its client made a key of its own.
        let client = try provider.client().withDPoP(DPoPOptions(key: try DPoPKey.generate()))
        let session = try #require(try await TokenSession.restore(client: client, store: store))
        #expect(session.client.configuration.dpop?.key.thumbprint == stored.thumbprint)
        // The expired token is renewed with the stored key, which stays in the record.
        let (answer, _) = try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api))
        #expect(answer.status == .ok)
        #expect(provider.tokenRequestCount == 1)
        let saved = try #require(await store.load(session.key))
        #expect(saved.tokens.accessToken == "at-1")
        #expect(try saved.dpopKey()?.thumbprint == stored.thumbprint)
        #expect(provider.resourceCalls == ["DPoP at-1"])
    }

    @Test func aLazySessionAdoptsTheStoredKeyWhenItReadsTheRecord() async throws {
        let provider = provider()
        let stored = try DPoPKey.generate()
        let store = MemoryTokenStore()
        var record = StoredTokenSession(key: TokenSession.key(for: try provider.client()), tokens: dpopTokens("at-0"))
        record.setDPoPKey(stored)
        await store.save(record)
        let session = TokenSession(client: try provider.client(), store: store)
        #expect(session.client.configuration.dpop == nil, "nothing read yet")
        let request = try await session.authorize(HTTPRequest(method: .get, url: ScriptedProvider.api))
        let proof = try DecodedProof(try #require(request.headerFields[Self.proofHeader]))
        #expect(proof.jwk.thumbprint == stored.thumbprint)
        #expect(provider.tokenRequestCount == 0, "the stored token was fresh")
    }

    @Test func renewalsCarryAProofWithTheSessionsKey() async throws {
        let provider = ScriptedProvider()
        let proofs = ProofLog()
        let key = try DPoPKey.generate()
        let transport = provider.transport
        let recording = StubTransport { request, body in
            proofs.append(request.headerFields[Self.proofHeader])
            return try await transport.send(request, body: body)
        }
        provider.onToken { _, count in
            response(200, #"{"access_token":"at-\#(count)","token_type":"DPoP","expires_in":3600}"#)
        }
        let client = try Fixtures.client(recording, metadata: ScriptedProvider.metadata).withDPoP(DPoPOptions(key: key))
        let session = try await TokenSession(client: client, tokens: dpopTokens("at-0", lifetime: -5))
        _ = try await session.freshTokens()
        let proof = try DecodedProof(try #require(proofs.values.first ?? nil))
        #expect(proof.jwk.thumbprint == key.thumbprint)
        #expect(proof.claims["htu"] == "https://as.example.com/token")
        #expect(proof.claims["ath"] == nil)
    }

    @Test func aNonceChallengeIsAnsweredWithoutRenewingTheToken() async throws {
        let provider = provider()
        let challenged = ProofLog()
        provider.onResource { authorization, _ in
            challenged.append(authorization)
            if challenged.values.count == 1 {
                return response(401, "", contentType: nil, headers: [
                    .wwwAuthenticate: #"DPoP error="use_dpop_nonce""#, HTTPField.Name("DPoP-Nonce")!: "rs-1",
                ])
            }
            return response(200, "{}")
        }
        let client = try provider.client().withDPoP(DPoPOptions(key: try DPoPKey.generate()))
        let session = try await TokenSession(client: client, tokens: dpopTokens("at-0"))
        let (answer, _) = try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api))
        #expect(answer.status == .ok)
        #expect(provider.resourceCalls == ["DPoP at-0", "DPoP at-0"])
        #expect(provider.tokenRequestCount == 0)
        #expect(await session.client.dpopNonces.nonce(for: ScriptedProvider.api) == "rs-1")
    }

    @Test func aSignInWithoutDPoPForgetsTheOldKey() async throws {
        let provider = provider()
        let store = MemoryTokenStore()
        let bound = try provider.client().withDPoP(DPoPOptions(key: try DPoPKey.generate()))
        _ = try await TokenSession(client: bound, tokens: dpopTokens("at-0"), store: store)
        let plain = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-9"), store: store)
        let record = try #require(await store.load(plain.key))
        #expect(try record.dpopKey() == nil, "the new tokens are not bound to the old key")
        #expect(record.tokens.accessToken == "at-9")
    }

    @Test func aDPoPBoundTokenNeedsAKey() async throws {
        let provider = ScriptedProvider()
        let session = try await TokenSession(client: try provider.client(), tokens: dpopTokens("at-0"))
        do {
            _ = try await session.authorize(HTTPRequest(method: .get, url: ScriptedProvider.api))
            Issue.record("a DPoP token went without a proof")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidConfiguration)
        }
    }
}

/// A thread-safe list of optional strings (headers seen by a stub).
final class ProofLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String?] = []
    func append(_ value: String?) { lock.withLock { storage.append(value) } }
    var values: [String?] { lock.withLock { storage } }
}
