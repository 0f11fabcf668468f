import Foundation
import HTTPTypes

/// How an introspection endpoint is asked to answer.
public enum IntrospectionFormat: Sendable, Hashable {
    /// A JSON object (RFC 7662 §2.2).
    case json
    /// A signed JWT (RFC 9701): `Accept: application/token-introspection+jwt`; the answer's
    /// signature (the server's JWK set), `iss`, `aud` and `iat` are checked before its
    /// `token_introspection` claim is read. See ``IntrospectionJWTValidator``. An answer
    /// signed, then encrypted to the client (RFC 9701 §5) is decrypted first with
    /// ``ClientConfiguration/encryption``'s keys and ``EncryptionOptions/introspection``'s
    /// algorithms.
    case jwt(IntrospectionJWTValidator.Options = .init())
}

/// Checks a JWT introspection answer (RFC 9701 §5): its media type
/// `application/token-introspection+jwt`, its `typ` header, its signature with the
/// authorization server's keys and an allowed algorithm, `iss` (the server's issuer), `aud`
/// (this client, or another audience it is known by) and `iat` (recent), then reads its
/// `token_introspection` claim as an ``IntrospectionResponse``.
public struct IntrospectionJWTValidator: Sendable {
    /// The media type of a JWT introspection answer.
    public static let contentType = "application/token-introspection+jwt"
    /// The JOSE `typ` of a JWT introspection answer.
    public static let type = "token-introspection+jwt"

    /// What an answer must satisfy besides its signature and issuer.
    public struct Options: Sendable, Hashable {
        /// The audiences `aud` may name (one is enough); `nil` (the default) accepts only
        /// the client's id, as RFC 9701 §5 has it.
        public var audiences: [String]?
        /// The oldest `iat` accepted, in seconds before now (300 by default).
        public var maximumAge: TimeInterval
        /// The clock tolerance for an `iat` in the future, in seconds (60 by default).
        public var leeway: TimeInterval
        /// The algorithms accepted; `nil` (the default): those of the server's
        /// `introspection_signing_alg_values_supported`, else the client's ID token ones.
        public var allowedAlgorithms: [JWSAlgorithm]?

        /// Creates options.
        public init(audiences: [String]? = nil, maximumAge: TimeInterval = 300, leeway: TimeInterval = 60, allowedAlgorithms: [JWSAlgorithm]? = nil) {
            self.audiences = audiences
            self.maximumAge = maximumAge
            self.leeway = leeway
            self.allowedAlgorithms = allowedAlgorithms
        }
    }

    /// The issuer `iss` must be.
    public let issuer: String
    /// The audiences `aud` may name.
    public let audiences: [String]
    /// The algorithms accepted (never `none`, never HMAC).
    public let allowedAlgorithms: [JWSAlgorithm]
    /// The oldest `iat` accepted, in seconds before now.
    public let maximumAge: TimeInterval
    /// The clock tolerance for an `iat` in the future.
    public let leeway: TimeInterval

    /// Creates a validator.
    ///
    /// - Parameters:
    ///   - issuer: the authorization server's issuer identifier.
    ///   - audiences: the values `aud` may name (the client's id, usually).
    ///   - allowedAlgorithms: the signing algorithms accepted; `none` and HMAC are removed.
    ///   - maximumAge: the oldest `iat` accepted, in seconds before now.
    ///   - leeway: the tolerance for an `iat` in the future.
    public init(issuer: String, audiences: [String], allowedAlgorithms: [JWSAlgorithm], maximumAge: TimeInterval = 300, leeway: TimeInterval = 60) {
        self.issuer = issuer
        self.audiences = audiences
        self.allowedAlgorithms = allowedAlgorithms.filter { $0.isSupported && !$0.isHMAC }
        self.maximumAge = maximumAge
        self.leeway = leeway
    }

    /// Checks the answer's media type, then parses it as a JWS.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidIntrospectionResponse`` for another media type
    ///   or a malformed JWT.
    public func jws(of response: HTTPResponse, body: Data) throws(OAuth2Error) -> JWS {
        try Self.parse(try compact(of: response, body: body))
    }

