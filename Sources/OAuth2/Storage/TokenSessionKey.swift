import Foundation

/// Names one signed-in identity: the issuer, the client and the account (OktaOidc's
/// composite key). Several sessions — accounts, tenants, clients — live side by side in
/// one store under different keys.
public struct TokenSessionKey: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The authorization server's issuer identifier.
    public var issuer: String
    /// The client identifier.
    public var clientID: String
    /// The account within that client: a profile name, a user name, or `default`.
    public var account: String

    /// Creates a key.
    public init(issuer: String, clientID: String, account: String = "default") {
        self.issuer = issuer
        self.clientID = clientID
        self.account = account
    }

    /// `account@clientID (issuer)`.
    public var description: String { "\(account)@\(clientID) (\(issuer))" }
}
