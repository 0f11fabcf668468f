import Foundation

/// Members every claims set may carry (OIDC Core §5.1), read from the raw claims.
public protocol StandardClaims {
    /// The raw claims set, every member as sent (aggregated and distributed claims'
    /// `_claim_names` and `_claim_sources` included).
    var claims: [String: JSONValue] { get }
}

extension StandardClaims {
    /// A claim by name.
    public subscript(claim name: String) -> JSONValue? { claims[name] }
    /// `name`
    public var name: String? { claims["name"]?.stringValue }
    /// `given_name`
    public var givenName: String? { claims["given_name"]?.stringValue }
    /// `family_name`
    public var familyName: String? { claims["family_name"]?.stringValue }
    /// `preferred_username`
    public var preferredUsername: String? { claims["preferred_username"]?.stringValue }
    /// `email`
    public var email: String? { claims["email"]?.stringValue }
    /// `email_verified`
    public var emailVerified: Bool? { claims["email_verified"]?.boolValue }
    /// `picture`
    public var picture: URL? { claims["picture"]?.stringValue.flatMap(URL.init(string:)) }
    /// `locale`
    public var locale: String? { claims["locale"]?.stringValue }
    /// `phone_number`
    public var phoneNumber: String? { claims["phone_number"]?.stringValue }
    /// `updated_at`
    public var updatedAt: Date? { claims["updated_at"]?.numericDate }
    /// `_claim_names`: aggregated or distributed claims (OIDC Core §5.6.2), by claim name.
    public var claimNames: [String: String]? { claims["_claim_names"]?.objectValue?.compactMapValues(\.stringValue) }
    /// `_claim_sources`: where aggregated or distributed claims come from.
    public var claimSources: [String: JSONValue]? { claims["_claim_sources"]?.objectValue }
}

/// The claims of an ID token (OIDC Core §2), typed, with the raw set kept.
public struct IDTokenClaims: StandardClaims, Sendable, Hashable {
    /// The raw claims set.
    public let claims: [String: JSONValue]
    /// `iss`
    public let issuer: String
    /// `sub`
    public let subject: String
    /// `aud`, as a list (a single string becomes one element).
    public let audiences: [String]
    /// `exp`
    public let expiresAt: Date
    /// `iat`
    public let issuedAt: Date

    /// `auth_time`
    public var authTime: Date? { claims["auth_time"]?.numericDate }
    /// `nonce`
    public var nonce: String? { claims["nonce"]?.stringValue }
    /// `azp`
    public var authorizedParty: String? { claims["azp"]?.stringValue }
    /// `at_hash`
    public var accessTokenHash: String? { claims["at_hash"]?.stringValue }
    /// `c_hash`
    public var codeHash: String? { claims["c_hash"]?.stringValue }
    /// `acr`
    public var authenticationContextClass: String? { claims["acr"]?.stringValue }
    /// `amr`
    public var authenticationMethods: [String]? { claims["amr"]?.arrayValue?.compactMap(\.stringValue) }
    /// `sid` (session id, for logout)
    public var sessionID: String? { claims["sid"]?.stringValue }

    /// Reads the required claims (`iss`, `sub`, `aud`, `exp`, `iat`) and their types.
    ///
    /// - Throws: a ``JOSEError`` naming the missing or mistyped claim
    ///   (``JOSEError/Reason/issuerMismatch``, ``JOSEError/Reason/subjectMismatch``,
    ///   ``JOSEError/Reason/audienceMismatch``, ``JOSEError/Reason/expired``,
    ///   ``JOSEError/Reason/issuedAtInvalid``, or ``JOSEError/Reason/invalidClaim``).
    public init(_ claims: [String: JSONValue]) throws(JOSEError) {
        guard let issuer = claims["iss"]?.stringValue else { throw JOSEError(.issuerMismatch, "The ID token has no iss.") }
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty else {
            throw JOSEError(.subjectMismatch, "The ID token has no sub.")
        }
        let audiences: [String]
        switch claims["aud"] {
        case .string(let value): audiences = [value]
        case .array(let values):
            let strings = values.compactMap(\.stringValue)
            guard strings.count == values.count else { throw JOSEError(.invalidClaim, "The ID token's aud holds a non-string.") }
            audiences = strings
        case nil: throw JOSEError(.audienceMismatch, "The ID token has no aud.")
        default: throw JOSEError(.invalidClaim, "The ID token's aud is neither a string nor an array.")
        }
        guard let exp = claims["exp"] else { throw JOSEError(.expired, "The ID token has no exp.") }
        guard let expiresAt = exp.numericDate else { throw JOSEError(.invalidClaim, "The ID token's exp is not a number.") }
        guard let iat = claims["iat"] else { throw JOSEError(.issuedAtInvalid, "The ID token has no iat.") }
        guard let issuedAt = iat.numericDate else { throw JOSEError(.invalidClaim, "The ID token's iat is not a number.") }
        for name in ["auth_time", "nonce", "azp", "at_hash", "c_hash"] {
            guard let value = claims[name] else { continue }
            let typeOK = name == "auth_time" ? value.numericDate != nil : value.stringValue != nil
            guard typeOK else { throw JOSEError(.invalidClaim, "The ID token's \(name) has the wrong type.") }
        }
        self.claims = claims
        self.issuer = issuer
        self.subject = subject
        self.audiences = audiences
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
    }
}

/// A verified ID token: its header and its claims.
public struct IDToken: Sendable, CustomStringConvertible {
    /// The compact JWT, as received.
    public let compact: String
    /// The JOSE header.
    public let header: [String: JSONValue]
    /// The claims.
    public let claims: IDTokenClaims

    init(compact: String, header: [String: JSONValue], claims: IDTokenClaims) {
        self.compact = compact
        self.header = header
        self.claims = claims
    }

    /// Issuer, subject and expiry; never the token.
    public var description: String {
        "IDToken(iss: \(claims.issuer), sub: \(claims.subject), exp: \(claims.expiresAt))"
    }
}

extension JSONValue {
    /// A NumericDate (RFC 7519 §2): seconds since the epoch, integer or not.
    var numericDate: Date? {
        switch self {
        case .integer(let value): return Date(timeIntervalSince1970: TimeInterval(value))
        case .number(let value) where value.isFinite: return Date(timeIntervalSince1970: value)
        default: return nil
        }
    }
}

extension TokenSet {
    /// The claims of ``idToken``, decoded without checking the signature again: the library
    /// verified the ID token when the token response arrived. `nil` without an ID token or
    /// when it cannot be decoded.
    public var idTokenClaims: IDTokenClaims? {
        guard let idToken, let jws = try? JWS(compact: idToken), let claims = try? jws.claims() else { return nil }
        return try? IDTokenClaims(claims)
    }
}
