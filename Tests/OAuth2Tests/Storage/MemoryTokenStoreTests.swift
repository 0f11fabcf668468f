import Foundation
import Testing
@testable import OAuth2

@Suite struct MemoryTokenStoreTests {
    @Test func keepsListsAndForgetsSessions() async throws {
        let store = MemoryTokenStore()
        let alice = TokenSessionKey(issuer: "https://b.example", clientID: "cli", account: "alice")
        let bob = TokenSessionKey(issuer: "https://a.example", clientID: "cli", account: "bob")
        await store.save(sampleSession(alice))
        await store.save(sampleSession(bob))
        #expect(await store.load(alice) == sampleSession(alice))
        #expect(await store.list() == [bob, alice], "sorted by issuer first")
        await store.remove(alice)
        #expect(await store.load(alice) == nil)
        #expect(await store.list() == [bob])
    }

    @Test func keepsTheSameAccountOfTwoClientsApart() async throws {
        let store = MemoryTokenStore()
        let first = TokenSessionKey(issuer: "https://a.example", clientID: "one", account: "alice")
        let otherClient = TokenSessionKey(issuer: "https://a.example", clientID: "two", account: "alice")
        let otherIssuer = TokenSessionKey(issuer: "https://b.example", clientID: "one", account: "alice")
        await store.save(sampleSession(first, accessToken: "at-1"))
        await store.save(sampleSession(otherClient, accessToken: "at-2"))
        await store.save(sampleSession(otherIssuer, accessToken: "at-3"))
        #expect(await store.load(first)?.tokens.accessToken == "at-1")
        #expect(await store.load(otherClient)?.tokens.accessToken == "at-2")
        #expect(await store.load(otherIssuer)?.tokens.accessToken == "at-3")
        #expect(await store.load(TokenSessionKey(issuer: "https://a.example", clientID: "one", account: "bob")) == nil)
        #expect(await store.list() == [first, otherClient, otherIssuer])
        #expect(await store.clientCount == 3)

        await store.save(sampleSession(first, accessToken: "at-4"))
        #expect(await store.load(first)?.tokens.accessToken == "at-4", "a save replaces the record")
        #expect(await store.list().count == 3)
    }

    @Test func theLastRemovalOfAClientDropsItsGroup() async throws {
        let store = MemoryTokenStore()
        let alice = TokenSessionKey(issuer: "https://a.example", clientID: "cli", account: "alice")
        let bob = TokenSessionKey(issuer: "https://a.example", clientID: "cli", account: "bob")
        await store.save(sampleSession(alice))
        await store.save(sampleSession(bob))
        #expect(await store.clientCount == 1)
        await store.remove(alice)
        #expect(await store.clientCount == 1)
        await store.remove(TokenSessionKey(issuer: "https://z.example", clientID: "cli", account: "bob"))  // missing: no error
        await store.remove(bob)
        #expect(await store.clientCount == 0)
        #expect(await store.list().isEmpty)
        await store.remove(bob)  // again: no error
        #expect(await store.load(bob) == nil)
    }

    @Test func exclusiveAccessRunsOneBodyAtATime() async throws {
        let store = MemoryTokenStore()
        let key = TokenSessionKey(issuer: "https://a.example", clientID: "cli")
        let occupancy = Occupancy()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    try await store.withExclusiveAccess(to: key) {
                        await occupancy.enter()
                        try await Task.sleep(nanoseconds: 1_000_000)
                        await occupancy.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(await occupancy.maximum == 1)
    }
}
