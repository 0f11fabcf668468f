import Foundation
import OAuth2JOSE

/// Everything the provider remembers, behind one lock.
struct ProviderState: Sendable {
    var clients: [String: TestProvider.Client]
    var users: [String: TestProvider.User]
    var autoApprovedUser: String?
    var lifetimes: TestProvider.Lifetimes
    /// Published keys, oldest first; the last one signs.
    var keys: [JWSSigningKey]

    var grants: [String: GrantRecord] = [:]
    var codes: [String: CodeRecord] = [:]
    var accessTokens: [String: AccessTokenRecord] = [:]
    var refreshTokens: [String: RefreshTokenRecord] = [:]
    /// By device code.
    var devices: [String: DeviceRecord] = [:]
    /// Normalized user code → device code.
    var userCodes: [String: String] = [:]
    /// Active browser sessions: id → username.
    var sessions: [String: String] = [:]
    /// The logout tokens sent to clients' back-channel logout URIs, oldest first.
    var backChannelLogoutDeliveries: [TestProvider.BackChannelLogoutDelivery] = []
    /// The identity assertion grant's options and used `jti`s.
    var identityAssertions = IdentityAssertionState()

    /// Clients read from Client ID Metadata Documents (they are in ``clients`` too): URL →
    /// when to fetch the document again.
    var clientMetadataDocumentExpiries: [String: Date] = [:]
    var clientMetadataDocumentRefusals: [TestProvider.ClientMetadataDocumentRefusal] = []
    /// Scripted step-up: the scopes each coming sign-in withholds, in order.
    var withheldScopes: [Set<String>] = []

    var failures: [TestProvider.Endpoint: [TestProvider.Failure]] = [:]
    var counts: [TestProvider.Endpoint: Int] = [:]

    var signingKey: JWSSigningKey { keys[keys.count - 1] }

    /// Revokes a grant and every token issued from it.
    mutating func revokeGrant(_ id: String) {
        grants[id] = nil
        accessTokens = accessTokens.filter { $0.value.grantID != id }
        refreshTokens = refreshTokens.filter { $0.value.grantID != id }
    }

    /// Forgets codes and device authorizations that expired a while ago (a used code is kept
    /// until then, to recognise its reuse).
    mutating func prune(now: Date) {
        let horizon = now.addingTimeInterval(-600)
        codes = codes.filter { $0.value.expiresAt > horizon }
        for (deviceCode, record) in devices where record.expiresAt <= horizon {
            devices[deviceCode] = nil
            userCodes[TestProvider.normalizedUserCode(record.userCode)] = nil
        }
        accessTokens = accessTokens.filter { $0.value.expiresAt > horizon }
    }

    func user(named username: String?) -> TestProvider.User? {
        username.flatMap { users[$0] }
    }
}
