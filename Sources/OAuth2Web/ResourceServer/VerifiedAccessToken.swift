import Foundation
import OAuth2
import OAuth2JOSE

/// An access token that passed every check: its signature and claims (a JWT access token,
/// RFC 9068) or the authorization server's answer (an introspected token, RFC 7662).
///
/// It holds what the token grants, never the token itself: its `description` is safe to log.
public struct VerifiedAccessToken: Sendable, Hashable, CustomStringConvertible {
    /// How the token was checked.
    public struct Format: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The format's name.
        public let rawValue: String
        /// Creates a format.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The name.
        public var description: String { rawValue }

        /// A JWT access token verified locally (RFC 9068).
        public static let jwt = Format(rawValue: "jwt")
        /// A token the authorization server described at its introspection endpoint (RFC 7662).
        public static let introspected = Format(rawValue: "introspected")
    }

    /// How the token was checked.
    public let format: Format
    /// `iss`: always present for a JWT; for an introspected token, when the server sends it.
    public let issuer: String?
    /// `sub`: always present for a JWT (RFC 9068 §2.2); for an introspected token, when
    /// the server sends it.
    public let subject: String?
    /// `client_id`: the client the token was issued to.
    public let clientID: String?
    /// `scope`, split on spaces.
    public var scopes: Set<String> {
        switch scopeStorage {
        case .set(let scopes): scopes
        case .text(let text): ScopeText.set(text)
        }
    }
    private let scopeStorage: ScopeStorage
    /// `aud`.
    public var audience: [String] {
        switch audienceStorage {
        case .one(let audience): [audience]
        case .many(let audiences): audiences
        }
    }
    private let audienceStorage: AudienceStorage
    /// `exp`.
    public let expiresAt: Date?
    /// `iat`.
    public let issuedAt: Date?
    /// `jti`.
    public let jwtID: String?
    /// `cnf.jkt` (RFC 9449 §6): the thumbprint of the DPoP key the token is bound to; `nil`
    /// for a bearer token.
    public let confirmationThumbprint: String?
    /// `cnf.x5t#S256` (RFC 8705 §3.1): the base64url SHA-256 thumbprint of the client
    /// certificate the token is bound to; `nil` unless the token is certificate-bound.
    public let certificateThumbprint: String?
    /// Every claim (of the JWT, or of the introspection answer). A JWT's set is decoded the
    /// first time this is read (the verifier reads the claims it checks in one pass).
    public var claims: [String: JSONValue] { rawClaims.object }
    private let rawClaims: LazyJSONObject

    /// Creates a value; the verifiers make these.
    public init(
        format: Format, issuer: String?, subject: String?, clientID: String?, scopes: Set<String>, audience: [String],
        expiresAt: Date?, issuedAt: Date?, jwtID: String?, confirmationThumbprint: String?, certificateThumbprint: String? = nil,
        claims: [String: JSONValue]
    ) {
        self.init(
            format: format, issuer: issuer, subject: subject, clientID: clientID, scopes: .set(scopes), audience: .many(audience),
            expiresAt: expiresAt, issuedAt: issuedAt, jwtID: jwtID, confirmationThumbprint: confirmationThumbprint,
            certificateThumbprint: certificateThumbprint, rawClaims: LazyJSONObject.make(claims))
    }

    /// Creates a value as the verifiers keep it: the scopes as a set or as the `scope`
    /// claim's text (split into ``scopes`` only when that is read; ``grants(_:)`` reads the
    /// text in place), a single audience without an array, and the claims decoded when first
    /// read.
    package init(
        format: Format, issuer: String?, subject: String?, clientID: String?, scopes: ScopeStorage, audience: AudienceStorage,
        expiresAt: Date?, issuedAt: Date?, jwtID: String?, confirmationThumbprint: String?, certificateThumbprint: String? = nil,
        rawClaims: LazyJSONObject
    ) {
        self.format = format
        self.issuer = issuer
        self.subject = subject
        self.clientID = clientID
        self.scopeStorage = scopes
        self.audienceStorage = audience
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        self.jwtID = jwtID
        self.confirmationThumbprint = confirmationThumbprint
        self.certificateThumbprint = certificateThumbprint
        self.rawClaims = rawClaims
    }

    /// Equal when every property is, the claims included.
    public static func == (lhs: VerifiedAccessToken, rhs: VerifiedAccessToken) -> Bool {
        lhs.format == rhs.format && lhs.issuer == rhs.issuer && lhs.subject == rhs.subject && lhs.clientID == rhs.clientID
            && lhs.scopes == rhs.scopes && lhs.audience == rhs.audience && lhs.expiresAt == rhs.expiresAt
            && lhs.issuedAt == rhs.issuedAt && lhs.jwtID == rhs.jwtID && lhs.confirmationThumbprint == rhs.confirmationThumbprint
            && lhs.certificateThumbprint == rhs.certificateThumbprint
            && (lhs.rawClaims.isIdentical(to: rhs.rawClaims) || lhs.claims == rhs.claims)
    }

    /// Hashes every property, the claims included.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(format)
        hasher.combine(issuer)
        hasher.combine(subject)
        hasher.combine(clientID)
        hasher.combine(scopes)
        hasher.combine(audience)
        hasher.combine(expiresAt)
        hasher.combine(issuedAt)
        hasher.combine(jwtID)
        hasher.combine(confirmationThumbprint)
        hasher.combine(certificateThumbprint)
        hasher.combine(claims)
    }

    /// Whether the token is bound to a DPoP key (it has `cnf.jkt`).
    public var isDPoPBound: Bool { confirmationThumbprint != nil }

    /// Whether the token is bound to a client certificate (it has `cnf.x5t#S256`, RFC 8705 §3).
    public var isCertificateBound: Bool { certificateThumbprint != nil }

    /// Whether the token grants every scope of `required`.
    public func grants(_ required: some Sequence<String>) -> Bool {
        switch scopeStorage {
        case .set(let scopes): required.allSatisfy(scopes.contains)
        case .text(let text): required.allSatisfy { ScopeText.contains(text, $0) }
        }
    }

    /// Checks that the token grants every scope of `required`.
    ///
    /// - Throws: ``AccessTokenError/Code/insufficientScope``, naming `required` in the
    ///   challenge's `scope`.
    public func requireScopes(_ required: [String]) throws(AccessTokenError) {
        guard grants(required) else {
            throw AccessTokenError(
                .insufficientScope, reason: .missingScope, "The access token does not grant the scopes this resource requires.",
                requiredScopes: required)
        }
    }

    /// The token's `authorization_details` (RFC 9396 §9): a JWT access token's claim, or the
    /// introspection answer's member; `nil` when it has none.
    public var authorizationDetails: [AuthorizationDetail]? {
        guard let value = claims["authorization_details"], let array = value.arrayValue else { return nil }
        let entries = array.compactMap(AuthorizationDetail.init(json:))
        return entries.count == array.count ? entries : nil
    }

    /// Checks that the token's `authorization_details` cover every entry of `required`
    /// (see `AuthorizationDetail/covers(_:)`: the same type, and each required member
    /// granted).
    ///
    /// - Throws: ``AccessTokenError/Code/insufficientScope`` with the reason
    ///   ``AccessTokenError/Reason/missingAuthorizationDetails`` (a 403).
    public func requireAuthorizationDetails(_ required: [AuthorizationDetail]) throws(AccessTokenError) {
        guard !required.isEmpty else { return }
        guard (authorizationDetails ?? []).covers(required) else {
            throw AccessTokenError(
                .insufficientScope, reason: .missingAuthorizationDetails,
                "The access token does not grant the authorization details this resource requires.")
        }
    }

    /// Format, issuer, subject, client and scopes; never the token.
    public var description: String {
        "VerifiedAccessToken(\(format), iss: \(issuer ?? "-"), sub: \(subject ?? "-"), client_id: \(clientID ?? "-"), scope: \(scopes.sorted().joined(separator: " "))\(isDPoPBound ? ", DPoP-bound" : "")\(isCertificateBound ? ", certificate-bound" : ""))"
    }
}

