import Foundation
import OAuth2
import OAuth2Internals
import OAuth2TestSupport
import Testing

/// Counts the requests a test's `fetch` makes, and can hold them until released.
final class FetchCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var held: [CheckedContinuation<Void, Never>] = []
    private var holding = false

    var requests: Int { lock.withLock { count } }
    var waiting: Int { lock.withLock { held.count } }

    func hold() { lock.withLock { holding = true } }

    func release() {
        let waiters = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            holding = false
            defer { held = [] }
            return held
        }
        for waiter in waiters { waiter.resume() }
    }

    /// A fetch that answers a token `token-<n>` expiring `lifetime` seconds after `clock`'s now.
    func fetch(_ clock: ManualDate, lifetime: TimeInterval = 600, failing: Bool = false) -> @Sendable () async throws -> DownstreamToken {
        { [self] in
            let n = lock.withLock { count += 1; return count }
            await withCheckedContinuation { continuation in
                let wait = lock.withLock { () -> Bool in
                    if holding { held.append(continuation) }
                    return holding
                }
                if !wait { continuation.resume() }
            }
            if failing { throw OAuth2Error(.invalidGrant, source: .server, message: "refused") }
            return DownstreamToken(token: "token-\(n)", tokenType: "Bearer", expiresAt: clock.now.addingTimeInterval(lifetime), issuedAt: clock.now)
        }
    }
}

@Suite("DownstreamTokens: cached per key, renewed early and once, dropped at session end, bounded")
struct DownstreamTokensTests {
    static func key(_ session: String? = "s1", scopes: [String] = ["read"]) -> DownstreamTokenKey {
        DownstreamTokenKey(session: session, grant: .tokenExchange, issuer: "https://as.example.com", clientID: "gw", audiences: ["orders"], scopes: scopes)
    }

    @Test("A fresh token is served from memory: one request for many calls")
    func memoryHit() async throws {
        let clock = ManualDate()
        let counter = FetchCounter()
        let cache = DownstreamTokens(configuration: .init(now: clock.function))
        for _ in 0..<5 {
            #expect(try await cache.token(for: Self.key(), fetch: counter.fetch(clock)).token == "token-1")
        }
        #expect(counter.requests == 1)
        let statistics = cache.statistics
        #expect(statistics.memoryHits == 4)
        #expect(statistics.storeHits == 0)
        #expect(statistics.requests == 1)
    }

    @Test("Another scope set is another token: a cache that ignored scopes would hand out the wrong one")
    func scopesAreNotShared() async throws {
        let clock = ManualDate()
        let counter = FetchCounter()
        let cache = DownstreamTokens(configuration: .init(now: clock.function))
        let read = try await cache.token(for: Self.key(scopes: ["read"]), fetch: counter.fetch(clock))
        let write = try await cache.token(for: Self.key(scopes: ["read", "write"]), fetch: counter.fetch(clock))
        #expect(read.token != write.token)
        #expect(try await cache.token(for: Self.key(scopes: ["read"]), fetch: counter.fetch(clock)) == read)
        #expect(counter.requests == 2)
    }

    @Test("Renewed once it expires within the skew of the injected clock, not before")
    func earlyRenewal() async throws {
        let clock = ManualDate()
        let counter = FetchCounter()
        let cache = DownstreamTokens(configuration: .init(renewalSkew: 60, now: clock.function))
        #expect(try await cache.token(for: Self.key(), fetch: counter.fetch(clock, lifetime: 600)).token == "token-1")
        clock.advance(by: 539)
        #expect(try await cache.token(for: Self.key(), fetch: counter.fetch(clock, lifetime: 600)).token == "token-1", "61 s left")
        clock.advance(by: 2)
        #expect(try await cache.token(for: Self.key(), fetch: counter.fetch(clock, lifetime: 600)).token == "token-2", "59 s left: renewed")
        #expect(counter.requests == 2)
    }

