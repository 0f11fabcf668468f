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
///
/// The typed members are read when the token is; the raw set (``claims``) is decoded from
/// the already checked bytes the first time it is asked for, then kept.
public struct IDTokenClaims: StandardClaims, Sendable, Hashable {
    /// The raw claims set.
    public var claims: [String: JSONValue] { raw.object }
    /// `iss`
    public let issuer: String
    /// `sub`
    public let subject: String
    /// `aud`, as a list (a single string becomes one element).
    public var audiences: [String] {
        switch audience {
        case .one(let value): return [value]
        case .list(let values): return values
        }
    }
    /// `exp`
    public let expiresAt: Date
    /// `iat`
    public let issuedAt: Date
    /// `auth_time`
    public let authTime: Date?
    /// `nonce`
    public let nonce: String?
    /// `azp`
    public let authorizedParty: String?
    /// `at_hash`
    public let accessTokenHash: String?
    /// `c_hash`
    public let codeHash: String?

    /// `acr`
    public var authenticationContextClass: String? { claims["acr"]?.stringValue }
    /// `amr`
    public var authenticationMethods: [String]? { claims["amr"]?.arrayValue?.compactMap(\.stringValue) }
    /// `sid` (session id, for logout)
    public var sessionID: String? { claims["sid"]?.stringValue }

    private let raw: LazyJSONObject
    /// `aud` as sent: one string (the usual case, kept without an array) or a list.
    let audience: Audience

    enum Audience: Sendable {
        case one(String)
        case list([String])

        /// How many audiences.
        var count: Int {
            switch self {
            case .one: return 1
            case .list(let values): return values.count
            }
        }

        /// Whether one audience is `value`.
        func contains(_ value: String) -> Bool {
            switch self {
            case .one(let one): return one == value
            case .list(let values): return values.contains(value)
            }
        }

        /// Whether some audience satisfies `predicate`.
        func contains(where predicate: (String) -> Bool) -> Bool {
            switch self {
            case .one(let one): return predicate(one)
            case .list(let values): return values.contains(where: predicate)
            }
        }
    }

    /// Reads the required claims (`iss`, `sub`, `aud`, `exp`, `iat`) and their types.
    ///
    /// - Throws: a `JOSEError` naming the missing or mistyped claim
    ///   (`JOSEError.Reason.issuerMismatch`, `JOSEError.Reason.subjectMismatch`,
    ///   `JOSEError.Reason.audienceMismatch`, `JOSEError.Reason.expired`,
    ///   `JOSEError.Reason.issuedAtInvalid`, or `JOSEError.Reason.invalidClaim`).
    public init(_ claims: [String: JSONValue]) throws(JOSEError) {
        var members = Members()
        for (slot, name) in Members.names.names.enumerated() {
            if let value = claims[name.description] { members.set(slot, value) }
        }
        try self.init(members, raw: LazyJSONObject.make(claims))
    }

    /// Reads a claims set from its JSON bytes (a JWS payload) in one pass: the whole set is
    /// checked as strictly as ``JWS/claims()`` does (the same errors: malformed JSON and
    /// duplicate members are refused, nested ones too), the members the validator checks
    /// are decoded, and the raw set is built only when ``claims`` is first read.
    ///
    /// - Throws: what ``JWS/claims()`` throws, then what ``init(_:)`` throws.
    package init(payload: [UInt8]) throws(JOSEError) {
        var members = Members()
        let parsed = try JOSEJSON.members(payload, named: Members.names, what: "claims set") { slot, value in members.set(slot, value) }
        try self.init(members, raw: parsed.map { LazyJSONObject.make($0) } ?? LazyJSONObject.make(checkedBytes: payload))
    }

