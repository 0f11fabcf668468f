import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// The access-token check of an API (an OAuth 2.0 resource server), independent of any web
/// framework: it reads an `HTTPRequest` (its `Authorization` and `DPoP` header fields, method
/// and path) and answers with the verified token or with the response to send.
///
/// ```swift
/// let server = ResourceServer(
///     accessTokens: AccessTokenVerifier(issuers: [issuer]),
///     dpop: DPoPProofVerifier(publicBaseURL: URL(string: "https://api.example.com")!))
/// switch await server.authorize(request, requiredScopes: ["orders:read"]) {
/// case .authorized(let access): // access.token.subject, access.responseHeaderFields
/// case .refused(let challenge): // respond with challenge.status and challenge.headerFields
/// }
/// ```
///
/// - A JWT-shaped token (a compact JWS) goes to ``accessTokens``; any other token to
///   ``introspection``. With only one of them, every token goes to it.
/// - `Authorization: Bearer <token>` (RFC 6750 §2.1) is accepted unless
///   ``acceptsBearerTokens`` is off; a token bound to a DPoP key (`cnf.jkt`) is never
///   accepted as a bearer token.
/// - `Authorization: DPoP <token>` with one `DPoP` proof header (RFC 9449 §7) is accepted
///   when ``dpop`` is set: the proof is checked (see ``DPoPProofVerifier``), then the token,
///   which must be bound to the proof's key; its `jti` is recorded last.
/// - A token bound to a client certificate (`cnf.x5t#S256`, RFC 8705 §3) is accepted only
///   when ``clientCertificates`` names where the request's certificate is found and that
///   certificate's SHA-256 thumbprint is the token's; without a source it is refused.
/// - A token in the URL query (`access_token`, RFC 6750 §2.3) is refused.
/// - A request without a token, or with another scheme (`Basic`), gets bare challenges.
/// - Every challenge names the scopes the route requires (`scope`).
///
/// With a ``ProtectedResource`` (``init(resource:accessTokens:introspection:dpop:acceptsBearerTokens:clientCertificates:realm:logger:)``)
/// it is an RFC 9728 protected resource: ``metadataResponse(for:)`` answers the metadata
/// document at ``ProtectedResource/metadataURL``, every challenge names that URL
/// (`resource_metadata`), and a token whose `aud` names ``ProtectedResource/identifier`` is
/// accepted (a token for another resource is not).
///
/// Tokens and proofs never reach a log line or an error message.
public struct ResourceServer: Sendable {
    /// What ``authorize(_:clientCertificate:requiredScopes:requiredAuthorizationDetails:)`` answers.
    public enum Decision: Sendable {
        /// The request may proceed.
        case authorized(AuthorizedRequest)
        /// The request is refused; send the challenge's status and header fields.
        case refused(AccessTokenChallenge)
    }

    /// A request whose access token passed every check.
    public struct AuthorizedRequest: Sendable {
        /// What the token grants.
        public let token: VerifiedAccessToken
        /// How it was presented.
        public let scheme: AccessTokenScheme
        /// Header fields to add to the response: a fresh `DPoP-Nonce` when the client used
        /// an older one that is still accepted (RFC 9449 §8.2).
        public let responseHeaderFields: HTTPFields
    }

    /// The verifier of JWT access tokens, if the API accepts them.
    public let accessTokens: AccessTokenVerifier?
    /// The introspector of opaque tokens, if the API accepts them.
    public let introspection: TokenIntrospector?
    /// The DPoP proof verifier, if the API accepts DPoP-bound tokens.
    public let dpop: DPoPProofVerifier?
    /// Whether `Bearer` tokens are accepted (an API may require DPoP).
    public let acceptsBearerTokens: Bool
    /// Where the client certificate of a request is found, to check certificate-bound
    /// tokens (RFC 8705 §3); `nil` (the default) refuses them.
    public let clientCertificates: ClientCertificateSource?
    /// The `realm` of the challenges, if any.
    public let realm: String?
    /// The protected resource this server guards (RFC 9728), if configured.
    public let resource: ProtectedResource?
    /// The metadata document served for ``resource`` (RFC 9728 §2), built once when the
    /// server is made.
    public var metadata: ProtectedResourceMetadata? { publication?.metadata }
    private let publication: MetadataPublication?
    private let logger: Logger

    /// The longest `Authorization` header value read, in bytes.
    public static let maximumAuthorizationLength = 64 * 1024 + 16

