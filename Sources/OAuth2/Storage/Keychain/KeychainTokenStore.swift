#if canImport(Security)
import Foundation

// Apple platforms only, and not compiled by this project's CI (Linux): every method hands
// over to `KeychainItemStore` (compiled and tested on Linux) over `SecItemKeychain`.

/// A ``TokenStore`` in the Apple Keychain: one generic-password item per session, service
/// `swift-oauth2` (or the one given), account the JSON array `[issuer, clientID, account]`,
/// data a ``TokenDocument``.
///
/// Items are readable after the first unlock of the device and never leave it
/// (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`, not synchronizable).
/// ``withExclusiveAccess(to:_:)`` excludes tasks of this process only: the Keychain has no
/// lock that processes share.
///
/// Client registrations (``RegistrationStore``) are items of their own service
/// (``registrationService``), account the JSON array `[issuer, clientID]`, data a
/// registration document.
///
/// Errors carry the `OSStatus` in ``TokenStoreError/systemError``: a missing entitlement for
/// the access group is ``TokenStoreError/Code/unavailable``; a locked device and other
/// refusals are ``TokenStoreError/Code/backend``.
public final class KeychainTokenStore: TokenStore {
    /// The `kSecAttrService` of every item.
    public let service: String
    /// The `kSecAttrAccessGroup` of every item, to share them between apps of one team.
    public let accessGroup: String?
    let store: KeychainItemStore

    /// A store over the items of `service` (in `accessGroup`, when given).
    public init(service: String = "swift-oauth2", accessGroup: String? = nil) {
        self.service = service
        self.accessGroup = accessGroup
        store = KeychainItemStore(items: SecItemKeychain(), service: service, accessGroup: accessGroup)
    }

    /// The session stored for `key`, or `nil`; an item of an older layout is rewritten in
    /// the current one.
    ///
    /// - Throws: ``TokenStoreError``: ``TokenStoreError/Code/corrupt`` or
    ///   ``TokenStoreError/Code/unsupportedVersion`` for an unreadable item (left in place),
    ///   ``TokenStoreError/Code/conflict`` for an item that holds another key,
    ///   ``TokenStoreError/Code/unavailable`` or ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func load(_ key: TokenSessionKey) async throws -> StoredTokenSession? { try await store.load(key) }

    /// Writes `session`, keeping the members of the previous item this version does not know.
    ///
    /// - Throws: ``TokenStoreError/Code/unsupportedVersion`` when the item in place comes
    ///   from a newer, incompatible version; ``TokenStoreError/Code/conflict``;
    ///   ``TokenStoreError/Code/unavailable`` or ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func save(_ session: StoredTokenSession) async throws { try await store.save(session) }

    /// Deletes the item for `key`; a missing item is not an error.
    ///
    /// - Throws: ``TokenStoreError/Code/unavailable`` or ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func remove(_ key: TokenSessionKey) async throws { try await store.remove(key) }

    /// The keys of every item of ``service``, sorted.
    ///
    /// - Throws: ``TokenStoreError/Code/unavailable`` or ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func list() async throws -> [TokenSessionKey] { try await store.list() }

    /// Runs `body` holding this process's lock for `key`.
    ///
    /// - Throws: `CancellationError`, or what `body` throws.
    public func withExclusiveAccess<T: Sendable>(
        to key: TokenSessionKey, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await store.withExclusiveAccess(to: key, body)
    }
}

/// Client registrations in the Keychain: one generic-password item per registration, of
/// the service ``registrationService`` (so that ``list()``, which reads ``service``, never
/// sees them), account the JSON array `[issuer, clientID]`, data a registration document.
extension KeychainTokenStore: RegistrationStore {
    /// The `kSecAttrService` of registration items: ``service`` followed by `.registration`.
    public var registrationService: String { store.registrationService }

    /// The registration of `clientID` at `issuer`, or `nil`.
    ///
    /// A registration that an earlier version kept as a session item (account
    /// `.registration`) is written as a registration item here, and the old item removed.
    ///
    /// - Throws: ``TokenStoreError``: ``TokenStoreError/Code/corrupt`` or
    ///   ``TokenStoreError/Code/unsupportedVersion`` for an unreadable item (left in place),
    ///   ``TokenStoreError/Code/conflict``, ``TokenStoreError/Code/unavailable`` or
    ///   ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func loadRegistration(issuer: String, clientID: String) async throws -> ClientRegistration? {
        try await store.loadRegistration(issuer: issuer, clientID: clientID)
    }

    /// Writes `registration`, keeping the members of the previous item this version does not know.
    ///
    /// - Throws: ``TokenStoreError/Code/unsupportedVersion`` when the item in place comes
    ///   from a newer, incompatible version; ``TokenStoreError/Code/unavailable`` or
    ///   ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func saveRegistration(_ registration: ClientRegistration, issuer: String) async throws {
        try await store.saveRegistration(registration, issuer: issuer)
    }

    /// Deletes the registration item of `clientID` at `issuer` (and an item of an earlier
    /// version); a missing one is not an error.
    ///
    /// - Throws: ``TokenStoreError/Code/unavailable`` or ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func removeRegistration(issuer: String, clientID: String) async throws {
        try await store.removeRegistration(issuer: issuer, clientID: clientID)
    }

    /// The client ids with a registration item at `issuer`, sorted; items of an earlier
    /// version among them become registration items.
    ///
    /// - Throws: ``TokenStoreError/Code/unavailable`` or ``TokenStoreError/Code/backend`` with the `OSStatus`.
    public func registeredClientIDs(issuer: String) async throws -> [String] {
        try await store.registeredClientIDs(issuer: issuer)
    }
}
#endif
