import Foundation
import HTTPTypes

/// Everything the client knows about itself: identity, credentials, redirect URI, default
/// scopes, and the extras some servers need.
///
/// ```swift
/// var configuration = ClientConfiguration(clientID: "my-app", redirectURI: URL(string: "http://127.0.0.1/callback")!)
/// configuration.scopes = ["openid", "profile"]
/// configuration.additionalParameters[.token] = ["audience": "https://api.example.com"]
/// ```
public struct ClientConfiguration: Sendable, CustomStringConvertible {
    /// The client identifier issued by the authorization server.
    public var clientID: String
    /// The client secret, for confidential clients. Never logged, never printed.
    public var clientSecret: String?
    /// The client authentication method. When `nil`, it is chosen from the server's
    /// `token_endpoint_auth_methods_supported`: `none` without a secret, else
    /// `client_secret_basic` when supported (the RFC default), else `client_secret_post`.
    public var authenticationMethod: ClientAuthenticationMethod?
    /// The redirect URI registered for this client.
    public var redirectURI: URL?
    /// The scopes asked for when a call does not name its own.
    public var scopes: [String]
    /// Extra parameters added to every request of a kind (for example `audience` at the
    /// token endpoint). A parameter the library sets itself is never overridden by these.
    public var additionalParameters: [RequestKind: [String: String]]
    /// Extra headers added to every request of a kind.
    public var additionalHeaders: [RequestKind: HTTPFields]
    /// How ID tokens are validated: allowed algorithms, clock leeway, trusted extra
    /// audiences, JWK set caching.
    public var idTokenValidation: IDTokenValidationOptions
    /// The server's deviations from the RFCs the client bends to; none by default.
    public var quirks: ServerQuirks
    /// The client's private key: it signs `private_key_jwt` assertions and, unless
    /// ``RequestObjectOptions/signingKey`` names another, request objects. Never logged.
    /// When set and ``authenticationMethod`` is `nil`, the client uses `private_key_jwt`.
    public var privateKey: JWSSigningKey? = nil
    /// How `client_secret_jwt` and `private_key_jwt` assertions are made (audience,
    /// lifetime, HMAC algorithm).
    public var clientAssertion = ClientAssertionOptions()
    /// DPoP (RFC 9449): when set, every token request (refresh included), pushed
    /// authorization request and UserInfo or ``TokenSession/perform(_:body:)`` request
    /// carries a proof signed with its key, and authorization requests carry `dpop_jkt`.
    public var dpop: DPoPOptions? = nil
    /// Push authorization requests (RFC 9126) even when the server does not require it.
    /// Servers whose metadata says `require_pushed_authorization_requests: true` get pushed
    /// requests whatever this says.
    public var usePushedAuthorizationRequests = false
    /// Send the authorization parameters as a signed request object (JAR, RFC 9101): by
    /// value, or inside the pushed request when requests are pushed; signed, then encrypted
    /// to the server with ``RequestObjectOptions/encryption``. `nil` (the default) sends
    /// them as plain parameters.
    public var requestObject: RequestObjectOptions? = nil
    /// Allow the legacy implicit grant (`response_type=token` and `id_token token`), for
    /// servers that offer nothing better. Off by default: RFC 9700 §2.1.2 advises against
    /// it, as the access token travels in the browser's address (history, extensions,
    /// referrers) and cannot be sender-constrained or refreshed. See
    /// ``OAuth2Client/implicitAuthorizationRequest(_:options:)``.
    public var allowsImplicitGrant = false
    /// Encrypted ID tokens, UserInfo and JWT introspection answers (JWE): the client's
    /// decryption keys and the algorithms it accepts. `nil` (the default) refuses encrypted answers.
    public var encryption: EncryptionOptions? = nil
    /// JWT-secured authorization responses (JARM): when set, every authorization code
    /// request asks for its response mode, and the callback must carry a signed (and
    /// optionally encrypted) `response` JWT; a plain response is refused. `nil` (the default)
    /// asks for a JWT response only when ``AuthorizationOptions/responseMode`` names a JARM
    /// mode (then RS256 is the algorithm).
    public var jarm: JARMOptions? = nil
    /// The transport presents a client certificate (RFC 8705): for certificate-bound access
    /// tokens, or with the `tls_client_auth` and `self_signed_tls_client_auth` methods (which
    /// turn this on whatever it says). Requests then go to the server's
    /// `mtls_endpoint_aliases` when its metadata has them (RFC 8705 §5). The certificate
    /// itself is the transport's (`AsyncHTTPClientTransport.TLSOptions`); a client made with
    /// `URLSessionTransport`, which presents none, is refused with
    /// ``OAuth2Error/Code/invalidConfiguration``.
    public var mutualTLS = false

    /// Whether the client uses mutual TLS: ``mutualTLS``, or an mTLS authentication method.
    var usesMutualTLS: Bool { mutualTLS || (authenticationMethod?.isMutualTLS ?? false) }

