import Foundation

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
    /// The resources (RFC 8707) the grant is for; empty when none was named.
    var resources: [String] = []
}