    /// Checks the answer's media type and returns its body as text: a compact JWS, or a
    /// compact JWE (signed, then encrypted) for a client that registered encryption.
    func compact(of response: HTTPResponse, body: Data) throws(OAuth2Error) -> String {
        let contentType = response.headerFields[.contentType]?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard contentType == Self.contentType else {
            throw .client(.invalidIntrospectionResponse, "The introspection answer is not a JWT (\(Self.contentType)) but \(Redactor.sanitizeServerText(contentType ?? "untyped", limit: 60)).")
        }
        return String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Parses a compact JWS.
    static func parse(_ compact: String) throws(OAuth2Error) -> JWS {
        do {
            return try JWS(compact: compact)
        } catch {
            throw OAuth2Error(.invalidIntrospectionResponse, source: .client, message: "The introspection answer is not a JWT: \(error.message)", underlyingError: error)
        }
    }

    /// Why the signature check fails with `keys`, or `nil` when it passes.
    func signatureFailure(_ jws: JWS, keys: JSONWebKeySet?) -> JOSEError? {
        IDTokenValidator(issuer: issuer, clientID: audiences.first ?? "", allowedAlgorithms: allowedAlgorithms).signatureFailure(jws, keys: keys)
    }

    /// Checks the signature with `keys`, then the claims.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidIntrospectionResponse``, with the `JOSEError`
    ///   naming the failed check as its underlying error.
    public func validate(_ jws: JWS, keys: JSONWebKeySet?, now: Date = Date()) throws(OAuth2Error) -> IntrospectionResponse {
        if let failure = signatureFailure(jws, keys: keys) { throw Self.refused(failure) }
        return try validateClaims(of: jws, now: now)
    }

    /// The claim checks of RFC 9701 §5 (the signature checked already): `typ`, `iss`, `aud`,
    /// `iat`, and a `token_introspection` object.
    func validateClaims(of jws: JWS, now: Date) throws(OAuth2Error) -> IntrospectionResponse {
        do {
            if let type = jws.header["typ"]?.stringValue, type.lowercased() != Self.type, type.lowercased() != "application/" + Self.type {
                throw JOSEError(.invalidClaim, "The introspection answer's typ is not \(Self.type).")
            }
            let claims = try jws.claims()
            guard claims["iss"]?.stringValue == issuer else {
                throw JOSEError(.issuerMismatch, "The introspection answer names another issuer.")
            }
            let audience = claims["aud"].map { $0.stringValue.map { [$0] } ?? $0.arrayValue?.compactMap(\.stringValue) ?? [] } ?? []
            guard audience.contains(where: audiences.contains) else {
                throw JOSEError(.audienceMismatch, "The introspection answer is not addressed to this client.")
            }
            guard let issuedAt = claims["iat"]?.doubleValue else {
                throw JOSEError(.issuedAtInvalid, "The introspection answer has no iat.")
            }
            let age = now.timeIntervalSince1970 - issuedAt
            guard age <= maximumAge, age >= -leeway else {
                throw JOSEError(.issuedAtInvalid, age > 0 ? "The introspection answer is too old." : "The introspection answer is issued in the future.")
            }
            guard let members = claims["token_introspection"]?.objectValue else {
                throw JOSEError(.invalidClaim, "The introspection answer has no token_introspection object.")
            }
            do {
                return try IntrospectionResponse.parse(members: members)
            } catch {
                throw JOSEError(.invalidClaim, "The introspection answer's token_introspection has no boolean active member.")
            }
        } catch let error as JOSEError {
            throw Self.refused(error)
        } catch {
            throw OAuth2Error(.invalidIntrospectionResponse, source: .client, message: "The introspection answer was refused.", underlyingError: error)
        }
    }

    static func refused(_ error: JOSEError) -> OAuth2Error {
        OAuth2Error(.invalidIntrospectionResponse, source: .client, message: "The introspection answer was refused: \(error.message)", underlyingError: error)
    }
}
