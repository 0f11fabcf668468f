import Crypto
import Foundation
import HTTPTypes
import OAuth2Internals

/// The key pair that DPoP (RFC 9449) binds tokens to: it signs a proof for every request, and
/// its RFC 7638 thumbprint is what a bound token's `cnf.jkt` names.
///
/// One key per session: generate it at sign-in, keep it with the tokens (see
/// ``StoredTokenSession/dpopKey()``) and use the same key for every refresh and every resource
/// request, or the tokens stop working.
///
/// ```swift
/// var configuration = ClientConfiguration(clientID: "my-cli", redirectURI: redirect)
/// configuration.dpop = DPoPOptions(key: try DPoPKey.generate())   // ES256
/// ```
///
/// Its `description` shows the algorithm and thumbprint only, never the private key.
public struct DPoPKey: Sendable, CustomStringConvertible {
    /// The private key the proofs are signed with (never an HMAC key).
    public let signingKey: JWSSigningKey
    /// The public key as it goes into a proof's `jwk` header: the RFC 7638 required members
    /// only (`kty`, `crv`, `x`, `y` or `kty`, `n`, `e`), no `kid`, no private member.
    public let publicJWK: [String: JSONValue]
    /// The RFC 7638 SHA-256 thumbprint of the public key, base64url: the `jkt` in a bound
    /// token's `cnf` claim and the `dpop_jkt` authorization parameter.
    public let thumbprint: String

    /// The algorithms a DPoP key can use, the default first.
    public static let supportedAlgorithms: [JWSAlgorithm] = [.es256, .es384, .es512, .edDSA, .ps256, .rs256, .ps384, .rs384, .ps512, .rs512]

    /// A new random key (ES256 by default; ES384, ES512, EdDSA, PS256/384/512 and RS256/384/512
    /// too — RSA keys are 2048 bits).
    ///
    /// - Throws: `JOSEError.Reason.algorithmNotAllowed` for an HMAC algorithm, `none` or an
    ///   unknown one; `JOSEError.Reason.invalidKey` when key generation fails.
    public static func generate(_ algorithm: JWSAlgorithm = .es256) throws(JOSEError) -> DPoPKey {
        guard supportedAlgorithms.contains(algorithm) else {
            throw JOSEError(.algorithmNotAllowed, "DPoP keys cannot use \(algorithm).")
        }
        return try DPoPKey(try JWSSigningKey.generate(algorithm))
    }

    /// A new random key for a server: ES256 when the server's
    /// `dpop_signing_alg_values_supported` lists it or says nothing, else the first of
    /// ``supportedAlgorithms`` the server lists.
    ///
    /// - Throws: `JOSEError.Reason.algorithmNotAllowed` when the server lists none of
    ///   them; `JOSEError.Reason.invalidKey` when key generation fails.
    public static func generate(for metadata: ServerMetadata) throws(JOSEError) -> DPoPKey {
        guard let listed = metadata.dpopSigningAlgValuesSupported, !listed.isEmpty else { return try generate() }
        guard let algorithm = supportedAlgorithms.first(where: { listed.contains($0.rawValue) }) else {
            throw JOSEError(.algorithmNotAllowed, "The server's DPoP algorithms (\(listed.joined(separator: ", "))) are not supported.")
        }
        return try generate(algorithm)
    }

    /// A DPoP key from a signing key (RSA, EC or Ed25519, with the algorithm it signs with).
    ///
    /// - Throws: `JOSEError.Reason.algorithmNotAllowed` for an HMAC key.
    public init(_ signingKey: JWSSigningKey) throws(JOSEError) {
        guard !signingKey.algorithm.isHMAC, let publicKey = signingKey.publicKey else {
            throw JOSEError(.algorithmNotAllowed, "A DPoP key must be asymmetric.")
        }
        self.signingKey = signingKey.withKeyID(nil)
        let required: [String]
        switch publicKey.keyType {
        case "RSA": required = ["e", "kty", "n"]
        case "EC": required = ["crv", "kty", "x", "y"]
        default: required = ["crv", "kty", "x"]
        }
        publicJWK = publicKey.members.filter { required.contains($0.key) }
        thumbprint = publicKey.thumbprint
    }

