import Foundation

/// Where dynamic client registrations (RFC 7591) are kept between runs: the client secret
/// and the registration access token belong where the tokens are (the keyring, a 0600 or
/// encrypted file, an encrypted database row), never in a configuration file.
///
/// A registration is a record of its own kind, keyed by the issuer it was registered with
/// and its client id — not a session: it never appears in ``TokenStore/list()``. The
/// protocol is apart from ``TokenStore`` so that a store of sessions written for one
/// program need not keep registrations too. Every store this library ships conforms:
/// ``MemoryTokenStore``, ``FileTokenStore``, `SecretServiceTokenStore`,
/// `KeychainTokenStore` and `PostgresTokenStore`.
///
/// ```swift
/// let registration = try await registrar.register(metadata)
/// try await store.saveRegistration(registration, issuer: registrar.issuer)
/// // a later run:
/// let kept = try await store.loadRegistration(issuer: registrar.issuer, clientID: clientID)
/// ```
///
/// Earlier versions kept a registration as a session record under the account
/// `.registration`. The stores of this library read such a record, write it again as a
/// registration and remove the old record, the first time it is loaded.
///
/// Every method is safe to call concurrently. The stores throw what they throw for
/// sessions (``TokenStoreError``, `PostgresTokenStoreError`).
public protocol RegistrationStore: Sendable {
    /// The registration of `clientID` at `issuer`, or `nil` when none is stored.
    ///
    /// - Throws: what the store throws; ``TokenStoreError/Code/corrupt`` for a record that
    ///   holds no readable registration.
    func loadRegistration(issuer: String, clientID: String) async throws -> ClientRegistration?

    /// Saves `registration`, replacing the one stored for the same issuer and client id.
    ///
    /// - Parameters:
    ///   - registration: the registration to save, its client secret and registration
    ///     access token included.
    ///   - issuer: the issuer the client was registered with (``ClientRegistrar/issuer``).
    func saveRegistration(_ registration: ClientRegistration, issuer: String) async throws

    /// Removes the registration of `clientID` at `issuer`; removing a missing one is not an
    /// error.
    func removeRegistration(issuer: String, clientID: String) async throws

    /// The client ids with a stored registration at `issuer`, sorted.
    func registeredClientIDs(issuer: String) async throws -> [String]
}
