import Crypto
import Foundation
import OAuth2JOSE

/// Everything that makes one downstream token different from another: the user's session,
/// the grant, the authorization server and client, the audiences, resources and scopes asked
/// for, the requested token type, the actor, and the DPoP key the token is bound to.
///
/// A cache that leaves one of these out hands a caller a token made for another request —
/// with other scopes, for another audience, bound to another key. ``DownstreamTokens`` keys
/// its entries by this whole value. Audiences, resources and scopes are sets: their order and
/// repetitions do not make another key.
///
/// The actor is kept as the SHA-256 of its token and type, never the token itself; the key
/// holds no secret, and its ``description`` and ``storageID`` can be logged.
public struct DownstreamTokenKey: Hashable, Sendable, CustomStringConvertible {
    /// How the token is obtained.
    public struct Grant: RawRepresentable, Hashable, Sendable {
        /// The grant's name.
        public let rawValue: String
        /// A grant by name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Token exchange (RFC 8693): the user's token traded for one for another audience.
        public static let tokenExchange = Grant(rawValue: "urn:ietf:params:oauth:grant-type:token-exchange")
        /// Client credentials (RFC 6749 §4.4): the service's own token.
        public static let clientCredentials = Grant(rawValue: "client_credentials")
    }

    /// The user's session the token acts for (for a web app, `WebSessionRecord.account`);
    /// `nil` for the service's own tokens (client credentials), which no sign-out ends.
    public let session: String?
    /// The grant.
    public let grant: Grant
    /// The authorization server (its issuer, else its token endpoint).
    public let issuer: String
    /// The client that asks.
    public let clientID: String
    /// `audience`: sorted, without repetitions.
    public let audiences: [String]
    /// `resource`: absolute URIs, sorted, without repetitions.
    public let resources: [String]
    /// `scope`: sorted, without repetitions.
    public let scopes: [String]
    /// `requested_token_type`, if one is asked for.
    public let requestedTokenType: TokenTypeURI?
    /// The SHA-256 (base64url) of the actor token and its type, for delegation; `nil` without an actor.
    public let actorDigest: String?
    /// The RFC 7638 thumbprint of the DPoP key the token is bound to; `nil` for a bearer token.
    public let dpopThumbprint: String?
    /// The SHA-256 (base64url) of every field: the key's name in a shared store, and what its
    /// fleet lock is taken on.
    public let storageID: String

    /// A key of every parameter that changes the token.
    ///
    /// - Parameters:
    ///   - session: the user's session; `nil` for the service's own tokens.
    ///   - grant: the grant.
    ///   - issuer: the authorization server's issuer (or token endpoint).
    ///   - clientID: the client that asks.
    ///   - audiences: `audience` values.
    ///   - resources: `resource` values.
    ///   - scopes: `scope` values.
    ///   - requestedTokenType: `requested_token_type`.
    ///   - actor: the actor token of a delegation (only its digest is kept).
    ///   - dpopThumbprint: the thumbprint of the DPoP key the token is bound to.
    public init(
        session: String?, grant: Grant, issuer: String, clientID: String, audiences: [String] = [], resources: [URL] = [],
        scopes: [String] = [], requestedTokenType: TokenTypeURI? = nil, actor: TokenExchangeRequest.Token? = nil,
        dpopThumbprint: String? = nil
    ) {
        self.session = session
        self.grant = grant
        self.issuer = issuer
        self.clientID = clientID
        self.audiences = Array(Set(audiences)).sorted()
        self.resources = Array(Set(resources.map(\.absoluteString))).sorted()
        self.scopes = Array(Set(scopes)).sorted()
        self.requestedTokenType = requestedTokenType
        self.actorDigest = actor.map { Self.digest([$0.type.rawValue, $0.value]) }
        self.dpopThumbprint = dpopThumbprint
        var fields: [String] = [session.map { "s" + $0 } ?? "-", grant.rawValue, issuer, clientID]
        fields.append(String(self.audiences.count))
        fields += self.audiences
        fields.append(String(self.resources.count))
        fields += self.resources
        fields.append(String(self.scopes.count))
        fields += self.scopes
        fields += [requestedTokenType.map { "t" + $0.rawValue } ?? "-", actorDigest ?? "-", dpopThumbprint ?? "-"]
        self.storageID = Self.digest(fields)
    }

    /// The key of the user session `session` in a shared store: the SHA-256 (base64url) of it,
    /// so that a store's rows do not name sessions.
    public static func sessionID(_ session: String) -> String { digest(["swift-oauth2 downstream session", session]) }

    /// Length-prefixed SHA-256, base64url: no two different lists give the same bytes.
    static func digest(_ parts: [String]) -> String {
        var hasher = SHA256()
        for part in parts {
            withUnsafeBytes(of: UInt32(part.utf8.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: Data(part.utf8))
        }
        return Base64URL.encode(Array(hasher.finalize()))
    }

    /// The grant, issuer, client, targets, scopes and token type; the session and actor only
    /// as digests.
    public var description: String {
        var parts = ["grant: \(grant.rawValue)", "issuer: \(issuer)", "client: \(clientID)"]
        if !audiences.isEmpty { parts.append("audiences: \(audiences)") }
        if !resources.isEmpty { parts.append("resources: \(resources)") }
        if !scopes.isEmpty { parts.append("scopes: \(scopes.joined(separator: " "))") }
        if let requestedTokenType { parts.append("requestedTokenType: \(requestedTokenType)") }
        if actorDigest != nil { parts.append("actor: yes") }
        if let dpopThumbprint { parts.append("dpop: \(dpopThumbprint)") }
        return "DownstreamTokenKey(\(storageID.prefix(12)); \(parts.joined(separator: ", ")))"
    }
}
