import Foundation

struct AccessTokenRecord: Sendable {
    let clientID: String
    let grantID: String
    let scopes: [String]
    let issuedAt: Date
    var expiresAt: Date
}