    /// The members the validator reads, by their index in ``names``.
    private struct Members {
        static let names: JSONMemberNames = ["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "azp", "at_hash", "c_hash"]
        var iss, sub, aud, exp, iat, authTime, nonce, azp, atHash, cHash: JSONValue?

        /// Sets the member at `slot`.
        mutating func set(_ slot: Int, _ value: consuming JSONValue) {
            switch slot {
            case 0: iss = value
            case 1: sub = value
            case 2: aud = value
            case 3: exp = value
            case 4: iat = value
            case 5: authTime = value
            case 6: nonce = value
            case 7: azp = value
            case 8: atHash = value
            default: cHash = value
            }
        }
    }

    private init(_ members: Members, raw: LazyJSONObject) throws(JOSEError) {
        guard let issuer = members.iss?.stringValue else { throw JOSEError(.issuerMismatch, "The ID token has no iss.") }
        guard let subject = members.sub?.stringValue, !subject.isEmpty else {
            throw JOSEError(.subjectMismatch, "The ID token has no sub.")
        }
        let audience: Audience
        switch members.aud {
        case .string(let value): audience = .one(value)
        case .array(let values):
            let strings = values.compactMap(\.stringValue)
            guard strings.count == values.count else { throw JOSEError(.invalidClaim, "The ID token's aud holds a non-string.") }
            audience = .list(strings)
        case nil: throw JOSEError(.audienceMismatch, "The ID token has no aud.")
        default: throw JOSEError(.invalidClaim, "The ID token's aud is neither a string nor an array.")
        }
        guard let exp = members.exp else { throw JOSEError(.expired, "The ID token has no exp.") }
        guard let expiresAt = exp.numericDate else { throw JOSEError(.invalidClaim, "The ID token's exp is not a number.") }
        guard let iat = members.iat else { throw JOSEError(.issuedAtInvalid, "The ID token has no iat.") }
        guard let issuedAt = iat.numericDate else { throw JOSEError(.invalidClaim, "The ID token's iat is not a number.") }
        func optionalDate(_ value: JSONValue?, _ name: String) throws(JOSEError) -> Date? {
            guard let value else { return nil }
            guard let date = value.numericDate else { throw JOSEError(.invalidClaim, "The ID token's \(name) has the wrong type.") }
            return date
        }
        func optionalString(_ value: JSONValue?, _ name: String) throws(JOSEError) -> String? {
            guard let value else { return nil }
            guard let string = value.stringValue else { throw JOSEError(.invalidClaim, "The ID token's \(name) has the wrong type.") }
            return string
        }
        authTime = try optionalDate(members.authTime, "auth_time")
        nonce = try optionalString(members.nonce, "nonce")
        authorizedParty = try optionalString(members.azp, "azp")
        accessTokenHash = try optionalString(members.atHash, "at_hash")
        codeHash = try optionalString(members.cHash, "c_hash")
        self.raw = raw
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
    }

    /// Equal when the raw claims sets are (the typed members are read from them).
    public static func == (lhs: IDTokenClaims, rhs: IDTokenClaims) -> Bool {
        lhs.raw.isIdentical(to: rhs.raw) || lhs.claims == rhs.claims
    }

    /// Hashes the raw claims set.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(claims)
    }
}

/// A verified ID token: its header and its claims.
public struct IDToken: Sendable, CustomStringConvertible {
    /// The compact JWT, as received.
    public let compact: String
    /// The JOSE header.
    public var header: [String: JSONValue] { headerObject.object }
    /// The claims.
    public let claims: IDTokenClaims

    private let headerObject: LazyJSONObject

    init(compact: String, jws: JWS, claims: IDTokenClaims) {
        self.compact = compact
        headerObject = jws.headerObject
        self.claims = claims
    }

    /// Issuer, subject and expiry; never the token.
    public var description: String {
        "IDToken(iss: \(claims.issuer), sub: \(claims.subject), exp: \(claims.expiresAt))"
    }
}

extension JSONValue {
    /// A NumericDate (RFC 7519 §2): seconds since the epoch, integer or not.
    package var numericDate: Date? {
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
        guard let idToken, let jws = try? JWS(compact: idToken) else { return nil }
        return try? IDTokenClaims(payload: jws.payloadBytes)
    }
}
