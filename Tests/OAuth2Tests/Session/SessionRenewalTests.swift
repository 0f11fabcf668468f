import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

@Suite struct SessionRenewalTests {
    @Test func aFreshTokenIsReturnedWithoutARequest() async throws {
        let provider = ScriptedProvider()
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        #expect(try await session.freshAccessToken() == "at-0")
        #expect(provider.tokenRequestCount == 0)
    }

    @Test func anExpiredTokenIsRefreshedAndSaved() async throws {
        let provider = ScriptedProvider()
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        #expect(try await session.freshAccessToken() == "at-1")
        #expect(provider.tokenForms.first?["grant_type"] == "refresh_token")
        #expect(provider.tokenForms.first?["refresh_token"] == "rt-0")
        #expect(await store.load(session.key)?.tokens.accessToken == "at-1")
        #expect(session.tokens?.accessToken == "at-1")
        #expect(try await session.freshAccessToken() == "at-1", "the new token is fresh")
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func aTokenInsideTheLeewayIsRenewed() async throws {
        // An hour-long token with ten minutes left.
        let provider = ScriptedProvider()
        let client = try provider.client()
        let tokens = TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(600), issuedAt: Date().addingTimeInterval(-3000))
        let soon = try await TokenSession(client: client, tokens: tokens, options: .init(leeway: 700))
        #expect(try await soon.freshAccessToken() == "at-1")
        let later = try await TokenSession(client: client, tokens: tokens, options: .init(leeway: 60))
        #expect(try await later.freshAccessToken() == "at-0")
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func aShortLivedTokenIsRenewedAtHalfItsLifeNotOnEveryCall() async throws {
        let provider = ScriptedProvider()
        // 30 s of life with the default 60 s leeway: renewed after 15 s, not at once.
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0", lifetime: 30))
        #expect(try await session.freshAccessToken() == "at-0")
        #expect(provider.tokenRequestCount == 0)
    }

    @Test func aRefreshWithoutARefreshTokenKeepsTheOldOne() async throws {
        // Glewlwyd: the refresh response has no refresh_token.
        let provider = ScriptedProvider()
        provider.onToken { _, count in tokenResponse("at-\(count)") }
        let store = MemoryTokenStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        _ = try await session.freshAccessToken()
        #expect(session.tokens?.refreshToken == "rt-0")
        #expect(await store.load(session.key)?.tokens.refreshToken == "rt-0")
    }

    @Test func aRotatedRefreshTokenIsSavedBeforeAnyCallerGetsTheNewAccessToken() async throws {
        // DOT: every refresh response carries a new refresh token; the old one is dead.
        let provider = ScriptedProvider()
        let store = RecordingStore()
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens(), store: store)
        let token = try await session.freshAccessToken()
        await store.note("caller got \(token)")
        #expect(await store.operations == ["save at-0 rt-0", "save at-1 rt-1", "caller got at-1"])
        let refreshed = try await session.refresh()
        #expect(refreshed.refreshToken == "rt-2")
        #expect(provider.tokenForms.last?["refresh_token"] == "rt-1", "the rotated token is the one used next")
    }

