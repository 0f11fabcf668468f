import Foundation

struct RefreshTokenRecord: Sendable {
    let clientID: String
    let grantID: String
    let scopes: [String]
    let issuedAt: Date
    let expiresAt: Date?
    /// Retired by rotation: presenting it again revokes the grant.
    var retired = false
}
