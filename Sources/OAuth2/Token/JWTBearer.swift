import Foundation
import OAuth2Internals

/// A JWT used as an authorization grant (RFC 7523 §2.1, §3): the claims of an assertion
/// the library signs for the JWT bearer grant.
///
/// `iss` names who issued the assertion (a trusted issuer, or the client itself), `sub`
/// whom the token is for, `aud` the authorization server (its issuer identifier or token
/// endpoint URL); `iat`, a short `exp` and a unique `jti` bound it in time and against replay.
///
/// ```swift
/// let assertion = JWTBearerAssertion(issuer: "https://idp.example.com", subject: "alice",
///                                    audience: client.metadata.issuer!)
/// let tokens = try await client.jwtBearer(signing: assertion, with: key)
/// ```
public struct JWTBearerAssertion: Sendable, Hashable {
    /// `iss`.
    public var issuer: String
    /// `sub`: the principal the token is for.
    public var subject: String
    /// `aud`: the authorization server.
    public var audience: String
    /// `iat`.
    public var issuedAt: Date
    /// `exp`.
    public var expiresAt: Date
    /// `jti`: unique per assertion (128 random bits by default).
    public var id: String
    /// Further claims (`scope`, `nbf`, a server's own claims); they never replace the six above.
    public var additionalClaims: [String: JSONValue]

    /// An assertion from `issuer` about `subject` for `audience`, valid for `lifetime` seconds.
    ///
    /// - Parameters:
    ///   - issuer: `iss`: who issued the assertion.
    ///   - subject: `sub`: the principal the token is for.
    ///   - audience: `aud`: the authorization server's issuer identifier or token endpoint URL.
    ///   - issuedAt: `iat`; now by default.
    ///   - lifetime: seconds from `issuedAt` to `exp` (60 by default).
    ///   - id: the `jti`; a fresh random one by default.
    ///   - additionalClaims: further claims; they never replace the six above.
    public init(
        issuer: String,
        subject: String,
        audience: String,
        issuedAt: Date = Date(),
        lifetime: TimeInterval = 60,
        id: String? = nil,
        additionalClaims: [String: JSONValue] = [:]
    ) {
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.issuedAt = issuedAt
        expiresAt = issuedAt.addingTimeInterval(lifetime)
        self.id = id ?? SecureRandom.token(byteCount: 16)
        self.additionalClaims = additionalClaims
    }

    /// The claims set.
    public var claims: [String: JSONValue] {
        var claims = additionalClaims
        claims["iss"] = .string(issuer)
        claims["sub"] = .string(subject)
        claims["aud"] = .string(audience)
        claims["jti"] = .string(id)
        claims["iat"] = .integer(Int64(issuedAt.timeIntervalSince1970.rounded(.down)))
        claims["exp"] = .integer(Int64(expiresAt.timeIntervalSince1970.rounded(.down)))
        return claims
    }

    /// The signed assertion in compact form; its header holds `alg`, `typ` `JWT` and the
    /// key's `kid`.
    ///
    /// - Throws: `JOSEError.Reason.invalidKey` when signing fails;
    ///   `JOSEError.Reason.invalidClaim` for an empty issuer, subject or audience, which
    ///   no server accepts.
    public func signed(with key: JWSSigningKey) throws(JOSEError) -> String {
        guard !issuer.isEmpty, !subject.isEmpty, !audience.isEmpty else {
            throw JOSEError(.invalidClaim, "A JWT bearer assertion needs a non-empty iss, sub and aud.")
        }
        return try key.sign(claims: claims, header: ["typ": .string("JWT")])
    }
}

extension Grant {
    /// The token exchange grant's `grant_type` (RFC 8693 §2.1).
    public static let tokenExchangeType = "urn:ietf:params:oauth:grant-type:token-exchange"
    /// The JWT bearer grant's `grant_type` (RFC 7523 §2.1).
    public static let jwtBearerType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// Token exchange (RFC 8693 §2.1): `request`'s subject (and actor) token for a new one.
    ///
    /// To read `issued_token_type` and accept a token that is not an access token
    /// (`token_type` `N_A`), use ``OAuth2Client/exchangeToken(_:)`` rather than
    /// ``OAuth2Client/requestToken(_:requestedScopes:)``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidRequest`` as ``TokenExchangeRequest/parameters()``.
    public static func tokenExchange(_ request: TokenExchangeRequest) throws(OAuth2Error) -> Grant {
        Grant(type: tokenExchangeType, parameters: try request.parameters(), requestedScopes: request.scopes.nilIfEmpty)
    }

    /// The JWT bearer grant (RFC 7523 §2.1) with a signed assertion, and optionally scopes.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidRequest`` for an assertion that is not a compact
    ///   JWS (three base64url parts); its content is not checked — that is the server's job.
    public static func jwtBearer(assertion: String, scopes: [String] = []) throws(OAuth2Error) -> Grant {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        let base64url = { (part: Substring) in
            part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, parts.allSatisfy(base64url) else {
            throw .client(.invalidRequest, "The assertion is not a compact JWT (three base64url parts separated by dots).")
        }
        return Grant(
            type: jwtBearerType,
            parameters: [("assertion", assertion)] + (scopes.isEmpty ? [] : [("scope", scopes.joined(separator: " "))]),
            requestedScopes: scopes.nilIfEmpty)
    }
}
