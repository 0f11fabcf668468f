#if MCP
import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE
import OAuth2Web
import Testing
@testable import OAuth2MCP

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// DPoP through the SDK's transport: `Authorization: DPoP <token>` from the authorizer, the
/// proof from its request modifier — checked by OAuth2Web's resource-server verifier.
@Suite struct TokenSessionAuthorizerDPoPTests {
    static func dpopSession(_ endpoint: TokenEndpoint, key: DPoPKey) async throws -> TokenSession {
        let tokens = TokenSet(accessToken: "dpop-at-0", tokenType: .dpop, refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(3600), scopes: ["mcp:read"])
        return try await TokenSession(client: try endpoint.client(dpop: DPoPOptions(key: key)), tokens: tokens)
    }

    /// The request the SDK's transport builds, after `authorizationHeader(for:)`.
    static func transportRequest(_ authorizer: TokenSessionAuthorizer, method: String = "POST") -> URLRequest {
        var request = URLRequest(url: mcpEndpoint)
        request.httpMethod = method
        if let value = authorizer.authorizationHeader(for: mcpEndpoint) { request.setValue(value, forHTTPHeaderField: "Authorization") }
        return request
    }

    static func claims(of proof: String) throws -> [String: Any] {
        let payload = try #require(proof.split(separator: ".").dropFirst().first)
        let data = try #require(Base64URL.decode(String(payload)))
        return try #require(try JSONSerialization.jsonObject(with: Data(data)) as? [String: Any])
    }

    @Test func aDPoPBoundTokenGoesWithAProofTheResourceServerAccepts() async throws {
        let key = try DPoPKey.generate()
        let session = try await Self.dpopSession(TokenEndpoint(tokenType: "DPoP"), key: key)
        let authorizer = TokenSessionAuthorizer(session: session)
        try await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession)
        #expect(authorizer.authorizationHeader(for: mcpEndpoint) == "DPoP dpop-at-0")

        let verifier = DPoPProofVerifier(publicBaseURL: URL(string: "https://mcp.example.com")!)
        var proofs: Set<String> = []
        for method in ["POST", "POST", "GET"] {
            let sent = authorizer.requestModifier(Self.transportRequest(authorizer, method: method))
            let proof = try #require(sent.value(forHTTPHeaderField: "DPoP"))
            proofs.insert(proof)
            let verified = try await verifier.verify(
                proof, method: HTTPRequest.Method(method)!, path: "/mcp", accessToken: "dpop-at-0", boundThumbprint: key.thumbprint)
            #expect(verified.thumbprint == key.thumbprint)
        }
        #expect(proofs.count == 3)  // one proof per request
    }

    @Test func aBearerTokenGetsNoProof() async throws {
        let endpoint = TokenEndpoint()
        let session = try await TokenSession(
            client: try endpoint.client(dpop: DPoPOptions(key: try DPoPKey.generate(), allowsBearerTokens: true)),
            tokens: TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(3600)))
        let authorizer = TokenSessionAuthorizer(session: session)
        try await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession)
        let sent = authorizer.requestModifier(Self.transportRequest(authorizer))
        #expect(sent.value(forHTTPHeaderField: "Authorization") == "Bearer at-0")
        #expect(sent.value(forHTTPHeaderField: "DPoP") == nil)
    }

    @Test func useDPoPNonceIsAnsweredOnceWithTheServersNonce() async throws {
        let endpoint = TokenEndpoint(tokenType: "DPoP")
        let session = try await Self.dpopSession(endpoint, key: try DPoPKey.generate())
        let authorizer = TokenSessionAuthorizer(session: session)
        try await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession)
        let before = try #require(authorizer.requestModifier(Self.transportRequest(authorizer)).value(forHTTPHeaderField: "DPoP"))
        #expect(try Self.claims(of: before)["nonce"] == nil)

        let challenge = ["WWW-Authenticate": #"DPoP error="use_dpop_nonce", error_description="a nonce is required""#, "DPoP-Nonce": "server-nonce-1"]
        #expect(try await authorizer.handleChallenge(statusCode: 401, headers: challenge, endpoint: mcpEndpoint, operationKey: "tools/list", session: unusedSession))
        let after = try #require(authorizer.requestModifier(Self.transportRequest(authorizer)).value(forHTTPHeaderField: "DPoP"))
        #expect(try Self.claims(of: after)["nonce"] as? String == "server-nonce-1")
        #expect(try Self.claims(of: after)["ath"] as? String == DPoPProof.accessTokenHash("dpop-at-0"))
        // The same nonce refused again: not answered again (no loop), and no renewal either.
        #expect(!(try await authorizer.handleChallenge(statusCode: 401, headers: challenge, endpoint: mcpEndpoint, operationKey: "tools/list", session: unusedSession)))
        #expect(endpoint.requests.isEmpty)
        // The session's client learnt it too: its own requests to the server carry it.
        #expect(await session.client.dpopNonces.nonce(for: mcpEndpoint) == "server-nonce-1")
    }

    @Test func aRenewedDPoPTokenIsSentWithItsProof() async throws {
        let key = try DPoPKey.generate()
        let endpoint = TokenEndpoint(tokenType: "DPoP")
        let session = try await Self.dpopSession(endpoint, key: key)
        let authorizer = TokenSessionAuthorizer(session: session)
        try await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession)
        #expect(try await authorizer.handleChallenge(
            statusCode: 401, headers: ["WWW-Authenticate": #"DPoP error="invalid_token""#], endpoint: mcpEndpoint, operationKey: nil,
            session: unusedSession))
        #expect(authorizer.authorizationHeader(for: mcpEndpoint) == "DPoP at-1")
        let proof = try #require(authorizer.requestModifier(Self.transportRequest(authorizer)).value(forHTTPHeaderField: "DPoP"))
        let verifier = DPoPProofVerifier(publicBaseURL: URL(string: "https://mcp.example.com")!)
        _ = try await verifier.verify(proof, method: .post, path: "/mcp", accessToken: "at-1", boundThumbprint: key.thumbprint)
    }
}
#endif
