import Foundation
import HTTPTypes
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import Testing

/// A token endpoint on a real socket that counts its requests.
final class CountingTokenEndpoint: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var resourceCalls = 0

    var tokenRequests: Int { lock.withLock { count } }
    var resourceRequests: Int { lock.withLock { resourceCalls } }

    /// Answers `/token` after `delay` with `at-N`/`rt-N`, or with `reply` when given.
    func handler(delay: Duration = .milliseconds(5), reply: (@Sendable (Int) -> LocalHTTPServer.Reply)? = nil) -> LocalHTTPServer.Handler {
        { [self] request in
            guard request.path == "/token" else {
                let accepted = lock.withLock {
                    resourceCalls += 1
                    return request.head.headerFields[.authorization] == "Bearer at-1"
                }
                return accepted ? .json(200, #"{"ok":true}"#) : .json(401, "{}", headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
            }
            let n = lock.withLock {
                count += 1
                return count
            }
            try? await Task.sleep(for: delay)
            if let reply { return reply(n) }
            return .json(200, #"{"access_token":"at-\#(n)","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-\#(n)"}"#)
        }
    }

    static func client(_ server: LocalHTTPServer, transport: any HTTPTransport) throws -> OAuth2Client {
        try OAuth2Client(
            metadata: ServerMetadata(
                issuer: server.baseURL,
                tokenEndpoint: server.baseURL.appendingPathComponent("token"),
                revocationEndpoint: server.baseURL.appendingPathComponent("revoke")),
            configuration: ClientConfiguration(clientID: "session-test", clientSecret: "s3cret"),
            environment: HTTPEnvironment(transport: transport))
    }
}

func expired(_ accessToken: String = "at-0", refreshToken: String = "rt-0") -> TokenSet {
    TokenSet(accessToken: accessToken, refreshToken: refreshToken,
             expiresAt: Date().addingTimeInterval(-10), issuedAt: Date().addingTimeInterval(-3610))
}

@Suite struct SessionSingleFlightTests {
    @Test func tenThousandConcurrentCallersShareOneTokenRequest() async throws {
        let endpoint = CountingTokenEndpoint()
        try await LocalHTTPServer.with(handler: endpoint.handler(delay: .milliseconds(5))) { server in
            let client = try CountingTokenEndpoint.client(server, transport: URLSessionTransport())
            let store = MemoryTokenStore()
            let session = try await TokenSession(client: client, tokens: expired(), store: store)
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<10_000 { group.addTask { try await session.freshAccessToken() } }
                var all: [String] = []
                all.reserveCapacity(10_000)
                for try await token in group { all.append(token) }
                return all
            }
            #expect(endpoint.tokenRequests == 1)
            #expect(tokens.count == 10_000)
            #expect(Set(tokens) == ["at-1"])
            #expect(await store.load(session.key)?.tokens.refreshToken == "rt-1")
        }
    }

    @Test(arguments: [503, 429, 500])
    func aServerErrorDuringRefreshKeepsTheTokens(status: Int) async throws {
        let endpoint = CountingTokenEndpoint()
        try await LocalHTTPServer.with(handler: endpoint.handler(reply: { _ in .json(status, "", headers: [.retryAfter: "7"]) })) { server in
            let store = MemoryTokenStore()
            let session = try await TokenSession(client: try CountingTokenEndpoint.client(server, transport: URLSessionTransport()), tokens: expired(), store: store)
            do {
                _ = try await session.freshAccessToken()
                Issue.record("HTTP \(status) produced a token")
            } catch let error as OAuth2Error {
                #expect(error.isTransient)
                #expect(error.statusCode == status)
                #expect(error.retryAfter == 7)
            }
            #expect(session.tokens?.refreshToken == "rt-0")
            #expect(await store.load(session.key)?.tokens.refreshToken == "rt-0")
        }
    }

    @Test(arguments: ["urlSession", "asyncHTTPClient"])
    func aConnectionResetDuringRefreshKeepsTheTokens(transportName: String) async throws {
        let endpoint = CountingTokenEndpoint()
        try await LocalHTTPServer.with(handler: endpoint.handler(reply: { _ in .close })) { server in
            let transport: any HTTPTransport = transportName == "urlSession" ? URLSessionTransport() : AsyncHTTPClientTransport.sharedForSessionTests
            let store = MemoryTokenStore()
            let session = try await TokenSession(client: try CountingTokenEndpoint.client(server, transport: transport), tokens: expired(), store: store)
            let events = session.events()
            do {
                _ = try await session.freshAccessToken()
                Issue.record("a reset connection produced a token")
            } catch let error as OAuth2Error {
                #expect(error.isTransient)
                #expect(error.source == .transport)
            }
            #expect(session.tokens?.refreshToken == "rt-0")
            #expect(await store.load(session.key)?.tokens.refreshToken == "rt-0")
            var iterator = events.makeAsyncIterator()
            guard case .refreshFailed(let error)? = await iterator.next() else {
                Issue.record("no refreshFailed event")
                return
            }
            #expect(error.isTransient)
        }
    }

    @Test func invalidGrantOverTheWireSignsOut() async throws {
        let endpoint = CountingTokenEndpoint()
        try await LocalHTTPServer.with(handler: endpoint.handler(reply: { _ in .json(400, #"{"error":"invalid_grant"}"#) })) { server in
            let store = MemoryTokenStore()
            let session = try await TokenSession(client: try CountingTokenEndpoint.client(server, transport: URLSessionTransport()), tokens: expired(), store: store)
            do {
                _ = try await session.freshAccessToken()
                Issue.record("a refused refresh token produced a token")
            } catch let error as OAuth2Error {
                #expect(error.code == .signInRequired)
                #expect(error.serverCode == "invalid_grant")
            }
            #expect(session.tokens == nil)
            #expect(await store.load(session.key) == nil)
        }
    }

    @Test func performRefreshesOnceAfterA401AndRetries() async throws {
        let endpoint = CountingTokenEndpoint()
        try await LocalHTTPServer.with(handler: endpoint.handler()) { server in
            let fresh = TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(3600))
            let session = try await TokenSession(client: try CountingTokenEndpoint.client(server, transport: URLSessionTransport()), tokens: fresh)
            let (response, body) = try await session.perform(HTTPRequest(method: .get, url: server.baseURL.appendingPathComponent("api")))
            #expect(response.status == .ok)
            #expect(String(decoding: body, as: UTF8.self) == #"{"ok":true}"#)
            #expect(endpoint.tokenRequests == 1)
            #expect(endpoint.resourceRequests == 2)
        }
    }
}

extension AsyncHTTPClientTransport {
    /// One AsyncHTTPClient transport for these tests (shut down with the process).
    static let sharedForSessionTests = AsyncHTTPClientTransport()
}