    /// Creates a configuration.
    public init(
        clientID: String,
        clientSecret: String? = nil,
        authenticationMethod: ClientAuthenticationMethod? = nil,
        redirectURI: URL? = nil,
        scopes: [String] = [],
        additionalParameters: [RequestKind: [String: String]] = [:],
        additionalHeaders: [RequestKind: HTTPFields] = [:],
        idTokenValidation: IDTokenValidationOptions = IDTokenValidationOptions(),
        quirks: ServerQuirks = []
    ) {
        self.idTokenValidation = idTokenValidation
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.authenticationMethod = authenticationMethod
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.additionalParameters = additionalParameters
        self.additionalHeaders = additionalHeaders
        self.quirks = quirks
    }

    /// Checks what can be checked without a server: a client id, a usable redirect URI
    /// (absolute, no fragment — RFC 6749 §3.1.2), a secret when a secret method is chosen
    /// (`client_secret_basic` without one only with
    /// ``ServerQuirks/basicAuthenticationWithEmptySecret``), an asymmetric ``privateKey`` for
    /// `private_key_jwt`, an HMAC ``ClientAssertionOptions/secretAlgorithm``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` naming what is wrong.
    public func validate() throws(OAuth2Error) {
        guard !clientID.isEmpty else {
            throw .client(.invalidConfiguration, "The client id is empty.")
        }
        if let redirectURI {
            guard redirectURI.scheme != nil, redirectURI.fragment == nil else {
                throw .client(.invalidConfiguration, "The redirect URI must be absolute and have no fragment.")
            }
        }
        if let method = authenticationMethod, method == .clientSecretBasic || method == .clientSecretPost,
            clientSecret?.isEmpty ?? true,
            !(method == .clientSecretBasic && quirks.contains(.basicAuthenticationWithEmptySecret))
        {
            throw .client(.invalidConfiguration, "\(method) needs a client secret.")
        }
        if let privateKey, privateKey.algorithm.isHMAC {
            throw .client(.invalidConfiguration, "The private key must be asymmetric (RSA, EC or Ed25519); an HMAC secret is the client secret.")
        }
        switch authenticationMethod {
        case .privateKeyJWT? where privateKey == nil:
            throw .client(.invalidConfiguration, "private_key_jwt needs a private key.")
        case .clientSecretJWT? where clientSecret?.isEmpty ?? true:
            throw .client(.invalidConfiguration, "client_secret_jwt needs a client secret.")
        default:
            break
        }
        if !clientAssertion.secretAlgorithm.isHMAC {
            throw .client(.invalidConfiguration, "client_secret_jwt signs with HS256, HS384 or HS512, not \(clientAssertion.secretAlgorithm).")
        }
    }

    /// The method to use with a server that supports `supported` (nil: not advertised).
    func resolvedAuthenticationMethod(supported: [String]?) -> ClientAuthenticationMethod {
        if let authenticationMethod { return authenticationMethod }
        if privateKey != nil { return .privateKeyJWT }
        guard let secret = clientSecret, !secret.isEmpty else { return .none }
        guard let supported, !supported.isEmpty else { return .clientSecretBasic }
        if supported.contains(ClientAuthenticationMethod.clientSecretBasic.rawValue) { return .clientSecretBasic }
        if supported.contains(ClientAuthenticationMethod.clientSecretPost.rawValue) { return .clientSecretPost }
        return .clientSecretBasic
    }

    /// The configuration without its secret.
    public var description: String {
        var parts = ["clientID: \(clientID)"]
        if clientSecret != nil { parts.append("clientSecret: \(Redactor.placeholder)") }
        if let authenticationMethod { parts.append("authenticationMethod: \(authenticationMethod)") }
        if let redirectURI { parts.append("redirectURI: \(redirectURI.absoluteString)") }
        if !scopes.isEmpty { parts.append("scopes: \(scopes.joined(separator: " "))") }
        if !quirks.isEmpty { parts.append("quirks: \(quirks)") }
        if let privateKey { parts.append("privateKey: \(privateKey.algorithm) \(Redactor.placeholder)") }
        if let dpop { parts.append("dpop: \(dpop.key.algorithm)") }
        if usePushedAuthorizationRequests { parts.append("pushedAuthorizationRequests: true") }
        if let requestObject { parts.append(requestObject.encryption == nil ? "requestObject: signed" : "requestObject: signed, encrypted") }
        if allowsImplicitGrant { parts.append("implicitGrant: allowed") }
        if let encryption { parts.append("encryption: \(encryption.decryptionKeys.count) key(s) \(Redactor.placeholder)") }
        if let jarm { parts.append("jarm: \(jarm.responseMode) \(jarm.signingAlgorithm)") }
        if mutualTLS { parts.append("mutualTLS: true") }
        return "ClientConfiguration(\(parts.joined(separator: ", ")))"
    }
}
