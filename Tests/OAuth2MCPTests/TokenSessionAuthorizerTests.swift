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

/// The authorizer's answers to the SDK's transport, with a real session whose token endpoint
/// answers without a socket.
@Suite struct TokenSessionAuthorizerTests {
    static let invalidToken = ["WWW-Authenticate": #"Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#]

    static func tokens(_ token: String = "at-0", type: TokenType = .bearer, expiresIn: TimeInterval = 3600, scopes: [String]? = ["mcp:read"]) -> TokenSet {
        // Issued an hour ago: the session's leeway (60 s) applies in full.
        TokenSet(
            accessToken: token, tokenType: type, refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(expiresIn), scopes: scopes,
            issuedAt: Date().addingTimeInterval(-3600))
    }

    @Test func headerIsTheSessionsTokenOncePrepared() async throws {
        let endpoint = TokenEndpoint()
        let session = try await TokenSession(client: try endpoint.client(), tokens: Self.tokens())
        let authorizer = TokenSessionAuthorizer(session: session)
        #expect(authorizer.authorizationHeader(for: mcpEndpoint) == nil)
        try await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession)
        #expect(authorizer.authorizationHeader(for: mcpEndpoint) == "Bearer at-0")
        #expect(endpoint.requests.isEmpty)
    }

