import Foundation
import OAuth2JOSE

/// An authorization: one user's (or client's) consent to a client, from which codes, access
/// and refresh tokens descend. Revoking it revokes every token of the family.
struct GrantRecord: Sendable {
    let id: String
    let clientID: String
    /// `nil` for client credentials.
    let username: String?
    let subject: String?
    let scopes: [String]
    let authTime: Date?
    /// The browser session (authorization code grants only).
    let sessionID: String?
    /// The authentication context class of the sign-in (the first `acr_values` asked for).
    var acr: String? = nil
}

struct CodeRecord: Sendable {
    let clientID: String
    let redirectURI: String
    let challenge: String
    let scopes: [String]
    let nonce: String?
    let username: String
    let authTime: Date
    let sessionID: String
    /// The first of the request's `acr_values`: the provider claims to have met it.
    let acr: String?
    let expiresAt: Date
    /// Set at the first redemption attempt: a code is good for one try.
    var used = false
    /// The grant the first successful redemption created (revoked when the code comes back).
    var grantID: String?
}

struct AccessTokenRecord: Sendable {
    let clientID: String
    let grantID: String
    let scopes: [String]
    let issuedAt: Date
    var expiresAt: Date
}

struct RefreshTokenRecord: Sendable {
    let clientID: String
    let grantID: String
    let scopes: [String]
    let issuedAt: Date
    let expiresAt: Date?
    /// Retired by rotation: presenting it again revokes the grant.
    var retired = false
}

struct DeviceRecord: Sendable {
    enum Status: Sendable {
        case pending
        case approved(username: String, at: Date)
        case denied
    }

    let clientID: String
    let userCode: String
    let scopes: [String]
    let expiresAt: Date
    var interval: Duration
    var lastPoll: Date?
    var status: Status = .pending
}

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