/// How a ``VerifiedAccessToken`` keeps its scopes: a set (an introspection answer, a `scope`
/// array), or the `scope` claim's text, split only when someone asks for the set.
package enum ScopeStorage: Sendable {
    case set(Set<String>)
    case text(String)
}

/// How a ``VerifiedAccessToken`` keeps its audience: the one `aud` string most tokens carry
/// (no array made per request), or the list.
package enum AudienceStorage: Sendable {
    case one(String)
    case many([String])
}

/// A `scope` claim's text: scope tokens separated by spaces (RFC 6749 §3.3; runs of spaces
/// and leading or trailing ones are tolerated, as `split(separator: " ")` does).
enum ScopeText {
    /// The scope tokens as a set.
    static func set(_ text: String) -> Set<String> {
        var scopes = Set<String>()
        for scope in text.split(separator: " ") { scopes.insert(String(scope)) }
        return scopes
    }

    /// Whether `scope` is one of the tokens of `text`, as `set(text).contains(scope)` says,
    /// without splitting `text`: ASCII strings are equal exactly when their bytes are, so
    /// they are compared in place; anything else (where `String` equality is canonical
    /// equivalence) goes through the set.
    static func contains(_ text: String, _ scope: String) -> Bool {
        var text = text, scope = scope
        // Over the UTF-8 buffers, not the generic `UTF8View` walks: this runs per request.
        let answer: Bool? = scope.withUTF8 { wanted in
            text.withUTF8 { text -> Bool? in
                guard !wanted.isEmpty, wanted.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: " ") }), text.allSatisfy({ $0 < 0x80 }) else {
                    return nil
                }
                var start = 0
                while start < text.count {
                    let tokenEnd = text[start...].firstIndex(of: UInt8(ascii: " ")) ?? text.count
                    if tokenEnd - start == wanted.count, memcmp(text.baseAddress! + start, wanted.baseAddress!, wanted.count) == 0 { return true }
                    start = tokenEnd + 1
                }
                return false
            }
        }
        return answer ?? set(text).contains(scope)
    }
}