    /// A key from its private JWK, as ``privateJWK`` wrote it.
    ///
    /// - Throws: what `JWSSigningKey.init(jwk:algorithm:keyID:)` throws;
    ///   `JOSEError.Reason.algorithmNotAllowed` for a symmetric key.
    public init(jwk: [String: JSONValue]) throws(JOSEError) {
        try self.init(try JWSSigningKey(jwk: jwk))
    }

    /// The algorithm the proofs are signed with.
    public var algorithm: JWSAlgorithm { signingKey.algorithm }

    /// The private key as a JWK with its `alg`: what a token store keeps. As secret as the
    /// tokens bound to it.
    public var privateJWK: [String: JSONValue] { signingKey.privateJWK ?? [:] }

    /// A signed proof for one request (see ``DPoPProof``).
    ///
    /// - Parameters:
    ///   - method: the request's method (`htm`).
    ///   - url: the request's URL; `htu` is its normalised form, without query and fragment.
    ///   - accessToken: the access token sent with the request to a resource server, hashed
    ///     into `ath`; `nil` at the authorization server.
    ///   - nonce: the server's latest `DPoP-Nonce`, if it gave one.
    ///   - issuedAt: `iat`.
    /// - Throws: `JOSEError.Reason.invalidKey` when signing fails.
    public func proof(
        method: HTTPRequest.Method, url: URL, accessToken: String? = nil, nonce: String? = nil, issuedAt: Date = Date()
    ) throws(JOSEError) -> String {
        try DPoPProof(method: method, url: url, accessToken: accessToken, nonce: nonce, issuedAt: issuedAt).signed(with: self)
    }

    /// The headers a request needs: `DPoP` with a fresh proof and, when `accessToken` is
    /// given, `Authorization: DPoP <token>`.
    ///
    /// - Throws: `JOSEError.Reason.invalidKey` when signing fails.
    public func headers(
        method: HTTPRequest.Method, url: URL, accessToken: String? = nil, nonce: String? = nil, issuedAt: Date = Date()
    ) throws(JOSEError) -> HTTPFields {
        var fields = HTTPFields()
        fields[.dpop] = try proof(method: method, url: url, accessToken: accessToken, nonce: nonce, issuedAt: issuedAt)
        if let accessToken { fields[.authorization] = "DPoP " + accessToken }
        return fields
    }

    /// Algorithm and thumbprint (both public).
    public var description: String { "DPoPKey(\(algorithm), jkt: \(thumbprint))" }
}

/// The contents of one DPoP proof (RFC 9449 §4.2), before signing: a JWT with
/// `typ: dpop+jwt`, the public key in its `jwk` header, and the claims `jti`, `htm`, `htu`,
/// `iat`, and `ath` and `nonce` when they apply.
public struct DPoPProof: Sendable, Hashable {
    /// The JOSE `typ` of a proof.
    public static let type = "dpop+jwt"

    /// `htm`: the HTTP method.
    public var method: String
    /// `htu`: the target URI, normalised (RFC 9449 §4.3, RFC 3986 §6.2.2–6.2.3) and without
    /// query and fragment. See ``targetURI(for:)``.
    public var targetURI: String
    /// `iat`.
    public var issuedAt: Date
    /// `jti`: unique per proof (128 random bits by default).
    public var id: String
    /// `ath`: the base64url SHA-256 of the access token, for requests to a resource server.
    public var accessTokenHash: String?
    /// `nonce`: the server's latest `DPoP-Nonce`.
    public var nonce: String?

