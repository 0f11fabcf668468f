import Foundation
import Testing
@testable import OAuth2

@Suite struct MemoryTokenStoreTests {
    @Test func keepsListsAndForgetsSessions() async throws {
        let store = MemoryTokenStore()
        let alice = SessionKey(issuer: "https://b.example", clientID: "cli", account: "alice")
        let bob = SessionKey(issuer: "https://a.example", clientID: "cli", account: "bob")
        await store.save(sampleSession(alice))
        await store.save(sampleSession(bob))
        #expect(await store.load(alice) == sampleSession(alice))
        #expect(await store.list() == [bob, alice], "sorted by issuer first")
        await store.remove(alice)
        #expect(await store.load(alice) == nil)
        #expect(await store.list() == [bob])
    }

    @Test func exclusiveAccessRunsOneBodyAtATime() async throws {
        let store = MemoryTokenStore()
        let key = SessionKey(issuer: "https://a.example", clientID: "cli")
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