    /// Creates a resource server.
    ///
    /// - Parameters:
    ///   - accessTokens: verifies JWT access tokens.
    ///   - introspection: checks other tokens at the introspection endpoint.
    ///   - dpop: checks DPoP proofs; `nil` refuses the DPoP scheme.
    ///   - acceptsBearerTokens: `false` to require DPoP.
    ///   - clientCertificates: where a request's client certificate is found, to accept
    ///     certificate-bound tokens (RFC 8705); `nil` refuses them.
    ///   - realm: the challenges' `realm`.
    ///   - logger: where refusals are logged at debug level (codes and reasons only).
    public init(
        accessTokens: AccessTokenVerifier? = nil, introspection: TokenIntrospector? = nil, dpop: DPoPProofVerifier? = nil,
        acceptsBearerTokens: Bool = true, clientCertificates: ClientCertificateSource? = nil, realm: String? = nil,
        logger: Logger = Logger(label: "swift-oauth2.resource-server")
    ) {
        self.accessTokens = accessTokens
        self.introspection = introspection
        self.dpop = dpop
        self.acceptsBearerTokens = acceptsBearerTokens || dpop == nil
        self.clientCertificates = clientCertificates
        self.realm = realm
        self.logger = logger
        resource = nil
        publication = nil
    }

    /// Creates the resource server of a protected resource (RFC 9728): it serves the
    /// resource's metadata (``metadataResponse(for:)``), names it in its challenges, and
    /// accepts tokens whose `aud` names the resource's identifier.
    ///
    /// The metadata document is built here, once, from `resource` and this server's settings:
    /// `resource`, `authorization_servers` (``ProtectedResource/authorizationServers``, else
    /// the issuers of `accessTokens` and `introspection`), `scopes_supported`,
    /// `bearer_methods_supported` (`header`: tokens are read from the `Authorization` header
    /// only), `dpop_signing_alg_values_supported` and `dpop_bound_access_tokens_required`
    /// with `dpop`, `tls_client_certificate_bound_access_tokens` with `clientCertificates`,
    /// `resource_name`, `resource_documentation`, and `signed_metadata` when
    /// ``ProtectedResource/signature`` is set.
    ///
    /// - Parameters:
    ///   - resource: the protected resource.
    ///   - accessTokens: verifies JWT access tokens.
    ///   - introspection: checks other tokens at the introspection endpoint.
    ///   - dpop: checks DPoP proofs; `nil` refuses the DPoP scheme.
    ///   - acceptsBearerTokens: `false` to require DPoP.
    ///   - clientCertificates: where a request's client certificate is found, to accept
    ///     certificate-bound tokens (RFC 8705); `nil` refuses them.
    ///   - realm: the challenges' `realm`.
    ///   - logger: where refusals are logged at debug level (codes and reasons only).
    /// - Throws: `OAuth2Error.Code.invalidConfiguration` when there is no authorization
    ///   server to advertise (MCP clients need one), or the metadata cannot be signed.
    public init(
        resource: ProtectedResource, accessTokens: AccessTokenVerifier? = nil, introspection: TokenIntrospector? = nil,
        dpop: DPoPProofVerifier? = nil, acceptsBearerTokens: Bool = true, clientCertificates: ClientCertificateSource? = nil,
        realm: String? = nil, logger: Logger = Logger(label: "swift-oauth2.resource-server")
    ) throws(OAuth2Error) {
        publication = try MetadataPublication(
            resource: resource, accessTokens: accessTokens, introspection: introspection, dpop: dpop,
            acceptsBearerTokens: acceptsBearerTokens || dpop == nil, certificateBoundTokens: clientCertificates != nil)
        self.accessTokens = accessTokens
        self.introspection = introspection
        self.dpop = dpop
        self.acceptsBearerTokens = acceptsBearerTokens || dpop == nil
        self.clientCertificates = clientCertificates
        self.realm = realm
        self.logger = logger
        self.resource = resource
    }

    // MARK: - Metadata (RFC 9728)

