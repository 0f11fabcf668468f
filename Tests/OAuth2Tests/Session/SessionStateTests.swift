import Foundation
import Testing
@testable import OAuth2

/// What each of many sessions keeps: the key computed from the client and the account, and
/// the rarely used members of its state behind one reference that is dropped when empty.
@Suite struct SessionStateTests {
    @Test func theKeyIsTheClientsIssuerAndClientIDWithTheAccount() throws {
        let client = try OAuth2Client(
            metadata: ServerMetadata(issuer: URL(string: "https://as.example.com")!, tokenEndpoint: URL(string: "https://as.example.com/token")!),
            configuration: ClientConfiguration(clientID: "cli"))
        let session = TokenSession(client: client, account: "alice")
        #expect(session.key == TokenSessionKey(issuer: "https://as.example.com", clientID: "cli", account: "alice"))
        #expect(session.key == TokenSession.key(for: client, account: "alice"))
        #expect(TokenSession(client: client).key.account == "default")

        // Without an issuer in the metadata, the token endpoint names the server.
        let bare = try OAuth2Client(
            metadata: try ServerMetadata(fields: ["token_endpoint": .string("https://as.example.com/oauth/token")]),
            configuration: ClientConfiguration(clientID: "cli"))
        #expect(TokenSession(client: bare, account: "bob").key == TokenSessionKey(issuer: "https://as.example.com/oauth/token", clientID: "cli", account: "bob"))

        // A session whose client adopted another DPoP key keeps its key.
        let dpop = TokenSession(client: client.withDPoP(DPoPOptions(key: try DPoPKey.generate())), account: "carol")
        #expect(dpop.key == TokenSessionKey(issuer: "https://as.example.com", clientID: "cli", account: "carol"))
    }

    @Test func theUncommonMembersAreDroppedWhenAllAreEmpty() throws {
        var state = SessionState()
        #expect(state.rareParts == nil)
        state.backoff = nil
        #expect(state.rareParts == nil, "clearing what is not there makes nothing")

        let error = OAuth2Error(.temporarilyUnavailable, source: .server, message: "busy")
        let until = Date(timeIntervalSince1970: 1_000)
        state.backoff = SessionState.Backoff(until: until, error: error)
        #expect(state.backoff?.until == until)
        #expect(state.backoff?.error.code == .temporarilyUnavailable)
        let dpop = DPoPOptions(key: try DPoPKey.generate())
        state.adoptedDPoP = dpop
        #expect(state.adoptedDPoP?.key.thumbprint == dpop.key.thumbprint)

        state.backoff = nil
        #expect(state.backoff == nil)
        #expect(state.adoptedDPoP?.key.thumbprint == dpop.key.thumbprint, "clearing the back-off keeps the adopted key")
        #expect(state.rareParts != nil)
        state.adoptedDPoP = nil
        #expect(state.rareParts == nil)
    }

    @Test func aSubscriberIDIsNeverReused() {
        var state = SessionState()
        let (_, first) = AsyncStream.makeStream(of: TokenSessionEvent.self)
        state.nextSubscriberID &+= 1
        state.subscribers[state.nextSubscriberID] = first
        #expect(state.subscribers.count == 1)
        state.subscribers.removeValue(forKey: 1)
        #expect(state.subscribers.isEmpty)
        #expect(state.nextSubscriberID == 1, "the counter outlives the last subscriber")
        state.nextSubscriberID &+= 1
        #expect(state.nextSubscriberID == 2)
    }

    @Test func eventsReachSubscribersWhoCameAfterOthersLeft() async throws {
        let client = try OAuth2Client(
            metadata: ServerMetadata(issuer: URL(string: "https://as.example.com")!, tokenEndpoint: URL(string: "https://as.example.com/token")!),
            configuration: ClientConfiguration(clientID: "cli"))
        let session = try await TokenSession(client: client, tokens: TokenSet(accessToken: "at-0"))
        do {
            _ = session.events()  // dropped at once: its termination removes it
        }
        #expect(session.state.withLock { $0.subscribers.isEmpty })
        let late = session.events()
        #expect(session.state.withLock { Array($0.subscribers.keys) } == [2])
        try await session.signIn { _ in TokenSet(accessToken: "at-1") }
        var iterator = late.makeAsyncIterator()
        guard case .signedIn(let tokens) = await iterator.next() else {
            Issue.record("expected signedIn")
            return
        }
        #expect(tokens.accessToken == "at-1")
    }

    @Test func whatEverySessionKeepsStaysSmall() {
        // Each of many sessions pays for these (64-bit platforms): see
        // Benchmarks/Compare/profiling.md, "Memory of 100,000 sessions".
        #expect(MemoryLayout<TokenExpiry>.size == 16)
        #expect(MemoryLayout<SessionState>.size <= 192)
    }
}
