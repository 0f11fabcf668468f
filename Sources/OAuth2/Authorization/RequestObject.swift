import Foundation
import OAuth2Internals

/// A signed request object (JAR, RFC 9101; OpenID Connect Core §6): the authorization
/// request's parameters as the claims of a JWT, with `iss` (the client id), `aud` (the
/// authorization server's issuer), `iat`, `nbf`, a short `exp` and a unique `jti`, and the
/// header `typ: oauth-authz-req+jwt`.
public struct RequestObject: Sendable {
    /// The JOSE `typ` of a request object (RFC 9101 §10.8).
    public static let type = "oauth-authz-req+jwt"

    /// The authorization parameters, in order; a name given several times (`resource`)
    /// becomes an array claim.
    public var parameters: [(String, String)]
    /// `iss`: the client id (and `client_id`, when the parameters lack it).
    public var clientID: String
    /// `aud`: the authorization server's issuer identifier.
    public var audience: String
    /// `iat` and `nbf`.
    public var issuedAt: Date
    /// `exp`.
    public var expiresAt: Date
    /// `jti`.
    public var id: String

    /// A request object for `parameters`, valid for `lifetime` seconds.
    ///
    /// - Parameters:
    ///   - parameters: the authorization parameters, in order.
    ///   - clientID: `iss`, and `client_id` when the parameters lack it.
    ///   - audience: `aud`: the authorization server's issuer identifier.
    ///   - issuedAt: `iat` and `nbf`; now by default.
    ///   - lifetime: seconds from `issuedAt` to `exp` (300 by default).
    ///   - id: the `jti`; a fresh random one by default.
    public init(
        parameters: [(String, String)], clientID: String, audience: String, issuedAt: Date = Date(), lifetime: TimeInterval = 300,
        id: String? = nil
    ) {
        self.parameters = parameters
        self.clientID = clientID
        self.audience = audience
        self.issuedAt = issuedAt
        expiresAt = issuedAt.addingTimeInterval(lifetime)
        self.id = id ?? SecureRandom.token(byteCount: 16)
    }

    /// The claims set: the parameters (`max_age` as a number, as OpenID Connect defines it;
    /// `authorization_details` as the JSON array it holds, RFC 9396 §3), then the JWT claims,
    /// which no parameter can replace.
    public var claims: [String: JSONValue] {
        var claims: [String: JSONValue] = [:]
        for (name, value) in parameters {
            let claim: JSONValue
            switch name {
            case "max_age": claim = Int64(value).map(JSONValue.integer) ?? .string(value)
            case "authorization_details":
                claim = (try? JSONDecoder().decode(JSONValue.self, from: Data(value.utf8))).flatMap { $0.arrayValue != nil ? $0 : nil } ?? .string(value)
            default: claim = .string(value)
            }
            switch claims[name] {
            case nil: claims[name] = claim
            case .array(let values)?: claims[name] = .array(values + [claim])
            case let first?: claims[name] = .array([first, claim])
            }
        }
        if claims["client_id"] == nil { claims["client_id"] = .string(clientID) }
        let issued = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        claims["iss"] = .string(clientID)
        claims["aud"] = .string(audience)
        claims["iat"] = .integer(issued)
        claims["nbf"] = .integer(issued)
        claims["exp"] = .integer(Int64(expiresAt.timeIntervalSince1970.rounded(.down)))
        claims["jti"] = .string(id)
        return claims
    }

    /// The signed object, in compact form; its header holds `typ`, `alg` and the key's `kid`.
    ///
    /// - Throws: `JOSEError.Reason.invalidKey` when signing fails.
    public func signed(with key: JWSSigningKey) throws(JOSEError) -> String {
        try key.sign(claims: claims, header: ["typ": .string(Self.type)])
    }
}