    /// Answers a request for the resource's metadata (RFC 9728 §3): `nil` unless
    /// ``resource`` is set and the request's path (without its query) is the path of
    /// ``ProtectedResource/metadataURL``; then 200 with the JSON document for `GET` (and
    /// its head for `HEAD`), 204 with CORS header fields for an `OPTIONS` preflight, 405
    /// for any other method.
    ///
    /// It costs no store lookup and no I/O: the document was built when the server was
    /// made, from its configuration; nothing of the request (its `Host`, say) goes into it.
    /// The answer may be cached for an hour (`Cache-Control: public, max-age=3600`) and
    /// read from any origin (`Access-Control-Allow-Origin: *`: the document is public,
    /// and browser-based clients fetch it).
    public func metadataResponse(for request: HTTPRequest) -> WebResponse? {
        guard let publication, let path = request.path else { return nil }
        let requested = path.firstIndex(of: "?").map { path[..<$0] } ?? path[...]
        guard requested == publication.path else { return nil }
        switch request.method {
        case .get:
            return WebResponse(status: .ok, headerFields: MetadataPublication.headerFields, body: publication.body)
        case .head:
            return WebResponse(status: .ok, headerFields: MetadataPublication.headerFields)
        case .options:
            return WebResponse(status: .noContent, headerFields: [
                .accessControlAllowOrigin: "*", .accessControlAllowMethods: "GET, HEAD, OPTIONS", .accessControlAllowHeaders: "*",
                .accessControlMaxAge: "86400",
            ])
        default:
            return WebResponse(status: .methodNotAllowed, headerFields: [.allow: "GET, HEAD, OPTIONS", .cacheControl: "no-store"])
        }
    }

    /// The schemes offered in challenges, the preferred first.
    public var schemes: [AccessTokenScheme] {
        var schemes: [AccessTokenScheme] = []
        if dpop != nil { schemes.append(.dpop) }
        if acceptsBearerTokens { schemes.insert(.bearer, at: 0) }
        return schemes
    }

    /// Checks a request's access token and that it grants `requiredScopes` and
    /// `requiredAuthorizationDetails` (RFC 9396; see `AuthorizationDetail/covers(_:)`).
    ///
    /// Never throws: a refusal is a ``Decision/refused(_:)`` with the response to send.
    /// A refusal's challenge names `requiredScopes` (`scope`) whatever the error.
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - clientCertificate: the DER certificate the client presented on the TLS
    ///     connection, read when ``clientCertificates`` is ``ClientCertificateSource/connection``.
    ///   - requiredScopes: the scopes the route requires.
    ///   - requiredAuthorizationDetails: the authorization details (RFC 9396) the token must cover.
    public func authorize(
        _ request: HTTPRequest, clientCertificate: [UInt8]? = nil, requiredScopes: [String] = [],
        requiredAuthorizationDetails: [AuthorizationDetail] = []
    ) async -> Decision {
        do {
            return .authorized(try await verify(
                request, clientCertificate: clientCertificate, requiredScopes: requiredScopes,
                requiredAuthorizationDetails: requiredAuthorizationDetails))
        } catch {
            logger.debug("Request refused", metadata: ["code": "\(error.code)", "reason": "\(error.reason)"])
            return .refused(challenge(for: error))
        }
    }

    /// The response to a refusal: ``AccessTokenChallenge`` for this server's schemes,
    /// realm, proof algorithms and, with a ``resource``, its metadata's URL.
    public func challenge(for error: AccessTokenError) -> AccessTokenChallenge {
        AccessTokenChallenge(
            error: error, schemes: schemes, realm: realm, dpopAlgorithms: dpop?.allowedAlgorithms ?? [], resourceMetadata: resource?.metadataURL)
    }

    /// Checks a request's access token and that it grants `requiredScopes` and
    /// `requiredAuthorizationDetails` (RFC 9396: the token's `authorization_details`, from its
    /// JWT claims or its introspection answer, must cover each; see
    /// `AuthorizationDetail/covers(_:)`).
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - clientCertificate: the DER certificate the client presented on the TLS
    ///     connection, read when ``clientCertificates`` is ``ClientCertificateSource/connection``.
    ///   - requiredScopes: the scopes the route requires.
    ///   - requiredAuthorizationDetails: the authorization details the token must cover.
    /// - Throws: ``AccessTokenError`` with its ``AccessTokenError/scheme`` set, and its
    ///   ``AccessTokenError/requiredScopes`` (when empty) set to `requiredScopes`; turn it
    ///   into a response with ``challenge(for:)``. Details not covered are
    ///   ``AccessTokenError/Code/insufficientScope`` with the reason
    ///   ``AccessTokenError/Reason/missingAuthorizationDetails``.
    public func verify(
        _ request: HTTPRequest, clientCertificate: [UInt8]? = nil, requiredScopes: [String] = [],
        requiredAuthorizationDetails: [AuthorizationDetail] = []
    ) async throws(AccessTokenError) -> AuthorizedRequest {
        var scheme: AccessTokenScheme?
        do throws(AccessTokenError) {
            let credentials = try Self.credentials(in: request)
            scheme = credentials?.scheme
            guard let credentials else { throw AccessTokenError(.missingToken, reason: .missingToken, "The request has no access token.") }
            switch credentials.scheme {
            case .dpop:
                let authorized = try await verifyDPoP(request, token: credentials.token, clientCertificate: clientCertificate, requiredScopes: requiredScopes)
                try authorized.token.requireAuthorizationDetails(requiredAuthorizationDetails)
                return authorized
            default:
                guard acceptsBearerTokens else {
                    throw AccessTokenError.invalidToken(.bindingMismatch, "This API accepts DPoP-bound access tokens only.")
                }
                let token = try await verifyToken(credentials.token)
                guard !token.isDPoPBound else {
                    throw AccessTokenError.invalidToken(.bindingMismatch, "The access token is DPoP-bound: send it with the DPoP scheme and a proof.")
                }
                try checkCertificateBinding(of: token, request: request, connection: clientCertificate)
                try token.requireScopes(requiredScopes)
                try token.requireAuthorizationDetails(requiredAuthorizationDetails)
                return AuthorizedRequest(token: token, scheme: .bearer, responseHeaderFields: [:])
            }
        } catch {
            var error = error
            error.scheme = scheme
            if error.requiredScopes.isEmpty { error.requiredScopes = requiredScopes }
            throw error
        }
    }

