import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// Issue 27's hostile resources, each refused with a typed error — and, for each, what went
/// where: every request the client made is recorded, and none carries a credential (an
/// `Authorization` header, a token, a secret, an assertion) or goes to a host the resource
/// did not lead to legitimately.
@Suite struct HostileResourceTests {
    typealias Scripted = ProtectedResourceDiscoveryTests
    static let resource = Scripted.resource
    static let credentialNames = ["access_token", "refresh_token", "client_secret", "assertion", "client_assertion", "subject_token", "code"]

    func discovery(_ transport: StubTransport) -> ProtectedResourceDiscovery {
        ProtectedResourceDiscovery(environment: HTTPEnvironment(transport: transport, metadataCache: MetadataCache()))
    }

    /// Every request was a credential-free GET to one of `hosts`.
    func expectNoCredentialSent(_ transport: StubTransport, onlyTo hosts: Set<String>, _ comment: Comment? = nil) {
        for sent in transport.sent {
            #expect(sent.request.method == .get, comment)
            #expect(sent.request.headerFields[.authorization] == nil, comment)
            #expect(sent.request.headerFields[.dpop] == nil, comment)
            #expect(sent.body == nil || sent.body?.isEmpty == true, comment)
            let query = URLComponents(string: "https://x\(sent.request.path ?? "")")?.queryItems?.map(\.name) ?? []
            #expect(Set(query).isDisjoint(with: Self.credentialNames), comment)
            #expect(hosts.contains(sent.request.authority ?? ""), "\(sent.request.authority ?? "?") was asked. \(comment.map { "\($0)" } ?? "")")
        }
    }

    @Test("metadata whose resource differs from the URL: resource_mismatch; only the resource's own origin was asked, with no credential")
    func resourceDiffersFromTheURL() async throws {
        let transport = Scripted.server([
            Scripted.pathInserted: (200, Scripted.metadata(resource: "https://evil.example.com/mcp", servers: ["https://evil.example.com"]), [:]),
            "https://evil.example.com/.well-known/oauth-authorization-server": (200, Scripted.asMetadata(issuer: "https://evil.example.com"), [:]),
        ])
        let error = await #expect(throws: OAuth2Error.self) {
            try await discovery(transport).discover(resource: Self.resource, unauthorizedResponse: nil)
        }
        #expect(error?.code == .resourceMismatch)
        #expect(!transport.sent.isEmpty)
        expectNoCredentialSent(transport, onlyTo: ["mcp.example.com"])
    }

    @Test("a listed authorization server answering with another issuer: issuer_mismatch; the impostor issuer is never asked")
    func authorizationServerAnswersWithAnotherIssuer() async throws {
        let transport = Scripted.server([
            Scripted.pathInserted: (200, Scripted.metadata(), [:]),
            "https://as.example.com/.well-known/oauth-authorization-server": (200, Scripted.asMetadata(issuer: "https://evil.example.com"), [:]),
            "https://evil.example.com/.well-known/oauth-authorization-server": (200, Scripted.asMetadata(issuer: "https://evil.example.com"), [:]),
        ])
        let error = await #expect(throws: OAuth2Error.self) {
            try await discovery(transport).discover(resource: Self.resource, unauthorizedResponse: nil)
        }
        #expect(error?.code == .issuerMismatch)
        expectNoCredentialSent(transport, onlyTo: ["mcp.example.com", "as.example.com"])
    }

    @Test("a challenge pointing the metadata to another origin: metadata_origin_mismatch; nothing is sent at all")
    func challengePointsElsewhere() async throws {
        let pointed = "https://evil.example.com/.well-known/oauth-protected-resource/mcp"
        let transport = Scripted.server([pointed: (200, Scripted.metadata(), [:])])
        let error = await #expect(throws: OAuth2Error.self) {
            try await discovery(transport).discover(
                resource: Self.resource, unauthorizedResponse: Scripted.unauthorized(#"Bearer resource_metadata="\#(pointed)""#))
        }
        #expect(error?.code == .metadataOriginMismatch)
        #expect(error?.message?.contains("evil.example.com") == true)
        #expect(transport.sent.isEmpty)
    }

    @Test("a metadata document at a non-https URL (off loopback): insecure_endpoint; nothing is sent at all")
    func metadataAtAPlainHTTPURL() async throws {
        let transport = Scripted.server([:])
        for pointed in [
            "http://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            "http://mcp.example.com:443/.well-known/oauth-protected-resource/mcp",
        ] {
            let error = await #expect(throws: OAuth2Error.self) {
                try await discovery(transport).discover(
                    resource: Self.resource, unauthorizedResponse: Scripted.unauthorized(#"Bearer resource_metadata="\#(pointed)""#))
            }
            #expect(error?.code == .insecureEndpoint || error?.code == .metadataOriginMismatch, "\(pointed): \(error?.code.rawValue ?? "")")
        }
        #expect(transport.sent.isEmpty)
    }

    @Test("a step-up loop: the server keeps asking; one step-up, then a typed error, and the tokens went only to the resource")
    func stepUpLoop() async throws {
        let provider = ScriptedProvider(accepting: [])
        provider.onResource { _, _ in
            response(403, "", contentType: nil, headers: [.wwwAuthenticate: SessionStepUpTests.challenge])
        }
        let stepUps = SessionStepUpTests.StepUps()
        let options = TokenSession.Options(stepUp: { _, scopes in freshTokens("wide-\(stepUps.record(scopes))") })
        var tokens = freshTokens("at-0")
        tokens.scopes = ["tools:read"]
        let session = try await TokenSession(client: try provider.client(), tokens: tokens, options: options)
        for _ in 0..<2 {
            let error = await #expect(throws: OAuth2Error.self) {
                try await session.perform(HTTPRequest(method: .get, url: ScriptedProvider.api))
            }
            #expect(error?.code == .insufficientScope)
        }
        #expect(stepUps.requests.count == 2, "one step-up per request, never more")
        #expect(provider.resourceCalls.count == 4, "each request: the first try and one retry")
        #expect(provider.tokenRequestCount == 0, "no refresh token or grant went to the token endpoint either")
    }
}
