import Foundation
import OAuth2
import OAuth2JOSE

/// One authorization server whose JWT access tokens an API accepts: its issuer identifier,
/// the audiences that name this API, where its keys come from, and how strictly its tokens
/// are read.
///
/// ```swift
/// let issuer = try TrustedIssuer(
///     issuer: "https://id.example.com",
///     audiences: ["https://api.example.com"],
///     keys: .jwks(URL(string: "https://id.example.com/jwks")!))
/// ```
public struct TrustedIssuer: Sendable {
    /// Where an issuer's public keys come from.
    public struct KeySource: Sendable {
        enum Storage: Sendable {
            case fixed(JSONWebKeySet)
            case cache(JWKSCache)
        }

        let storage: Storage

        /// A fixed key set (configured, or read from a file): never refetched.
        public static func fixed(_ keys: JSONWebKeySet) -> KeySource { KeySource(storage: .fixed(keys)) }

        /// A JWK set cache that is already there, e.g. an `OAuth2Client`'s
        /// `OAuth2Client.keySet`: the API and the client then share one cache.
        public static func cache(_ cache: JWKSCache) -> KeySource { KeySource(storage: .cache(cache)) }

        /// The issuer's `jwks_uri`, fetched through `environment` and cached (see
        /// `JWKSCache`): refetched when it expires and when a token names a `kid` the
        /// cached set lacks, at most once per `JWKSCache.Policy.minimumRefetchInterval`.
        ///
        /// - Throws: `OAuth2Error.Code.insecureEndpoint` unless `url` is HTTPS (or loopback).
        #if URLSession
        public static func jwks(
            _ url: URL, environment: HTTPEnvironment = HTTPEnvironment(), policy: JWKSCache.Policy = JWKSCache.Policy()
        ) throws(OAuth2Error) -> KeySource {
            KeySource(storage: .cache(try JWKSCache(url: url, policy: policy, environment: environment)))
        }
        #else
        public static func jwks(_ url: URL, environment: HTTPEnvironment, policy: JWKSCache.Policy = JWKSCache.Policy()) throws(OAuth2Error) -> KeySource {
            KeySource(storage: .cache(try JWKSCache(url: url, policy: policy, environment: environment)))
        }
        #endif
    }

    /// The `iss` the tokens carry, compared exactly.
    public var issuer: String { storage.issuer }
    /// The audiences that name this API: a token's `aud` must contain at least one (an
    /// empty set accepts no token; there is no "any audience").
    public var audiences: Set<String> { storage.audiences }
    /// Where the keys come from.
    public var keys: KeySource { storage.keys }
    /// The signature algorithms accepted: asymmetric ones only. `none` and the HMAC
    /// algorithms are removed whatever is configured: a resource server holds no secret
    /// shared with the issuer, and an HMAC "verified" with a public key proves nothing.
    public var allowedAlgorithms: [JWSAlgorithm] { storage.allowedAlgorithms }
    /// The clock tolerance for `exp`, `nbf` and `iat`, in seconds.
    public var leeway: TimeInterval { storage.leeway }

    private let storage: Storage

    /// The settings in one object: the verifier looks an issuer up for every token, and a
    /// copy then costs one reference count, not one per setting.
    private final class Storage: Sendable {
        let issuer: String
        let audiences: Set<String>
        let keys: KeySource
        let allowedAlgorithms: [JWSAlgorithm]
        let leeway: TimeInterval

        init(issuer: String, audiences: Set<String>, keys: KeySource, allowedAlgorithms: [JWSAlgorithm], leeway: TimeInterval) {
            self.issuer = issuer
            self.audiences = audiences
            self.keys = keys
            self.allowedAlgorithms = allowedAlgorithms
            self.leeway = leeway
        }
    }

    /// The default algorithms: RS256 (which RFC 9068 §4 requires), PS256, ES256, EdDSA and
    /// the larger RSA and EC ones.
    public static let defaultAlgorithms: [JWSAlgorithm] = JWSAlgorithm.asymmetric

    /// Creates a trusted issuer.
    ///
    /// - Parameters:
    ///   - issuer: the `iss` its tokens carry.
    ///   - audiences: the audiences that name this API (a token must name one; none: every
    ///     token is refused).
    ///   - keys: where its public keys come from.
    ///   - allowedAlgorithms: the algorithms to accept (`none` and HMAC are removed).
    ///   - leeway: the clock tolerance in seconds (60 by default).
    public init(
        issuer: String, audiences: Set<String>, keys: KeySource, allowedAlgorithms: [JWSAlgorithm] = TrustedIssuer.defaultAlgorithms,
        leeway: TimeInterval = 60
    ) {
        storage = Storage(
            issuer: issuer, audiences: audiences, keys: keys, allowedAlgorithms: allowedAlgorithms.filter { JWSAlgorithm.asymmetric.contains($0) },
            leeway: leeway)
    }
}
