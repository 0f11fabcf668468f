/// How an access token is presented in the `Authorization` header: `Bearer` (RFC 6750) or
/// `DPoP` (RFC 9449 §7.1).
public struct AccessTokenScheme: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The scheme's name as sent in challenges.
    public let rawValue: String
    /// Creates a scheme.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The name.
    public var description: String { rawValue }

    /// `Bearer`: whoever holds the token may use it.
    public static let bearer = AccessTokenScheme(rawValue: "Bearer")
    /// `DPoP`: the token is bound to a key, and each request carries a proof signed with it.
    public static let dpop = AccessTokenScheme(rawValue: "DPoP")
}
