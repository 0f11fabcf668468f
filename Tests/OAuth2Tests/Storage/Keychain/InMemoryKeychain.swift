import Foundation
import OAuth2

/// The Keychain of an Apple device, in memory: what `KeychainItemStore` runs against on
/// Linux, where there is no Keychain. It answers as `SecItem*` does for generic-password
/// items — an item is identified by service, account and access group; adding one that
/// exists is `errSecDuplicateItem`; a query that matches nothing is `errSecItemNotFound`; a
/// query without an access group searches every group the app may use, an item added
/// without one goes to the app's first group; a group the app has no entitlement for is
/// `errSecMissingEntitlement`; synchronizable items match no query that does not ask for
/// them (none of the store's does).
///
/// `failures` makes the next calls of an operation answer a status (a locked device, a
/// refusal); `beforeAdd` runs just before an add, as another process would.
final class InMemoryKeychain: KeychainItems, @unchecked Sendable {
    enum Operation: Hashable, Sendable { case add, update, copy, delete }

    struct Stored: Hashable {
        var service: String
        var account: String
        var accessGroup: String
        var label: String
        var data: Data
        var accessibility: KeychainItem.Accessibility
        var synchronizable: Bool
    }

    /// The access groups of the app's entitlements; the first is where items go by default.
    let accessGroups: [String]
    private let lock = NSLock()
    private var stored: [Stored] = []
    private var failures: [Operation: [Int32]] = [:]
    private var calls: [Operation: Int] = [:]
    private var beforeAdd: (@Sendable (InMemoryKeychain) -> Void)?

    init(accessGroups: [String] = ["TEAM.com.example.app"]) { self.accessGroups = accessGroups }

    // MARK: - KeychainItems

    func add(_ item: KeychainItem) -> Int32 {
        let hook: (@Sendable (InMemoryKeychain) -> Void)? = lock.withLock { defer { beforeAdd = nil }; return beforeAdd }
        hook?(self)
        return lock.withLock {
            if let status = nextFailure(.add) { return status }
            guard let account = item.query.account else { return KeychainStatus.parameter }
            guard let group = group(item.query.accessGroup) else { return KeychainStatus.missingEntitlement }
            if stored.contains(where: { $0.service == item.query.service && $0.account == account && $0.accessGroup == group }) {
                return KeychainStatus.duplicateItem
            }
            stored.append(Stored(
                service: item.query.service, account: account, accessGroup: group, label: item.label, data: item.data,
                accessibility: item.accessibility, synchronizable: item.synchronizable))
            return KeychainStatus.success
        }
    }

    func update(_ query: KeychainQuery, data: Data) -> Int32 {
        lock.withLock {
            if let status = nextFailure(.update) { return status }
            if let status = refusal(query) { return status }
            let indices = stored.indices.filter { matches(stored[$0], query) }
            guard !indices.isEmpty else { return KeychainStatus.itemNotFound }
            for index in indices { stored[index].data = data }
            return KeychainStatus.success
        }
    }

    func copyMatching(_ query: KeychainQuery, returning: KeychainReturn) -> (status: Int32, matches: [KeychainMatch]) {
        lock.withLock {
            if let status = nextFailure(.copy) { return (status, []) }
            if let status = refusal(query) { return (status, []) }
            let found = stored.filter { matches($0, query) }
            guard let first = found.first else { return (KeychainStatus.itemNotFound, []) }
            switch returning {
            case .dataOfOne: return (KeychainStatus.success, [KeychainMatch(account: first.account, data: first.data)])
            case .accountsOfAll: return (KeychainStatus.success, found.map { KeychainMatch(account: $0.account) })
            }
        }
    }

    func delete(_ query: KeychainQuery) -> Int32 {
        lock.withLock {
            if let status = nextFailure(.delete) { return status }
            if let status = refusal(query) { return status }
            let before = stored.count
            stored.removeAll { matches($0, query) }
            return stored.count == before ? KeychainStatus.itemNotFound : KeychainStatus.success
        }
    }

    // MARK: - For the tests

    /// Every item, as the Keychain holds it.
    var items: [Stored] { lock.withLock { stored } }

    /// The one item of `service` and `account`, if any.
    func item(service: String, account: String) -> Stored? {
        lock.withLock { stored.first { $0.service == service && $0.account == account } }
    }

    /// Puts an item in place as another program (or an earlier version) would.
    func plant(service: String, account: String, accessGroup: String? = nil, data: Data, synchronizable: Bool = false) {
        lock.withLock {
            stored.append(Stored(
                service: service, account: account, accessGroup: accessGroup ?? accessGroups[0], label: "planted", data: data,
                accessibility: .afterFirstUnlockThisDeviceOnly, synchronizable: synchronizable))
        }
    }

    /// The next `count` calls of `operation` answer `status`.
    func fail(_ operation: Operation, with status: Int32, count: Int = 1) {
        lock.withLock { failures[operation, default: []] += Array(repeating: status, count: count) }
    }

    /// Runs `body` before the next add, as another process writing the same item would.
    func beforeNextAdd(_ body: @escaping @Sendable (InMemoryKeychain) -> Void) { lock.withLock { beforeAdd = body } }

    /// How many calls of `operation` were made.
    func count(_ operation: Operation) -> Int { lock.withLock { calls[operation, default: 0] } }

    // MARK: - Matching

    private func nextFailure(_ operation: Operation) -> Int32? {
        calls[operation, default: 0] += 1
        guard var queued = failures[operation], !queued.isEmpty else { return nil }
        let status = queued.removeFirst()
        failures[operation] = queued
        return status
    }

    /// The group an item goes to: the one asked for when the app may use it, else the first.
    private func group(_ asked: String?) -> String? {
        guard let asked else { return accessGroups.first }
        return accessGroups.contains(asked) ? asked : nil
    }

    private func refusal(_ query: KeychainQuery) -> Int32? {
        if let group = query.accessGroup, !accessGroups.contains(group) { return KeychainStatus.missingEntitlement }
        return nil
    }

    private func matches(_ item: Stored, _ query: KeychainQuery) -> Bool {
        item.service == query.service && !item.synchronizable
            && (query.account == nil || item.account == query.account)
            && (query.accessGroup == nil || item.accessGroup == query.accessGroup)
    }
}