    private func verifyDPoP(
        _ request: HTTPRequest, token: String, clientCertificate: [UInt8]?, requiredScopes: [String]
    ) async throws(AccessTokenError) -> AuthorizedRequest {
        guard let dpop else { throw AccessTokenError(.invalidRequest, reason: .bindingMismatch, "This API does not accept DPoP.") }
        let proofs = request.headerFields[values: .dpop]
        guard proofs.count == 1, let proof = proofs.first else {
            throw AccessTokenError.invalidProof(.missingClaim, proofs.isEmpty ? "The request has no DPoP proof." : "The request has several DPoP proofs.")
        }
        let checked = try dpop.check(proof, method: request.method, path: request.path ?? "", accessToken: token)
        let verified = try await verifyToken(token)
        guard let bound = verified.confirmationThumbprint else {
            throw AccessTokenError.invalidToken(.bindingMismatch, "The access token is not DPoP-bound.")
        }
        guard constantTimeEquals(bound, checked.thumbprint) else {
            throw AccessTokenError.invalidToken(.confirmationMismatch, "The access token is bound to another key than the DPoP proof's.")
        }
        try checkCertificateBinding(of: verified, request: request, connection: clientCertificate)
        try verified.requireScopes(requiredScopes)
        try await dpop.recordUse(checked)
        var fields = HTTPFields()
        if let nonce = checked.nextNonce { fields[.dpopNonce] = nonce }
        return AuthorizedRequest(token: verified, scheme: .dpop, responseHeaderFields: fields)
    }

    /// For a certificate-bound token (`cnf.x5t#S256`), checks that the request presents that
    /// certificate (RFC 8705 §3): read from ``clientCertificates`` only, compared in
    /// constant time. Nothing for any other token.
    func checkCertificateBinding(of token: VerifiedAccessToken, request: HTTPRequest, connection: [UInt8]?) throws(AccessTokenError) {
        guard let bound = token.certificateThumbprint else { return }
        guard let clientCertificates else {
            throw AccessTokenError.invalidToken(.bindingMismatch, "The access token is bound to a client certificate, which this API does not read.")
        }
        guard let certificate = try clientCertificates.certificate(of: request, connection: connection) else {
            throw AccessTokenError.invalidToken(.bindingMismatch, "The access token is bound to a client certificate, and the request presented none.")
        }
        guard constantTimeEquals(ClientCertificateSource.thumbprint(ofDER: certificate), bound) else {
            throw AccessTokenError.invalidToken(.confirmationMismatch, "The access token is bound to another client certificate than the request's.")
        }
    }

    /// Verifies a token by its shape: JWS to ``accessTokens``, else ``introspection``. With a
    /// ``resource``, an `aud` naming its identifier names this API too.
    public func verifyToken(_ token: String) async throws(AccessTokenError) -> VerifiedAccessToken {
        if let accessTokens, introspection == nil || Self.isCompactJWS(token) {
            return try await accessTokens.verify(token, resource: resource)
        }
        if let introspection { return try await introspection.verify(token, resource: resource) }
        throw AccessTokenError.invalidToken(.unsupportedFormat, "This API cannot check access tokens.")
    }

