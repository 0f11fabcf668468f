import Foundation

/// The four Keychain calls a Keychain store makes — `SecItemAdd`, `SecItemUpdate`,
/// `SecItemCopyMatching`, `SecItemDelete` — over generic-password items described by plain
/// Swift values, each answering an `OSStatus`.
///
/// ``KeychainItemStore`` holds every rule of the Keychain stores (the items' attributes,
/// their accounts, status codes to ``TokenStoreError``, migration of older records) and
/// reaches the Keychain only through this protocol, so that Linux compiles and tests it
/// against an in-memory Keychain. On Apple platforms `SecItemKeychain` (the only
/// `#if canImport(Security)` code of the store) maps each call onto its `SecItem` function.
///
/// A conforming type behaves as the Keychain does: an item is identified by its service,
/// account and access group; ``add(_:)`` of an item that exists answers
/// ``KeychainStatus/duplicateItem``; a query that matches nothing answers
/// ``KeychainStatus/itemNotFound``. The calls may block (the Keychain waits for its daemon):
/// the store makes them off the cooperative thread pool.
package protocol KeychainItems: Sendable {
    /// Adds `item` (`SecItemAdd`).
    func add(_ item: KeychainItem) -> Int32
    /// Replaces the data of the items `query` matches (`SecItemUpdate`).
    func update(_ query: KeychainQuery, data: Data) -> Int32
    /// The items `query` matches (`SecItemCopyMatching`): the data of one, or the accounts
    /// of all.
    func copyMatching(_ query: KeychainQuery, returning: KeychainReturn) -> (status: Int32, matches: [KeychainMatch])
    /// Deletes the items `query` matches (`SecItemDelete`).
    func delete(_ query: KeychainQuery) -> Int32
}

/// Which generic-password items a Keychain call concerns: `kSecClassGenericPassword`, the
/// service, the account (every account when `nil`) and the access group (the app's default
/// groups when `nil`). Synchronizable items never match (the Keychain's default).
package struct KeychainQuery: Sendable, Hashable {
    /// `kSecAttrService`.
    package var service: String
    /// `kSecAttrAccount`; `nil` matches every account.
    package var account: String?
    /// `kSecAttrAccessGroup`; `nil` leaves it out.
    package var accessGroup: String?

    /// A query.
    package init(service: String, account: String?, accessGroup: String?) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
    }
}

/// A generic-password item to add: its identity, label, data and protection.
package struct KeychainItem: Sendable, Hashable {
    /// When the item can be read (`kSecAttrAccessible`).
    package enum Accessibility: Sendable, Hashable {
        /// `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`: after the first unlock since
        /// the device started (so that background tasks can refresh tokens), never in a
        /// backup restored on another device.
        case afterFirstUnlockThisDeviceOnly
    }

    /// Service, account and access group.
    package var query: KeychainQuery
    /// `kSecAttrLabel`: what Keychain Access shows; never a secret.
    package var label: String
    /// `kSecValueData`.
    package var data: Data
    /// `kSecAttrAccessible`.
    package var accessibility: Accessibility
    /// `kSecAttrSynchronizable`: whether iCloud Keychain copies the item to the user's other
    /// devices.
    package var synchronizable: Bool

    /// An item.
    package init(query: KeychainQuery, label: String, data: Data, accessibility: Accessibility, synchronizable: Bool) {
        self.query = query
        self.label = label
        self.data = data
        self.accessibility = accessibility
        self.synchronizable = synchronizable
    }
}

/// What ``KeychainItems/copyMatching(_:returning:)`` returns.
package enum KeychainReturn: Sendable, Hashable {
    /// The data of the one item the query names (`kSecReturnData`, `kSecMatchLimitOne`).
    case dataOfOne
    /// The account of every item the query matches (`kSecReturnAttributes`,
    /// `kSecMatchLimitAll`).
    case accountsOfAll
}

/// An item that ``KeychainItems/copyMatching(_:returning:)`` found: its data, or its account.
package struct KeychainMatch: Sendable, Hashable {
    /// `kSecAttrAccount`, for ``KeychainReturn/accountsOfAll``.
    package var account: String?
    /// `kSecValueData`, for ``KeychainReturn/dataOfOne``.
    package var data: Data?

    /// A match.
    package init(account: String? = nil, data: Data? = nil) {
        self.account = account
        self.data = data
    }
}

/// The `OSStatus` codes the Keychain stores tell apart (Security's `SecBase.h`; Linux has no
/// Security framework to take them from).
package enum KeychainStatus {
    /// `errSecSuccess`.
    package static let success: Int32 = 0
    /// `errSecParam`: the query is malformed.
    package static let parameter: Int32 = -50
    /// `errSecUserCanceled`: the user cancelled an authentication the item asked for.
    package static let userCanceled: Int32 = -128
    /// `errSecNotAvailable`: no Keychain is available.
    package static let notAvailable: Int32 = -25291
    /// `errSecAuthFailed`: the user name or passphrase was wrong.
    package static let authFailed: Int32 = -25293
    /// `errSecDuplicateItem`: ``KeychainItems/add(_:)`` of an item that exists.
    package static let duplicateItem: Int32 = -25299
    /// `errSecItemNotFound`: the query matches no item.
    package static let itemNotFound: Int32 = -25300
    /// `errSecInteractionNotAllowed`: the device is locked (not unlocked since it started).
    package static let interactionNotAllowed: Int32 = -25308
    /// `errSecMissingEntitlement`: the app may not use the access group (or any Keychain:
    /// an unsigned command-line tool on iOS).
    package static let missingEntitlement: Int32 = -34018
}