    @Test func prepareRenewsATokenDueOnceForConcurrentRequests() async throws {
        let endpoint = TokenEndpoint()
        // Expires within the session's leeway (60 s): due for renewal.
        let session = try await TokenSession(client: try endpoint.client(), tokens: Self.tokens(expiresIn: 10))
        let authorizer = TokenSessionAuthorizer(session: session)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { try await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession) } }
            try await group.waitForAll()
        }
        #expect(endpoint.requests.count == 1)
        #expect(endpoint.requests.first?["grant_type"] == "refresh_token")
        #expect(endpoint.requests.first?["refresh_token"] == "rt-0")
        #expect(authorizer.authorizationHeader(for: mcpEndpoint) == "Bearer at-1")
    }

    @Test func invalidTokenRenewsOnceAndARenewedTokenRefusedIsNotRenewedAgain() async throws {
        let endpoint = TokenEndpoint()
        let session = try await TokenSession(client: try endpoint.client(), tokens: Self.tokens())
        let authorizer = TokenSessionAuthorizer(session: session)
        try await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession)
        let first = try await authorizer.handleChallenge(
            statusCode: 401, headers: Self.invalidToken, endpoint: mcpEndpoint, operationKey: "tools/list", session: unusedSession)
        #expect(first)
        #expect(authorizer.authorizationHeader(for: mcpEndpoint) == "Bearer at-1")
        let second = try await authorizer.handleChallenge(
            statusCode: 401, headers: Self.invalidToken, endpoint: mcpEndpoint, operationKey: "tools/list", session: unusedSession)
        #expect(!second)
        #expect(endpoint.requests.count == 1)
    }

    @Test func aPlain401RenewsToo() async throws {
        let endpoint = TokenEndpoint()
        let session = try await TokenSession(client: try endpoint.client(), tokens: Self.tokens())
        let authorizer = TokenSessionAuthorizer(session: session)
        try await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession)
        #expect(try await authorizer.handleChallenge(statusCode: 401, headers: [:], endpoint: mcpEndpoint, operationKey: nil, session: unusedSession))
        #expect(endpoint.requests.count == 1)
    }

    @Test(arguments: [
        #"Bearer error="invalid_request""#, #"Bearer error="insufficient_scope", scope="mcp:write""#,
    ])
    func a401NamingAnotherErrorIsNotRenewed(challenge: String) async throws {
        let endpoint = TokenEndpoint()
        let session = try await TokenSession(client: try endpoint.client(), tokens: Self.tokens())
        let authorizer = TokenSessionAuthorizer(session: session)
        try await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession)
        let handled = try await authorizer.handleChallenge(
            statusCode: 401, headers: ["www-authenticate": challenge], endpoint: mcpEndpoint, operationKey: nil, session: unusedSession)
        #expect(!handled)
        #expect(endpoint.requests.isEmpty)
    }

    @Test(arguments: [400, 404, 429, 500])
    func otherStatusesAreLeftToTheTransport(status: Int) async throws {
        let endpoint = TokenEndpoint()
        let session = try await TokenSession(client: try endpoint.client(), tokens: Self.tokens())
        let authorizer = TokenSessionAuthorizer(session: session)
        let handled = try await authorizer.handleChallenge(
            statusCode: status, headers: Self.invalidToken, endpoint: mcpEndpoint, operationKey: nil, session: unusedSession)
        #expect(!handled)
        #expect(endpoint.requests.isEmpty)
    }

    @Test func withoutTokensAChallengeSignsInThroughTheHook() async throws {
        let endpoint = TokenEndpoint()
        let session = TokenSession(client: try endpoint.client())
        let signIns = Counter()
        let authorizer = TokenSessionAuthorizer(session: session, signIn: { _ in
            signIns.increment()
            return Self.tokens("signed-in")
        })
        try? await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession)
        #expect(authorizer.authorizationHeader(for: mcpEndpoint) == nil)
        #expect(try await authorizer.handleChallenge(statusCode: 401, headers: [:], endpoint: mcpEndpoint, operationKey: "initialize", session: unusedSession))
        #expect(authorizer.authorizationHeader(for: mcpEndpoint) == "Bearer signed-in")
        #expect(signIns.value == 1)
        #expect(session.tokens?.accessToken == "signed-in")
    }

    @Test func withoutTokensOrHookAChallengeSaysSignInRequired() async throws {
        let session = TokenSession(client: try TokenEndpoint().client())
        let authorizer = TokenSessionAuthorizer(session: session)
        await #expect(throws: OAuth2Error.self) {
            try await authorizer.handleChallenge(statusCode: 401, headers: [:], endpoint: mcpEndpoint, operationKey: nil, session: unusedSession)
        }
        do {
            _ = try await authorizer.handleChallenge(statusCode: 401, headers: [:], endpoint: mcpEndpoint, operationKey: nil, session: unusedSession)
        } catch let error as OAuth2Error {
            #expect(error.code == .signInRequired)
        }
    }

    @Test func insufficientScopeStepsUpOncePerOperationForTheUnionOfScopes() async throws {
        let endpoint = TokenEndpoint()
        let asked = Recorder<[String]>()
        let options = TokenSession.Options(stepUp: { _, scopes in
            asked.append(scopes)
            return Self.tokens("stepped", scopes: scopes)
        })
        let session = try await TokenSession(client: try endpoint.client(), tokens: Self.tokens(), options: options)
        let authorizer = TokenSessionAuthorizer(session: session)
        try await authorizer.prepareAuthorization(for: mcpEndpoint, session: unusedSession)
        let challenge = ["WWW-Authenticate": #"Bearer error="insufficient_scope", scope="mcp:read mcp:write", error_description="needs mcp:write""#]
        #expect(try await authorizer.handleChallenge(statusCode: 403, headers: challenge, endpoint: mcpEndpoint, operationKey: "tools/call", session: unusedSession))
        #expect(asked.values == [["mcp:read", "mcp:write"]])
        #expect(authorizer.authorizationHeader(for: mcpEndpoint) == "Bearer stepped")
        // The server asks again for the same operation: no second sign-in, no loop.
        #expect(!(try await authorizer.handleChallenge(statusCode: 403, headers: challenge, endpoint: mcpEndpoint, operationKey: "tools/call", session: unusedSession)))
        #expect(asked.values.count == 1)
        #expect(endpoint.requests.isEmpty)
    }

    @Test func a403WithoutAScopeChallengeOrWithoutStepUpIsNotAnswered() async throws {
        let endpoint = TokenEndpoint()
        let withStepUp = try await TokenSession(
            client: try endpoint.client(), tokens: Self.tokens(), options: TokenSession.Options(stepUp: { _, _ in Self.tokens("never") }))
        let plain = try await TokenSession(client: try endpoint.client(), tokens: Self.tokens())
        for (session, headers) in [
            (withStepUp, ["WWW-Authenticate": #"Bearer error="invalid_token""#]),
            (withStepUp, ["WWW-Authenticate": #"Bearer error="insufficient_scope""#]),  // names no scope
            (plain, ["WWW-Authenticate": #"Bearer error="insufficient_scope", scope="mcp:write""#]),
        ] {
            let authorizer = TokenSessionAuthorizer(session: session)
            #expect(!(try await authorizer.handleChallenge(statusCode: 403, headers: headers, endpoint: mcpEndpoint, operationKey: "tools/call", session: unusedSession)))
        }
        #expect(withStepUp.tokens?.accessToken == "at-0")
    }

    @Test func endpointsATokenMustNotGoToAreRefused() throws {
        let authorizer = TokenSessionAuthorizer(session: TokenSession(client: try TokenEndpoint().client()))
        #expect(throws: Never.self) { try authorizer.validateEndpointSecurity(for: URL(string: "https://mcp.example.com/mcp")!) }
        #expect(throws: Never.self) { try authorizer.validateEndpointSecurity(for: URL(string: "http://127.0.0.1:8090/mcp")!) }
        #expect(throws: OAuth2Error.self) { try authorizer.validateEndpointSecurity(for: URL(string: "http://mcp.example.com/mcp")!) }
    }
}

/// A thread-safe counter.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// Values recorded from several tasks.
final class Recorder<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [Value] = []
    func append(_ value: Value) { lock.withLock { recorded.append(value) } }
    var values: [Value] { lock.withLock { recorded } }
}
#endif
