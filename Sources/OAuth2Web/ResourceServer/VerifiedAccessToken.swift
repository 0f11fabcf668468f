import Foundation
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
    public let scopes: Set<String>
    /// `aud`.
    public let audience: [String]
    /// `exp`.
    public let expiresAt: Date?
    /// `iat`.
    public let issuedAt: Date?
    /// `jti`.
    public let jwtID: String?
    /// `cnf.jkt` (RFC 9449 §6): the thumbprint of the DPoP key the token is bound to; `nil`
    /// for a bearer token.
    public let confirmationThumbprint: String?
    /// Every claim (of the JWT, or of the introspection answer). A JWT's set is decoded the
    /// first time this is read (the verifier reads the claims it checks in one pass).
    public var claims: [String: JSONValue] { rawClaims.object }
    private let rawClaims: LazyJSONObject

    /// Creates a value; the verifiers make these.
    public init(
        format: Format, issuer: String?, subject: String?, clientID: String?, scopes: Set<String>, audience: [String],
        expiresAt: Date?, issuedAt: Date?, jwtID: String?, confirmationThumbprint: String?, claims: [String: JSONValue]
    ) {
        self.init(
            format: format, issuer: issuer, subject: subject, clientID: clientID, scopes: scopes, audience: audience,
            expiresAt: expiresAt, issuedAt: issuedAt, jwtID: jwtID, confirmationThumbprint: confirmationThumbprint,
            rawClaims: LazyJSONObject.make(claims))
    }

    /// Creates a value whose claims are decoded when first read.
    package init(
        format: Format, issuer: String?, subject: String?, clientID: String?, scopes: Set<String>, audience: [String],
        expiresAt: Date?, issuedAt: Date?, jwtID: String?, confirmationThumbprint: String?, rawClaims: LazyJSONObject
    ) {
        self.format = format
        self.issuer = issuer
        self.subject = subject
        self.clientID = clientID
        self.scopes = scopes
        self.audience = audience
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        self.jwtID = jwtID
        self.confirmationThumbprint = confirmationThumbprint
        self.rawClaims = rawClaims
    }

    /// Equal when every property is, the claims included.
    public static func == (lhs: VerifiedAccessToken, rhs: VerifiedAccessToken) -> Bool {
        lhs.format == rhs.format && lhs.issuer == rhs.issuer && lhs.subject == rhs.subject && lhs.clientID == rhs.clientID
            && lhs.scopes == rhs.scopes && lhs.audience == rhs.audience && lhs.expiresAt == rhs.expiresAt
            && lhs.issuedAt == rhs.issuedAt && lhs.jwtID == rhs.jwtID && lhs.confirmationThumbprint == rhs.confirmationThumbprint
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
        hasher.combine(claims)
    }

    /// Whether the token is bound to a DPoP key (it has `cnf.jkt`).
    public var isDPoPBound: Bool { confirmationThumbprint != nil }

    /// Whether the token grants every scope of `required`.
    public func grants(_ required: some Sequence<String>) -> Bool {
        required.allSatisfy(scopes.contains)
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

    /// Format, issuer, subject, client and scopes; never the token.
    public var description: String {
        "VerifiedAccessToken(\(format), iss: \(issuer ?? "-"), sub: \(subject ?? "-"), client_id: \(clientID ?? "-"), scope: \(scopes.sorted().joined(separator: " "))\(isDPoPBound ? ", DPoP-bound" : ""))"
    }
}