    @Test("A token without an expiry lives lifetimeWithoutExpiry")
    func lifetimeWithoutExpiry() throws {
        let issued = Date(timeIntervalSince1970: 1_000_000)
        let tokens = TokenSet(accessToken: "a", tokenType: .bearer, issuedAt: issued)
        #expect(DownstreamToken(tokens, lifetimeWithoutExpiry: 300).expiresAt == issued.addingTimeInterval(300))
        let answer = TokenExchangeResponse(issuedToken: "x", issuedTokenType: .accessToken, tokenType: "N_A", issuedAt: issued)
        let token = DownstreamToken(answer, lifetimeWithoutExpiry: 120)
        #expect(token.expiresAt == issued.addingTimeInterval(120))
        #expect(token.issuedTokenType == .accessToken)
    }

    @Test("100 concurrent callers on a cold key: one request, every caller gets its token")
    func singleFlight() async throws {
        let clock = ManualDate()
        let counter = FetchCounter()
        counter.hold()
        let cache = DownstreamTokens(configuration: .init(now: clock.function))
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 {
                group.addTask { try await cache.token(for: Self.key(), fetch: counter.fetch(clock)).token }
            }
            try await waitUntil("the request is held") { counter.waiting == 1 }
            counter.release()
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(tokens.count == 100)
        #expect(Set(tokens) == ["token-1"])
        #expect(counter.requests == 1)
    }

    @Test("A refused request reaches every waiting caller and caches nothing: the next call asks again")
    func failureIsNotCached() async throws {
        let clock = ManualDate()
        let counter = FetchCounter()
        let cache = DownstreamTokens(configuration: .init(now: clock.function))
        await #expect(throws: OAuth2Error.self) { try await cache.token(for: Self.key(), fetch: counter.fetch(clock, failing: true)) }
        #expect(try await cache.token(for: Self.key(), fetch: counter.fetch(clock)).token == "token-2")
        #expect(cache.memoryCount == 1)
    }

    @Test("Two processes over one store: the second reads the first's token under the lock, no second request")
    func sharedStore() async throws {
        let clock = ManualDate()
        let counter = FetchCounter()
        let store = MemoryDownstreamTokenStore(now: clock.function)
        let first = DownstreamTokens(store: store, configuration: .init(now: clock.function))
        let second = DownstreamTokens(store: store, configuration: .init(now: clock.function))
        #expect(try await first.token(for: Self.key(), fetch: counter.fetch(clock)).token == "token-1")
        #expect(try await second.token(for: Self.key(), fetch: counter.fetch(clock)).token == "token-1")
        #expect(counter.requests == 1)
        #expect(second.statistics.storeHits == 1)
        // Within the skew in the store too: renewed, once.
        clock.advance(by: 550)
        #expect(try await second.token(for: Self.key(), fetch: counter.fetch(clock)).token == "token-2")
        #expect(try await first.token(for: Self.key(), fetch: counter.fetch(clock)).token == "token-2")
        #expect(counter.requests == 2)
    }

    @Test("A session's end drops its tokens from the store and from every cache over it; other sessions and the service's own tokens stay")
    func sessionEnd() async throws {
        let clock = ManualDate()
        let counter = FetchCounter()
        let store = MemoryDownstreamTokenStore(now: clock.function)
        let replicaA = DownstreamTokens(store: store, configuration: .init(now: clock.function))
        let replicaB = DownstreamTokens(store: store, configuration: .init(now: clock.function))
        for cache in [replicaA, replicaB] {
            for key in [Self.key("s1"), Self.key("s1", scopes: ["write"]), Self.key("s2"), Self.key(nil)] {
                _ = try await cache.token(for: key, fetch: counter.fetch(clock))
            }
        }
        #expect(counter.requests == 4)
        #expect(store.count == 4)
        try await replicaA.endSession("s1")
        #expect(store.count == 2)
        #expect(replicaA.memoryCount == 2)
        #expect(replicaB.memoryCount == 2, "the other cache over the store heard of it")
        // Asked again, s1's token is a new one; s2's and the service's are the old ones.
        #expect(try await replicaB.token(for: Self.key("s1"), fetch: counter.fetch(clock)).token == "token-5")
        #expect(try await replicaB.token(for: Self.key("s2"), fetch: counter.fetch(clock)).token == "token-3")
        #expect(try await replicaB.token(for: Self.key(nil), fetch: counter.fetch(clock)).token == "token-4")
    }

