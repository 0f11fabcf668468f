#if canImport(Security)
import Foundation
import Security

// Apple platforms only, and not compiled by this project's CI (Linux): each call maps one
// `KeychainItems` call onto its SecItem function, nothing more. The rules are in
// `KeychainItemStore`, which Linux compiles and tests against an in-memory Keychain.

/// The Keychain of Apple platforms, through the `SecItem` functions.
struct SecItemKeychain: KeychainItems {
    func add(_ item: KeychainItem) -> Int32 {
        var attributes = Self.attributes(item.query)
        attributes[kSecValueData as String] = item.data
        attributes[kSecAttrLabel as String] = item.label
        switch item.accessibility {
        case .afterFirstUnlockThisDeviceOnly:
            attributes[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        }
        attributes[kSecAttrSynchronizable as String] = item.synchronizable
        return SecItemAdd(attributes as CFDictionary, nil)
    }

    func update(_ query: KeychainQuery, data: Data) -> Int32 {
        SecItemUpdate(Self.attributes(query) as CFDictionary, [kSecValueData as String: data] as CFDictionary)
    }

    func copyMatching(_ query: KeychainQuery, returning: KeychainReturn) -> (status: Int32, matches: [KeychainMatch]) {
        var search = Self.attributes(query)
        switch returning {
        case .dataOfOne:
            search[kSecReturnData as String] = true
            search[kSecMatchLimit as String] = kSecMatchLimitOne
        case .accountsOfAll:
            search[kSecReturnAttributes as String] = true
            search[kSecMatchLimit as String] = kSecMatchLimitAll
        }
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if let data = result as? Data { return (status, [KeychainMatch(account: query.account, data: data)]) }
        let found = result as? [[String: Any]] ?? []
        return (status, found.map { KeychainMatch(account: $0[kSecAttrAccount as String] as? String) })
    }

    func delete(_ query: KeychainQuery) -> Int32 {
        SecItemDelete(Self.attributes(query) as CFDictionary)
    }

    private static func attributes(_ query: KeychainQuery) -> [String: Any] {
        var attributes: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: query.service,
        ]
        if let account = query.account { attributes[kSecAttrAccount as String] = account }
        if let accessGroup = query.accessGroup { attributes[kSecAttrAccessGroup as String] = accessGroup }
        return attributes
    }
}
#endif