    @Test func concurrentCallersShareOneTokenRequest() async throws {
        let provider = ScriptedProvider()
        provider.onToken { _, count in
            try await Task.sleep(for: .milliseconds(20))
            return tokenResponse("at-\(count)", refreshToken: "rt-\(count)")
        }
        let session = try await TokenSession(client: try provider.client(), tokens: expiredTokens())
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<1000 { group.addTask { try await session.freshAccessToken() } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(provider.tokenRequestCount == 1)
        #expect(tokens.count == 1000)
        #expect(Set(tokens) == ["at-1"])
    }

    @Test func twoSessionsSharingAStoreMakeOneRequest() async throws {
        // What two processes sharing a file store do, in one process: each session has its
        // own memory; the store's lock and the re-read inside it make the second one take
        // the first one's tokens.
        let provider = ScriptedProvider()
        provider.onToken { _, count in
            try await Task.sleep(for: .milliseconds(20))
            return tokenResponse("at-\(count)", refreshToken: "rt-\(count)")
        }
        let store = MemoryTokenStore()
        let client = try provider.client()
        let first = try await TokenSession(client: client, tokens: expiredTokens(), store: store)
        let second = try #require(try await TokenSession.restore(client: client, store: store))
        async let a = first.freshAccessToken()
        async let b = second.freshAccessToken()
        let (tokenA, tokenB) = try await (a, b)
        #expect(tokenA == "at-1")
        #expect(tokenB == "at-1")
        #expect(provider.tokenRequestCount == 1)
        #expect(await store.load(first.key)?.tokens.refreshToken == "rt-1")
    }

    @Test func aSessionReadsItsTokensFromTheStoreWhenFirstNeeded() async throws {
        let provider = ScriptedProvider()
        let store = MemoryTokenStore()
        let client = try provider.client()
        _ = try await TokenSession(client: client, tokens: freshTokens("at-stored"), store: store, account: "alice")
        let session = TokenSession(client: client, store: store, account: "alice")
        #expect(session.tokens == nil)
        #expect(try await session.freshAccessToken() == "at-stored")
        #expect(provider.tokenRequestCount == 0)
        #expect(try await TokenSession.restore(client: client, store: store, account: "bob") == nil)
    }

    @Test func aSignInKeepsTheRecordsOtherMembersButItsSubject() async throws {
        let provider = ScriptedProvider()
        let client = try provider.client()
        let store = MemoryTokenStore()
        let key = TokenSession.key(for: client)
        await store.save(StoredTokenSession(key: key, tokens: freshTokens("old"), subject: "user-1", additionalFields: ["dpop": "kept", "client_secret": "kept"]))
        let session = try await TokenSession(client: client, tokens: freshTokens("new"), store: store)
        let record = try #require(await store.load(session.key))
        #expect(record.tokens.accessToken == "new")
        #expect(record.additionalFields["client_secret"] == "kept")
        #expect(record.additionalFields["dpop"] == "kept")
        #expect(record.subject == nil, "the subject belongs to the previous sign-in")
        // A renewal keeps everything.
        await store.save(StoredTokenSession(key: key, tokens: expiredTokens(), subject: "user-2", additionalFields: ["client_secret": "kept"]))
        _ = try await session.refresh()
        #expect(await store.load(key)?.subject == "user-2")
        #expect(await store.load(key)?.additionalFields["client_secret"] == "kept")
    }

    @Test func withoutTokensOrRefreshTokenTheUserMustSignIn() async throws {
        let provider = ScriptedProvider()
        let client = try provider.client()
        let empty = TokenSession(client: client)
        await #expect(throws: OAuth2Error.self) { try await empty.freshAccessToken() }
        do {
            _ = try await empty.freshAccessToken()
        } catch let error as OAuth2Error {
            #expect(error.code == .signInRequired)
            #expect(error.signInReason == .noTokens)
            #expect(error.requiresReauthorization)
        }
        let noRefresh = try await TokenSession(client: client, tokens: expiredTokens(refreshToken: nil))
        do {
            _ = try await noRefresh.freshAccessToken()
            Issue.record("an expired token without a refresh token was renewed")
        } catch let error as OAuth2Error {
            #expect(error.code == .signInRequired)
            #expect(error.signInReason == .noRefreshToken)
        }
        #expect(noRefresh.tokens?.accessToken == "at-0", "nothing is removed")
        #expect(provider.tokenRequestCount == 0)
    }

    @Test func aClientCredentialsSessionRequestsANewToken() async throws {
        let provider = ScriptedProvider()
        provider.onToken { form, count in tokenResponse("cc-\(count)-\(form["grant_type"] ?? "")") }
        let session = TokenSession(client: try provider.client(), options: .init(renewal: .clientCredentials(scopes: ["read"])))
        #expect(try await session.freshAccessToken() == "cc-1-client_credentials")
        #expect(provider.tokenForms.first?["scope"] == "read")
        #expect(try await session.refresh().accessToken == "cc-2-client_credentials")
    }

    @Test func aForcedRefreshAsksTheServer() async throws {
        let provider = ScriptedProvider()
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        #expect(try await session.refresh().accessToken == "at-1")
        #expect(try await session.freshAccessToken() == "at-1")
        #expect(provider.tokenRequestCount == 1)
    }

    @Test func theSameAccessTokenFromTheServerEndsTheRenewal() async throws {
        // A server may answer a refresh with the access token it already issued.
        let provider = ScriptedProvider()
        provider.onToken { _, _ in tokenResponse("at-0", refreshToken: "rt-0") }
        let session = try await TokenSession(client: try provider.client(), tokens: freshTokens("at-0"))
        #expect(try await session.refresh().accessToken == "at-0")
        #expect(provider.tokenRequestCount == 1)
    }
}