    @Test("A renewal in flight when its session ends does not put its token back in memory")
    func endDuringRenewal() async throws {
        let clock = ManualDate()
        let counter = FetchCounter()
        counter.hold()
        let cache = DownstreamTokens(configuration: .init(now: clock.function))
        let pending = Task { try await cache.token(for: Self.key("s1"), fetch: counter.fetch(clock)) }
        try await waitUntil("the request is held") { counter.waiting == 1 }
        try await cache.endSession("s1")
        counter.release()
        _ = try await pending.value
        #expect(cache.memoryCount == 0)
    }

    @Test("Memory is bounded: beyond the capacity, expired tokens go first, then those expiring soonest")
    func memoryBound() async throws {
        let clock = ManualDate()
        let counter = FetchCounter()
        let cache = DownstreamTokens(configuration: .init(renewalSkew: 0, memoryCapacity: 3, now: clock.function))
        let lifetimes: [TimeInterval] = [10, 1000, 500, 2000]
        for (index, lifetime) in lifetimes.enumerated() {
            _ = try await cache.token(for: Self.key("s\(index)"), fetch: counter.fetch(clock, lifetime: lifetime))
        }
        #expect(cache.memoryCount == 3)
        // s0 (expiring soonest) went: asked again, it is fetched; the others are hits.
        let before = counter.requests
        for index in 1...3 { _ = try await cache.token(for: Self.key("s\(index)"), fetch: counter.fetch(clock)) }
        #expect(counter.requests == before)
        clock.advance(by: 600)  // s2 (500 s) has expired
        _ = try await cache.token(for: Self.key("s9"), fetch: counter.fetch(clock, lifetime: 5000))
        #expect(cache.memoryCount == 3)
        _ = try await cache.token(for: Self.key("s1"), fetch: counter.fetch(clock))
        _ = try await cache.token(for: Self.key("s3"), fetch: counter.fetch(clock))
        #expect(counter.requests == before + 1, "s1 and s3 stayed; the expired s2 went")
    }

    @Test("The memory store is bounded the same way")
    func storeBound() async throws {
        let clock = ManualDate()
        let store = MemoryDownstreamTokenStore(capacity: 2, now: clock.function)
        for (index, lifetime) in [TimeInterval(100), 10, 1000].enumerated() {
            try await store.save(
                DownstreamToken(token: "t\(index)", tokenType: "Bearer", expiresAt: clock.now.addingTimeInterval(lifetime), issuedAt: clock.now),
                for: Self.key("s\(index)"))
        }
        #expect(store.count == 2)
        #expect(try await store.load(Self.key("s1")) == nil, "the one expiring soonest went")
        #expect(try await store.load(Self.key("s0"))?.token == "t0")
        #expect(try await store.load(Self.key("s2"))?.token == "t2")
    }

    @Test("The memory store's lock lets one body run at a time per key")
    func storeLock() async throws {
        let store = MemoryDownstreamTokenStore()
        let inside = Locked(0)
        let most = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await store.withExclusiveAccess(to: Self.key()) {
                        let now = inside.withLock { count -> Int in
                            count += 1
                            return count
                        }
                        most.withLock { $0 = max($0, now) }
                        await Task.yield()
                        inside.withLock { $0 -= 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(most.withLock { $0 } == 1)
    }
}

/// Waits (within a generous bound, not a tight timeout) until `condition` holds.
private func waitUntil(_ what: String, _ condition: @Sendable () -> Bool) async throws {
    let end = ContinuousClock.now + .seconds(120)
    while !condition() {
        guard ContinuousClock.now < end else {
            Issue.record("timed out waiting: \(what)")
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}
