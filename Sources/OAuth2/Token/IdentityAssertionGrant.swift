import Foundation
import OAuth2JOSE

extension TokenTypeURI {
    /// `urn:ietf:params:oauth:token-type:id-jag`: an Identity Assertion JWT Authorization
    /// Grant (ID-JAG, draft-ietf-oauth-identity-assertion-authz-grant §3), the token an
    /// identity provider issues by token exchange for another authorization server — the
    /// enterprise-managed authorization of MCP (SEP-990).
    public static let identityAssertionGrant = TokenTypeURI(rawValue: prefix + "id-jag")
}

/// An Identity Assertion JWT Authorization Grant (ID-JAG,
/// draft-ietf-oauth-identity-assertion-authz-grant): a short-lived JWT, signed by the
/// organisation's identity provider, that lets a client get an access token from another
/// authorization server (an MCP server's) for the signed-in user without a sign-in there.
///
/// Leg 1 gets one from the identity provider by token exchange of the user's ID token
/// (``OAuth2Client/requestIdentityAssertionGrant(idToken:audience:resource:scopes:)``);
/// leg 2 presents it to the authorization server it names with the JWT bearer grant
/// (``OAuth2Client/jwtBearer(_:scopes:)``); ``IdentityAssertionAuthorization`` does both.
///
/// The assertion is a bearer credential: its `description`, `debugDescription` and mirror
/// never show it.
public struct IdentityAssertionGrant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The JWT header `typ` every ID-JAG carries (draft §3; RFC 8725 §3.11).
    public static let jwtType = "oauth-id-jag+jwt"

    /// The ID-JAG itself: a compact JWS.
    public var assertion: String
    /// The authorization server it is for (its issuer identifier, the `audience` asked for).
    public var audience: String
    /// The resource (RFC 8707) it is for, when one was asked for.
    public var resource: URL?
    /// Its scopes: the answer's `scope`, else the requested ones; `nil` when neither.
    public var scopes: [String]?
    /// When it expires, from the answer's `expires_in`.
    public var expiresAt: Date?
    /// When the identity provider issued it (when its answer was received).
    public var issuedAt: Date

    /// A grant as given (to present one obtained in another way).
    public init(
        assertion: String, audience: String, resource: URL? = nil, scopes: [String]? = nil, expiresAt: Date? = nil,
        issuedAt: Date = Date()
    ) {
        self.assertion = assertion
        self.audience = audience
        self.resource = resource
        self.scopes = scopes
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
    }

    /// The grant a token exchange answer carries (draft §4.3.2): `issued_token_type` must be
    /// ``TokenTypeURI/identityAssertionGrant``, `token_type` `N_A` when sent (it is no access
    /// token), and the issued token a compact JWS whose header `typ` is
    /// `oauth-id-jag+jwt`. Its signature and claims are not checked here: they are for the
    /// authorization server it is addressed to.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidResponse`` when one of those does not hold (the
    ///   message names what, never the token).
    public init(
        _ response: TokenExchangeResponse, audience: String, resource: URL? = nil
    ) throws(OAuth2Error) {
        guard response.issuedTokenType == .identityAssertionGrant else {
            throw .invalidResponse(
                "The identity provider issued a token of type \(response.issuedTokenType), not an identity assertion grant (\(TokenTypeURI.identityAssertionGrant)).")
        }
        if let tokenType = response.tokenType, !response.isNotApplicable {
            throw .invalidResponse("The identity provider answered token_type \(tokenType) for an identity assertion grant; it must be N_A (it is no access token).")
        }
        let jws: JWS
        do {
            jws = try JWS(compact: response.issuedToken)
        } catch {
            throw .invalidResponse("The identity assertion grant is not a compact JWT: \(error.message)")
        }
        guard Self.isIdentityAssertionType(jws.type) else {
            throw .invalidResponse(
                "The identity assertion grant's JWT header typ is \(jws.type.map { "'\($0)'" } ?? "missing"), not '\(Self.jwtType)'.")
        }
        self.init(
            assertion: response.issuedToken, audience: audience, resource: resource, scopes: response.scopes,
            expiresAt: response.expiresAt, issuedAt: response.issuedAt)
    }

    /// `true` for the `typ` of an ID-JAG: `oauth-id-jag+jwt`, in any case, with or without
    /// the `application/` prefix (RFC 7515 §4.1.9).
    static func isIdentityAssertionType(_ type: String?) -> Bool {
        guard var type = type?.lowercased() else { return false }
        if type.hasPrefix("application/") { type.removeFirst("application/".count) }
        return type == jwtType
    }

    /// `true` when the grant expires at or before `date` (never without an expiry).
    public func isExpired(at date: Date) -> Bool {
        expiresAt.map { $0 <= date } ?? false
    }

    /// Audience, resource, scopes and expiry; the assertion is redacted.
    public var description: String {
        var parts = ["assertion: \(Redactor.placeholder)", "audience: \(audience)"]
        if let resource { parts.append("resource: \(resource.absoluteString)") }
        if let scopes { parts.append("scopes: \(scopes.joined(separator: " "))") }
        if let expiresAt { parts.append("expiresAt: \(expiresAt)") }
        return "IdentityAssertionGrant(\(parts.joined(separator: ", ")))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// Hides the assertion from `dump` and debuggers too.
    public var customMirror: Mirror { Mirror(self, children: ["description": description], displayStyle: .struct) }
}
