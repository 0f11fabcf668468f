import Foundation
import OAuth2Internals
import Testing
@testable import OAuth2

/// A memory store whose changes "elsewhere" the test makes: it writes or removes a record
/// behind the session's back and notifies the observers, as a shared store would.
private final class SharedMemoryStore: TokenStoreChangeObserving, Sendable {
    let records = MemoryTokenStore()
    private let observers = Locked<[UInt64: (TokenSessionKey, @Sendable (TokenStoreChange) -> Void)]>([:])
    private let nextID = Locked<UInt64>(0)

    /// How many times `load` was called.
    let loads = Locked(0)

    func load(_ key: TokenSessionKey) async throws -> StoredTokenSession? {
        loads.withLock { $0 += 1 }
        return try await records.load(key)
    }
    func save(_ session: StoredTokenSession) async throws { try await records.save(session) }
    func remove(_ key: TokenSessionKey) async throws { try await records.remove(key) }
    func list() async throws -> [TokenSessionKey] { try await records.list() }
    func withExclusiveAccess<T: Sendable>(to key: TokenSessionKey, _ body: @Sendable () async throws -> T) async throws -> T {
        try await records.withExclusiveAccess(to: key, body)
    }

    func observeChanges(of key: TokenSessionKey, _ handler: @escaping @Sendable (TokenStoreChange) -> Void) -> TokenStoreObservation {
        let id = nextID.withLock { id in id += 1; return id }
        observers.withLock { $0[id] = (key, handler) }
        return TokenStoreObservation { [weak self] in self?.observers.withLock { $0[id] = nil } }
    }

    var observerCount: Int { observers.withLock { $0.count } }

    /// Another replica's write (`session`) or removal (`nil`) of `key`, then its notification.
    func changeElsewhere(_ key: TokenSessionKey, to session: StoredTokenSession?) async throws {
        if let session { try await records.save(session) } else { try await records.remove(key) }
        for (observed, handler) in observers.withLock({ Array($0.values) }) where observed == key { handler(.recordChanged) }
    }

    /// Another replica's write (`session`) or removal (`nil`) of `key` that nobody heard of,
    /// then the store's word that it may have missed changes (it reconnected).
    func changeUnheard(_ key: TokenSessionKey, to session: StoredTokenSession?) async throws {
        if let session { try await records.save(session) } else { try await records.remove(key) }
        for (_, handler) in observers.withLock({ Array($0.values) }) { handler(.changesMayHaveBeenMissed) }
    }
}

@Suite("Session on a store that hears of changes made elsewhere")
struct SessionStoreChangeTests {
    static func fresh(_ access: String) -> TokenSet {
        TokenSet(accessToken: access, refreshToken: "rt-\(access)", expiresAt: Date().addingTimeInterval(3600))
    }

    @Test("Tokens renewed elsewhere are adopted without a request; a removal elsewhere signs the session out")
    func adoptsAndSignsOut() async throws {
        let transport = StubTransport(status: 500, json: "{}")  // any request would fail the test
        let store = SharedMemoryStore()
        let session = try await TokenSession(client: Fixtures.client(transport), tokens: Self.fresh("at-1"), store: store)
        let seen = Locked<[TokenSessionEvent]>([])
        let events = session.events()  // subscribed now, before any change
        let listening = Task { for await event in events { seen.withLock { $0.append(event) } } }
        defer { listening.cancel() }
        #expect(try await session.freshAccessToken() == "at-1")

        var record = try #require(try await store.load(session.key))
        record.tokens = Self.fresh("at-2")
        try await store.changeElsewhere(session.key, to: record)
        try await eventually { try await session.freshAccessToken() == "at-2" }
        try await eventually { seen.withLock { $0.contains { if case .refreshed(let tokens) = $0 { tokens.accessToken == "at-2" } else { false } } } }

        try await store.changeElsewhere(session.key, to: nil)
        try await eventually { session.tokens == nil }
        let error = await #expect(throws: OAuth2Error.self) { try await session.freshAccessToken() }
        #expect(error?.code == .signInRequired)
        try await eventually { seen.withLock { $0.contains { if case .signedOut(let error) = $0 { error?.signInReason == .signedOutElsewhere } else { false } } } }
        #expect(transport.sent.isEmpty)
    }

    @Test("A notification of the session's own write changes nothing; the observation ends with the session")
    func ownWritesAndLifetime() async throws {
        let store = SharedMemoryStore()
        var session: TokenSession? = try await TokenSession(client: Fixtures.client(StubTransport(status: 500, json: "{}")), tokens: Self.fresh("at-1"), store: store)
        #expect(store.observerCount == 1)
        let key = try #require(session?.key)
        let record = try await store.load(key)
        let before = store.loads.withLock { $0 }
        try await store.changeElsewhere(key, to: record)
        // The session read its record again (one load), and found its own tokens there.
        try await eventually { store.loads.withLock { $0 } > before }
        #expect(try await session?.freshAccessToken() == "at-1")
        #expect(store.loads.withLock { $0 } == before + 1)
        session = nil
        #expect(store.observerCount == 0)
    }

    @Test("After the store may have missed changes, nothing is read at once; the next caller's renewal reads the record under the lock, with no server request")
    func missedChangesAreReadBeforeTheNextAnswer() async throws {
        let transport = StubTransport(status: 500, json: "{}")  // any request would fail the test
        let store = SharedMemoryStore()
        let session = try await TokenSession(client: Fixtures.client(transport), tokens: Self.fresh("at-1"), store: store)
        var record = try #require(try await store.load(session.key))
        record.tokens = Self.fresh("at-2")
        let before = store.loads.withLock { $0 }
        try await store.changeUnheard(session.key, to: record)
        #expect(store.loads.withLock { $0 } == before, "no read until the session is used")
        #expect(try await session.freshAccessToken() == "at-2")
        #expect(store.loads.withLock { $0 } == before + 1)
        #expect(try await session.freshAccessToken() == "at-2", "fresh again: answered from memory")
        #expect(store.loads.withLock { $0 } == before + 1)

        // A removal nobody heard of: the next caller finds the record gone, and is signed out.
        try await store.changeUnheard(session.key, to: nil)
        let error = try await #require(throws: OAuth2Error.self) { try await session.freshAccessToken() }
        #expect(error.signInReason == .signedOutElsewhere)
        #expect(transport.sent.isEmpty)
    }

    /// Waits until `condition` holds (a watchdog of 30 s for hangs, not a timing assumption).
    func eventually(_ condition: @Sendable () async throws -> Bool) async throws {
        let end = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < end {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        Issue.record("the condition never held")
    }
}