    /// Three dot-separated parts.
    static func isCompactJWS(_ token: String) -> Bool {
        token.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: ".") ? 1 : 0) } == 2
    }

    /// The scheme and token of the `Authorization` header, `nil` when there is none or it
    /// uses another scheme.
    ///
    /// - Throws: ``AccessTokenError/Code/invalidRequest`` for several `Authorization` fields,
    ///   a malformed credential, or a token in the URL query.
    package static func credentials(in request: HTTPRequest) throws(AccessTokenError) -> (scheme: AccessTokenScheme, token: String)? {
        if let path = request.path, let query = path.firstIndex(of: "?") {
            let parameters = path[path.index(after: query)...].split(separator: "&")
            if parameters.contains(where: { $0 == "access_token" || $0.hasPrefix("access_token=") }) {
                throw AccessTokenError(.invalidRequest, reason: .unsupportedFormat, "Access tokens are not accepted in the URL.")
            }
        }
        let values = request.headerFields[values: .authorization]
        guard let value = values.first else { return nil }
        guard values.count == 1 else { throw AccessTokenError(.invalidRequest, reason: .malformed, "The request has several Authorization headers.") }
        guard value.utf8.count <= maximumAuthorizationLength else {
            throw AccessTokenError(.invalidRequest, reason: .malformed, "The Authorization header is too long.")
        }
        let trimmed = value.drop(while: { $0 == " " })
        let name = trimmed.prefix(while: { $0 != " " })
        let scheme: AccessTokenScheme
        switch name.lowercased() {
        case "bearer": scheme = .bearer
        case "dpop": scheme = .dpop
        default: return nil
        }
        let token = trimmed.dropFirst(name.count).drop(while: { $0 == " " })
        guard isToken68(token) else {
            throw AccessTokenError(.invalidRequest, reason: .malformed, "The Authorization header's credential is malformed.")
        }
        return (scheme, String(token))
    }

    /// token68 (RFC 9110 §11.2): `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    static func isToken68(_ text: Substring) -> Bool {
        var sawPadding = false
        var count = 0
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "="):
                guard count > 0 else { return false }
                sawPadding = true
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                guard !sawPadding else { return false }
            default:
                return false
            }
            count += 1
        }
        return count > 0
    }
}

/// The metadata document of a ``ResourceServer``'s ``ProtectedResource``, built and encoded
/// once.
private final class MetadataPublication: Sendable {
    let metadata: ProtectedResourceMetadata
    let body: [UInt8]
    let path: String

    static let headerFields: HTTPFields = [
        .contentType: "application/json", .cacheControl: "public, max-age=3600", .accessControlAllowOrigin: "*",
    ]

    init(
        resource: ProtectedResource, accessTokens: AccessTokenVerifier?, introspection: TokenIntrospector?, dpop: DPoPProofVerifier?,
        acceptsBearerTokens: Bool, certificateBoundTokens: Bool
    ) throws(OAuth2Error) {
        var servers = resource.authorizationServers
        if servers.isEmpty {
            for issuer in (accessTokens?.issuers.map(\.issuer) ?? []) + [introspection?.issuer].compactMap({ $0 }) where !servers.contains(issuer) {
                servers.append(issuer)
            }
        }
        guard !servers.isEmpty else {
            throw OAuth2Error(
                .invalidConfiguration, source: .client,
                message: "The protected resource names no authorization server, and the resource server trusts no issuer (RFC 9728 §2).")
        }
        var fields = resource.additionalFields
        fields["resource"] = .string(resource.identifier.absoluteString)
        fields["authorization_servers"] = .array(servers.map(JSONValue.string))
        fields["bearer_methods_supported"] = ["header"]
        if let scopes = resource.scopesSupported { fields["scopes_supported"] = .array(scopes.map(JSONValue.string)) }
        if let dpop {
            fields["dpop_signing_alg_values_supported"] = .array(dpop.allowedAlgorithms.map { .string($0.rawValue) })
            fields["dpop_bound_access_tokens_required"] = .bool(!acceptsBearerTokens)
        }
        if certificateBoundTokens { fields["tls_client_certificate_bound_access_tokens"] = .bool(true) }
        if let name = resource.name { fields["resource_name"] = .string(name) }
        if let documentation = resource.documentation { fields["resource_documentation"] = .string(documentation.absoluteString) }
        fields["signed_metadata"] = nil
        if let signature = resource.signature {
            var claims = fields
            claims["iss"] = .string(signature.issuer)
            do {
                fields["signed_metadata"] = .string(try signature.key.sign(claims: claims))
            } catch {
                throw OAuth2Error(.invalidConfiguration, source: .client, message: "The protected resource metadata cannot be signed: \(error.reason).")
            }
        }
        metadata = try ProtectedResourceMetadata(fields: fields)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            body = Array(try encoder.encode(metadata))
        } catch {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The protected resource metadata cannot be encoded.")
        }
        path = resource.metadataPath
    }
}

