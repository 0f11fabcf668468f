import Foundation

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
    /// The resources (RFC 8707) the authorization request named.
    var resources: [String] = []
}
