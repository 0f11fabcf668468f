import Foundation
import HTTPTypes
import OAuth2
import Testing

extension Integration {
    @Suite struct Sessions {
        /// Tokens from the password grant, with `openid` so that UserInfo accepts them.
        func signIn(_ server: Server, transport: TransportKind = .urlSession, counter: RequestCounter? = nil) async throws -> (OAuth2Client, TokenSet) {
            var configuration = server.passwordClient()
            configuration.scopes = ["openid", "read"]
            let client = try await server.client(configuration, transport: transport, interceptors: counter.map { [$0] } ?? [])
            let tokens = try await client.password(username: Server.username, password: Server.password)
            #expect(tokens.refreshToken != nil)
            return (client, tokens)
        }

        /// The same tokens, expired a minute ago.
        func expiring(_ tokens: TokenSet) -> TokenSet {
            var copy = tokens
            copy.expiresAt = Date().addingTimeInterval(-60)
            return copy
        }

        @Test(arguments: Server.allCases, TransportKind.allCases)
        func concurrentCallersOfAnExpiredSessionShareOneRefresh(server: Server, transport: TransportKind) async throws {
            let counter = RequestCounter()
            let (client, original) = try await signIn(server, transport: transport, counter: counter)
            let store = MemoryTokenStore()
            let session = try await TokenSession(client: client, tokens: expiring(original), store: store)
            let before = counter.count(.token)
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<50 { group.addTask { try await session.freshAccessToken() } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(counter.count(.token) - before == 1, "one refresh for 50 callers")
            #expect(tokens.count == 1)
            #expect(tokens.first != original.accessToken)
            let stored = try #require(await store.load(session.key))
            #expect(stored.tokens.accessToken == tokens.first)
            switch server {
            case .dot:
                #expect(stored.tokens.refreshToken != original.refreshToken, "DOT rotates: the new refresh token is saved")
                await #expect(throws: OAuth2Error.self, "the rotated-out refresh token is dead") { try await client.refresh(original) }
            case .glewlwyd:
                #expect(stored.tokens.refreshToken == original.refreshToken, "Glewlwyd keeps the refresh token")
            }
            // The saved refresh token works.
            let again = try await session.refresh()
            #expect(again.accessToken != tokens.first)
        }

        @Test(arguments: Server.allCases)
        func performRefreshesOnceWhenTheResourceRefusesTheToken(server: Server) async throws {
            let counter = RequestCounter()
            let (client, tokens) = try await signIn(server, counter: counter)
            var refused = tokens
            refused.accessToken = "not-a-token-this-server-issued"
            let session = try await TokenSession(client: client, tokens: refused)
            let userInfo = try #require(client.metadata.userInfoEndpoint)
            let (response, body) = try await session.perform(HTTPRequest(method: .get, url: userInfo))
            #expect(response.status == .ok)
            #expect(String(decoding: body, as: UTF8.self).contains("\"sub\""))
            #expect(counter.count(.resource) == 2, "the refused request and one retry")
            #expect(counter.count(.token) == 2, "the sign-in and one refresh")
        }

        @Test(arguments: Server.allCases)
        func aRevokedRefreshTokenSignsTheSessionOut(server: Server) async throws {
            let (client, tokens) = try await signIn(server)
            let store = MemoryTokenStore()
            let session = try await TokenSession(client: client, tokens: expiring(tokens), store: store)
            let events = session.events()
            try await client.revoke(try #require(tokens.refreshToken), hint: .refreshToken)
            do {
                _ = try await session.freshAccessToken()
                Issue.record("a revoked refresh token was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .signInRequired)
                #expect(error.serverCode == "invalid_grant")
                #expect(error.requiresReauthorization)
            }
            #expect(session.tokens == nil)
            #expect(await store.load(session.key) == nil)
            var iterator = events.makeAsyncIterator()
            guard case .signedOut(let error)? = await iterator.next() else {
                Issue.record("no signedOut event")
                return
            }
            #expect(error?.code == .signInRequired)
        }

        @Test(arguments: Server.allCases)
        func signOutRevokesBothTokensAndForgetsThem(server: Server) async throws {
            let (client, tokens) = try await signIn(server)
            let store = MemoryTokenStore()
            let session = try await TokenSession(client: client, tokens: tokens, store: store)
            let steps = StepLog()
            let result = await session.signOut(.all, progress: { steps.append("\($0.step)") })
            #expect(result.succeeded, "failed: \(result.failed) \(result.errors)")
            #expect(steps.lines.count == 8)
            #expect(result.endSessionRequest?.url.absoluteString.hasPrefix(try #require(client.metadata.endSessionEndpoint).absoluteString) == true)
            #expect(await store.load(session.key) == nil)
            #expect(session.tokens == nil)
            let introspecting = try await server.client(server.passwordClient())
            #expect(try await introspecting.introspect(tokens.accessToken, hint: .accessToken).active == false)
            await #expect(throws: OAuth2Error.self, "the refresh token is revoked") { try await client.refresh(tokens) }
        }

        @Test(arguments: Server.allCases)
        func aClientCredentialsSessionNeedsNoSignIn(server: Server) async throws {
            let client = try await server.client(server.clientCredentials())
            let session = TokenSession(client: client, options: .init(renewal: .clientCredentials()))
            let first = try await session.freshAccessToken()
            #expect(try await session.freshAccessToken() == first, "the cached token")
            let renewed = try await session.refresh()
            #expect(renewed.accessToken != first)
            #expect(try await client.introspect(renewed.accessToken).active)
        }

        @Test func glewlwydsJWTExpiryIsReadInTheServersClock() async throws {
            // Glewlwyd issues JWT access tokens: without expires_in the session reads `exp`,
            // written in the server's clock, corrected by the skew measured from the Date header.
            let (client, tokens) = try await signIn(.glewlwyd)
            let serverDate = try #require(tokens.serverDate, "Glewlwyd sends a Date header")
            var withoutExpiresIn = tokens
            withoutExpiresIn.expiresAt = nil
            let session = try await TokenSession(client: client, tokens: withoutExpiresIn)
            #expect(try await session.freshAccessToken() == tokens.accessToken, "the JWT says it is valid an hour")
            // Had the server's clock been two hours ahead, the same `exp` would have passed an hour ago here.
            var skewed = withoutExpiresIn
            skewed.serverDate = serverDate.addingTimeInterval(7200)
            let skewedSession = try await TokenSession(client: client, tokens: skewed)
            #expect(try await skewedSession.freshAccessToken() != tokens.accessToken, "renewed")
            // The corrected `exp` agrees with expires_in to within the Date header's second.
            let exp = try #require(JWTExpiry.read(tokens.accessToken))
            let corrected = exp.addingTimeInterval(-serverDate.timeIntervalSince(tokens.issuedAt))
            #expect(abs(corrected.timeIntervalSince(try #require(tokens.expiresAt))) <= 2.5)
        }
    }
}

/// A thread-safe list of lines.
final class StepLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    var lines: [String] { lock.withLock { storage } }
    func append(_ line: String) { lock.withLock { storage.append(line) } }
}

/// Reads a JWT's `exp` (test-side, independent of the library's reader).
enum JWTExpiry {
    static func read(_ jwt: String) -> Date? {
        let parts = jwt.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let exp = object["exp"] as? Double
        else { return nil }
        return Date(timeIntervalSince1970: exp)
    }
}