    /// The proof of one request.
    ///
    /// - Parameters:
    ///   - method: the request's method (`htm`).
    ///   - url: the request's URL; `htu` is its normalised form, without query and fragment.
    ///   - accessToken: the access token sent with the request to a resource server, hashed
    ///     into `ath`; `nil` at the authorization server.
    ///   - nonce: the server's latest `DPoP-Nonce`, if it gave one.
    ///   - issuedAt: `iat`.
    ///   - id: the `jti`; a fresh random one by default.
    public init(
        method: HTTPRequest.Method, url: URL, accessToken: String? = nil, nonce: String? = nil, issuedAt: Date = Date(),
        id: String? = nil
    ) {
        self.method = method.rawValue
        targetURI = Self.targetURI(for: url)
        self.issuedAt = issuedAt
        self.id = id ?? SecureRandom.token(byteCount: 16)
        accessTokenHash = accessToken.map(Self.accessTokenHash)
        self.nonce = nonce
    }

    /// The claims set.
    public var claims: [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "jti": .string(id), "htm": .string(method), "htu": .string(targetURI),
            "iat": .integer(Int64(issuedAt.timeIntervalSince1970.rounded(.down))),
        ]
        if let accessTokenHash { claims["ath"] = .string(accessTokenHash) }
        if let nonce { claims["nonce"] = .string(nonce) }
        return claims
    }

    /// The signed proof, in compact form: header `typ`, `alg` and `jwk`.
    ///
    /// - Throws: `JOSEError.Reason.invalidKey` when signing fails.
    public func signed(with key: DPoPKey) throws(JOSEError) -> String {
        try key.signingKey.sign(claims: claims, header: ["typ": .string(Self.type), "jwk": .object(key.publicJWK)])
    }

    /// `htu` for a URL: scheme and host in lower case, the scheme's default port removed,
    /// user info, query and fragment removed, an empty path made `/`, percent-encodings of
    /// unreserved characters decoded and the others in upper case, dot segments removed.
    /// A URL without a host (never a valid DPoP target) is only stripped of its query and
    /// fragment: normalising its path could make part of it read as a host.
    public static func targetURI(for url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true), let scheme = components.scheme?.lowercased() else {
            return url.absoluteString
        }
        // The host as sent on the wire (IDNA, percent-encoded); `percentEncodedHost` would
        // turn punycode back into percent-encoded Unicode, so a second pass would differ.
        guard let host = components.encodedHost, !host.isEmpty else {
            components.percentEncodedQuery = nil
            components.percentEncodedFragment = nil
            return components.string ?? url.absoluteString
        }
        var text = scheme + "://"
        // Lower case, then the percent-encodings (again) in upper case with unreserved
        // characters decoded.
        text += normalisedPercentEncoding(normalisedPercentEncoding(host).lowercased())
        if let port = components.port, !(scheme == "https" && port == 443), !(scheme == "http" && port == 80) {
            text += ":\(port)"
        }
        let path = removingDotSegments(normalisedPercentEncoding(components.percentEncodedPath))
        text += path.isEmpty ? "/" : path
        return text
    }

    /// `ath`: base64url(SHA-256(ASCII(access token))).
    public static func accessTokenHash(_ accessToken: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Data(accessToken.utf8))))
    }

    /// Upper-case hex in percent-encodings; unreserved characters decoded (RFC 3986 §6.2.2.1–2).
    private static func normalisedPercentEncoding(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                let value = high << 4 | low
                if isUnreserved(value) {
                    output.append(value)
                } else {
                    output.append(UInt8(ascii: "%"))
                    output.append(contentsOf: String(format: "%02X", value).utf8)
                }
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// RFC 3986 §5.2.4.
    private static func removingDotSegments(_ path: String) -> String {
        guard path.contains(".") else { return path }
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (position, segment) in segments.enumerated() {
            let last = position == segments.count - 1
            switch segment {
            case ".":
                if last { output.append("") }
            case "..":
                if output.count > 1 { output.removeLast() }
                if last { output.append("") }
            default:
                output.append(segment)
            }
        }
        let joined = output.joined(separator: "/")
        return joined.hasPrefix("/") || joined.isEmpty ? joined : "/" + joined
    }
}

extension HTTPField.Name {
    /// `DPoP`: the proof header (RFC 9449 §4.1).
    package static let dpop = HTTPField.Name("DPoP")!
    /// `DPoP-Nonce`: a server's nonce for the next proofs (RFC 9449 §8).
    package static let dpopNonce = HTTPField.Name("DPoP-Nonce")!
}
