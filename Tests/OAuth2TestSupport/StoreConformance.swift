import Foundation
import OAuth2

/// The one store test suite: what every ``TokenStore`` must do, checked through the protocol
/// only. Each store's test target runs it against its store (memory, file, keyring,
/// PostgreSQL) and expects no failure:
///
/// ```swift
/// let failures = await StoreConformance.run(store)
/// #expect(failures.isEmpty, "\(failures)")
/// ```
///
/// It works under keys of its own (a random issuer), so it can run beside other tests on a
/// shared store, and removes what it wrote. (No `Testing` here: this target is also built by
/// the benchmarks package.)
public enum StoreConformance {
    /// Runs every check against `store`; returns what failed, one line each.
    public static func run(_ store: any TokenStore) async -> [String] {
        var failures: [String] = []
        func check(_ condition: Bool, _ what: String) { if !condition { failures.append(what) } }
        let issuer = "https://conformance-\(UUID().uuidString.lowercased()).example.com"
        let alice = TokenSessionKey(issuer: issuer, clientID: "client-1", account: "alice")
        let bob = TokenSessionKey(issuer: issuer, clientID: "client-1", account: "bob")
        let otherClient = TokenSessionKey(issuer: issuer, clientID: "client-2", account: "alice")
        do {
            check(try await store.load(alice) == nil, "a key never saved loads as nil")
            let first = record(alice, access: "at-1")
            try await store.save(first)
            check(try await store.load(alice) == first, "a record reads back as written (tokens, subject, date, unknown members)")
            let second = record(alice, access: "at-2")
            try await store.save(second)
            check(try await store.load(alice) == second, "a second save replaces the first")
            check(try await store.load(otherClient) == nil, "another client's key is another record")
            try await store.save(record(bob, access: "at-bob"))
            try await store.save(record(otherClient, access: "at-other"))
            let listed = Set(try await store.list().filter { $0.issuer == issuer })
            check(listed == [alice, bob, otherClient], "list names every saved key (got \(listed.count))")

            // The exclusive lock: a read-change-write inside it; no two bodies of one key at once.
            let value = try await store.withExclusiveAccess(to: alice) { () async throws -> String? in
                var record = try await store.load(alice)
                record?.tokens.accessToken = "at-3"
                if let record { try await store.save(record) }
                return record?.tokens.accessToken
            }
            check(value == "at-3", "withExclusiveAccess returns its body's value")
            check(try await store.load(alice)?.tokens.accessToken == "at-3", "a write inside the lock is kept")
            let inside = Counter()
            let overlapped = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await store.withExclusiveAccess(to: alice) {
                            let alone = inside.enter()
                            await Task.yield()
                            try await Task.sleep(for: .milliseconds(2))
                            inside.leave()
                            return !alone
                        }
                    }
                }
                return try await group.reduce(false) { $0 || $1 }
            }
            check(!overlapped, "two bodies of withExclusiveAccess for one key never run at once")
            let thrown = await {
                do {
                    _ = try await store.withExclusiveAccess(to: bob) { () async throws -> Int in throw Marker() }
                    return false
                } catch { return error is Marker }
            }()
            check(thrown, "an error thrown by the body comes out unchanged")
            let afterThrow = try await store.withExclusiveAccess(to: bob) { 1 }
            check(afterThrow == 1, "the lock is free again after a body threw")

            try await store.remove(alice)
            check(try await store.load(alice) == nil, "a removed record loads as nil")
            check(try await store.load(bob) != nil, "removing one key leaves the others")
            try await store.remove(alice)  // a missing record: not an error
        } catch {
            failures.append("unexpected error: \(error)")
        }
        for key in [alice, bob, otherClient] { try? await store.remove(key) }
        return failures
    }

    /// A record with every member set, dates in whole seconds (stores may keep microseconds).
    public static func record(_ key: TokenSessionKey, access: String) -> StoredTokenSession {
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        return StoredTokenSession(
            key: key,
            tokens: TokenSet(
                accessToken: access, refreshToken: "rt-\(access)", idToken: "id-\(access)", expiresAt: now.addingTimeInterval(3600),
                scopes: ["openid", "read"], issuedAt: now),
            subject: "subject-\(key.account)", updatedAt: now,
            additionalFields: ["app_member": .string("kept"), "nested": .object(["n": .integer(1)])])
    }

    private struct Marker: Error {}

    /// How many bodies are inside the lock.
    private final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        /// Enters; `true` when no other body was inside.
        func enter() -> Bool { lock.withLock { count += 1; return count == 1 } }
        func leave() { lock.withLock { count -= 1 } }
    }
}
