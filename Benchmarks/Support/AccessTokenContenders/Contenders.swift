import Crypto
import CryptoExtras
import Foundation
import JWTKit
import OAuth2
import OAuth2Web

// The contenders of this package, each doing the same checks on a token: the signature with
// the set's key named by `kid`, `typ` at+jwt, `alg` in the allow-list (the fixture's one),
// `iss`, `aud`, `exp`/`nbf`/`iat` with 60 s of leeway, `sub`, `jti` and `client_id` present,
// and `scope` granting "read". Each returns the subject, so that nothing is optimised away.

/// swift-oauth2: `AccessTokenVerifier` with the set in hand (`.fixed(keys)`).
public struct OursContender: Sendable {
    public let verifier: AccessTokenVerifier

    public init(_ fixture: AccessTokenFixture) {
        verifier = AccessTokenVerifier(issuers: [
            TrustedIssuer(
                issuer: fixture.issuer, audiences: [fixture.audience], keys: .fixed(fixture.keys),
                allowedAlgorithms: [fixture.algorithm], leeway: AccessTokenFixture.leeway)
        ])
    }

    @inline(never)
    public func validate(_ token: String) async throws -> String {
        try await verifier.verify(token, requiredScopes: [AccessTokenFixture.requiredScope]).subject ?? ""
    }
}

/// vapor/jwt-kit: a `JWTKeyCollection` holding the JWK set, a payload type whose
/// `verify(using:)` checks the claims, and a parser that checks `typ` and `alg` (jwt-kit
/// itself reads neither: it picks the signer by `kid` and the JWK's own `alg`).
public struct JWTKitContender: Sendable {
    public let keys: JWTKeyCollection

    public init(_ fixture: AccessTokenFixture) async throws {
        AccessTokenPayload.expected = .init(issuer: fixture.issuer, audience: fixture.audience)
        keys = JWTKeyCollection(defaultJWTParser: AccessTokenParser(allowedAlgorithms: [fixture.algorithm.rawValue]))
        try await keys.add(jwksJSON: String(decoding: fixture.keySetJSON, as: UTF8.self))
    }

    @inline(never)
    public func validate(_ token: String) async throws -> String {
        try await keys.verify(token, as: AccessTokenPayload.self).sub.value
    }
}

/// An RFC 9068 access token's claims for jwt-kit.
public struct AccessTokenPayload: JWTPayload {
    struct Expected: Sendable {
        var issuer = "", audience = ""
    }

    // Set once before the runs (jwt-kit's payloads verify without context).
    nonisolated(unsafe) static var expected = Expected()

    public var iss: IssuerClaim
    public var sub: SubjectClaim
    public var aud: AudienceClaim
    public var exp: ExpirationClaim
    public var iat: IssuedAtClaim
    public var nbf: NotBeforeClaim?
    public var jti: IDClaim
    public var client_id: String
    public var scope: String

    public func verify(using _: some JWTAlgorithm) async throws {
        let expected = Self.expected
        guard iss.value == expected.issuer else { throw JWTError.claimVerificationFailure(failedClaim: iss, reason: "issuer") }
        try aud.verifyIntendedAudience(includes: expected.audience)
        let now = Date()
        try exp.verifyNotExpired(currentDate: now.addingTimeInterval(-AccessTokenFixture.leeway))
        try nbf?.verifyNotBefore(currentDate: now.addingTimeInterval(AccessTokenFixture.leeway))
        guard iat.value <= now.addingTimeInterval(AccessTokenFixture.leeway) else {
            throw JWTError.claimVerificationFailure(failedClaim: iat, reason: "iat in the future")
        }
        guard !sub.value.isEmpty, !jti.value.isEmpty, !client_id.isEmpty,
            scope.split(separator: " ").contains(Substring(AccessTokenFixture.requiredScope))
        else { throw JWTError.generic(identifier: "claims", reason: "sub, jti, client_id or scope") }
    }
}

/// jwt-kit's parser, plus the header checks an access token needs (`typ`, `alg`).
struct AccessTokenParser: JWTParser {
    var jsonDecoder: any JWTJSONDecoder = .defaultForJWT
    let allowedAlgorithms: Set<String>

    init(allowedAlgorithms: Set<String>) {
        self.allowedAlgorithms = allowedAlgorithms
    }

    func parse<Payload>(_ token: some DataProtocol, as _: Payload.Type) throws -> (header: JWTHeader, payload: Payload, signature: Data)
    where Payload: JWTPayload {
        let parsed = try DefaultJWTParser(jsonDecoder: jsonDecoder).parse(token, as: Payload.self)
        guard let type = parsed.header.typ?.lowercased(), type == "at+jwt" || type == "application/at+jwt" else {
            throw JWTError.generic(identifier: "typ", reason: "not at+jwt")
        }
        guard let alg = parsed.header.alg, allowedAlgorithms.contains(alg) else {
            throw JWTError.generic(identifier: "alg", reason: "not allowed")
        }
        return parsed
    }
}

/// swift-crypto's signature check alone on the same tokens, with the signing key (the floor):
/// the tokens are split and base64url-decoded beforehand; each check is SHA-256 and the
/// signature verification, nothing else.
public struct RawSignatureContender: Sendable {
    public let parts: [(input: Data, signature: Data)]
    let verify: @Sendable (Data, Data) -> Bool

    public init(_ fixture: AccessTokenFixture) throws {
        parts = fixture.tokens.map { token in
            let pieces = token.split(separator: ".")
            return (Data((pieces[0] + "." + pieces[1]).utf8), Self.base64URL(pieces[2]))
        }
        if fixture.algorithm == .es256 {
            let key = try P256.Signing.PublicKey(pemRepresentation: fixture.publicKeyPEM)
            verify = { input, signature in
                guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
                return key.isValidSignature(signature, for: SHA256.hash(data: input))
            }
        } else {
            let key = try _RSA.Signing.PublicKey(pemRepresentation: fixture.publicKeyPEM)
            verify = { input, signature in
                key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5)
            }
        }
    }

    @inline(never)
    public func validate(_ index: Int) -> Bool {
        let part = parts[index % parts.count]
        return verify(part.input, part.signature)
    }

    static func base64URL(_ text: Substring) -> Data {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)!
    }
}
