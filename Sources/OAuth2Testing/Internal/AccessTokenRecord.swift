import Foundation

struct AccessTokenRecord: Sendable {
    let clientID: String
    let grantID: String
    let scopes: [String]
    let issuedAt: Date
    var expiresAt: Date
    /// The resources (RFC 8707) the token is for: its audience. Empty: the client's.
    var resources: [String] = []
}
