import Foundation

/// Authorization-server metadata: RFC 8414 and OpenID Connect Discovery 1.0 in one value.
///
/// Every registered member has a typed property; members the library does not know are
/// kept (``fields`` holds the whole document), so nothing a newer server publishes is lost.
/// Decoding checks the type of every known member: a `token_endpoint` that is a number
/// or an endpoint that is not a URL is an error, not a silent `nil`.
///
/// Build one by hand for servers without discovery (GitHub, Facebook…):
/// ```swift
/// let github = ServerMetadata(
///     issuer: URL(string: "https://github.com")!,
///     authorizationEndpoint: URL(string: "https://github.com/login/oauth/authorize")!,
///     tokenEndpoint: URL(string: "https://github.com/login/oauth/access_token")!)
/// ```
public struct ServerMetadata: Sendable, Hashable, Codable {
    /// The whole document, known and unknown members alike.
    public private(set) var fields: [String: JSONValue]

    /// Decodes and type-checks a metadata document.
    /// - Throws: ``OAuth2Error/Code/invalidResponse`` when a known member has the wrong
    ///   type or an endpoint is not an absolute URL.
    public init(fields: [String: JSONValue]) throws(OAuth2Error) {
        for (name, kind) in Self.knownFields {
            guard let value = fields[name], value != .null else { continue }
            guard kind.accepts(value) else {
                throw .invalidResponse("The metadata member \(name) is not a \(kind).")
            }
        }
        self.fields = fields
    }

    /// Builds metadata by hand, for servers that publish none.
    public init(
        issuer: URL? = nil,
        authorizationEndpoint: URL? = nil,
        tokenEndpoint: URL? = nil,
        revocationEndpoint: URL? = nil,
        introspectionEndpoint: URL? = nil,
        userInfoEndpoint: URL? = nil,
        deviceAuthorizationEndpoint: URL? = nil,
        registrationEndpoint: URL? = nil,
        jwksURI: URL? = nil,
        endSessionEndpoint: URL? = nil,
        tokenEndpointAuthMethodsSupported: [String]? = nil,
        additionalFields: [String: JSONValue] = [:]
    ) {
        var fields = additionalFields
        func set(_ name: String, _ url: URL?) { if let url { fields[name] = .string(url.absoluteString) } }
        set("issuer", issuer)
        set("authorization_endpoint", authorizationEndpoint)
        set("token_endpoint", tokenEndpoint)
        set("revocation_endpoint", revocationEndpoint)
        set("introspection_endpoint", introspectionEndpoint)
        set("userinfo_endpoint", userInfoEndpoint)
        set("device_authorization_endpoint", deviceAuthorizationEndpoint)
        set("registration_endpoint", registrationEndpoint)
        set("jwks_uri", jwksURI)
        set("end_session_endpoint", endSessionEndpoint)
        if let tokenEndpointAuthMethodsSupported {
            fields["token_endpoint_auth_methods_supported"] = .array(tokenEndpointAuthMethodsSupported.map(JSONValue.string))
        }
        self.fields = fields
    }

    /// Decodes a metadata document from JSON.
    public init(from decoder: any Decoder) throws {
        let fields = try [String: JSONValue](from: decoder)
        try self.init(fields: fields)
    }

    /// Encodes the whole document, unknown members included.
    public func encode(to encoder: any Encoder) throws {
        try fields.encode(to: encoder)
    }

    /// This document with the members it lacks taken from `other` (its own members win).
    public func filling(from other: ServerMetadata) -> ServerMetadata {
        var copy = self
        copy.fields.merge(other.fields) { mine, _ in mine }
        return copy
    }

    // MARK: - Accessors

    /// A member as a string.
    public func string(_ name: String) -> String? { fields[name]?.stringValue }

    /// A member as a URL.
    public func url(_ name: String) -> URL? { string(name).flatMap(URL.init(string:)) }

    /// A member as an array of strings.
    public func strings(_ name: String) -> [String]? {
        fields[name]?.arrayValue?.compactMap(\.stringValue)
    }

    /// A member as a boolean.
    public func bool(_ name: String) -> Bool? { fields[name]?.boolValue }

    // MARK: RFC 8414 §2

    /// `issuer`
    public var issuer: String? { string("issuer") }
    /// `authorization_endpoint`
    public var authorizationEndpoint: URL? { url("authorization_endpoint") }
    /// `token_endpoint`
    public var tokenEndpoint: URL? { url("token_endpoint") }
    /// `jwks_uri`
    public var jwksURI: URL? { url("jwks_uri") }
    /// `registration_endpoint`
    public var registrationEndpoint: URL? { url("registration_endpoint") }
    /// `scopes_supported`
    public var scopesSupported: [String]? { strings("scopes_supported") }
    /// `response_types_supported`
    public var responseTypesSupported: [String]? { strings("response_types_supported") }
    /// `response_modes_supported`
    public var responseModesSupported: [String]? { strings("response_modes_supported") }
    /// `grant_types_supported`
    public var grantTypesSupported: [String]? { strings("grant_types_supported") }
    /// `token_endpoint_auth_methods_supported`
    public var tokenEndpointAuthMethodsSupported: [String]? { strings("token_endpoint_auth_methods_supported") }
    /// `token_endpoint_auth_signing_alg_values_supported`
    public var tokenEndpointAuthSigningAlgValuesSupported: [String]? {
        strings("token_endpoint_auth_signing_alg_values_supported")
    }
    /// `service_documentation`
    public var serviceDocumentation: URL? { url("service_documentation") }
    /// `ui_locales_supported`
    public var uiLocalesSupported: [String]? { strings("ui_locales_supported") }
    /// `op_policy_uri`
    public var opPolicyURI: URL? { url("op_policy_uri") }
    /// `op_tos_uri`
    public var opTosURI: URL? { url("op_tos_uri") }
    /// `revocation_endpoint`
    public var revocationEndpoint: URL? { url("revocation_endpoint") }
    /// `revocation_endpoint_auth_methods_supported`
    public var revocationEndpointAuthMethodsSupported: [String]? {
        strings("revocation_endpoint_auth_methods_supported")
    }
    /// `revocation_endpoint_auth_signing_alg_values_supported`
    public var revocationEndpointAuthSigningAlgValuesSupported: [String]? {
        strings("revocation_endpoint_auth_signing_alg_values_supported")
    }
    /// `introspection_endpoint`
    public var introspectionEndpoint: URL? { url("introspection_endpoint") }
    /// `introspection_endpoint_auth_methods_supported`
    public var introspectionEndpointAuthMethodsSupported: [String]? {
        strings("introspection_endpoint_auth_methods_supported")
    }
    /// `introspection_endpoint_auth_signing_alg_values_supported`
    public var introspectionEndpointAuthSigningAlgValuesSupported: [String]? {
        strings("introspection_endpoint_auth_signing_alg_values_supported")
    }
    /// `introspection_signing_alg_values_supported` (RFC 9701 §6): the algorithms the server
    /// signs JWT introspection answers with.
    public var introspectionSigningAlgValuesSupported: [String]? { strings("introspection_signing_alg_values_supported") }
    /// `introspection_encryption_alg_values_supported` (RFC 9701 §6): the key management
    /// algorithms the server can encrypt JWT introspection answers with.
    public var introspectionEncryptionAlgValuesSupported: [String]? { strings("introspection_encryption_alg_values_supported") }
    /// `introspection_encryption_enc_values_supported` (RFC 9701 §6): the content encryptions
    /// the server can encrypt JWT introspection answers with.
    public var introspectionEncryptionEncValuesSupported: [String]? { strings("introspection_encryption_enc_values_supported") }
    /// `code_challenge_methods_supported`
    public var codeChallengeMethodsSupported: [String]? { strings("code_challenge_methods_supported") }
    /// `signed_metadata` (a JWT; not verified by this type)
    public var signedMetadata: String? { string("signed_metadata") }
    /// `device_authorization_endpoint` (RFC 8628)
    public var deviceAuthorizationEndpoint: URL? { url("device_authorization_endpoint") }
    /// `tls_client_certificate_bound_access_tokens` (RFC 8705)
    public var tlsClientCertificateBoundAccessTokens: Bool? { bool("tls_client_certificate_bound_access_tokens") }
    /// `mtls_endpoint_aliases` (RFC 8705)
    public var mtlsEndpointAliases: [String: JSONValue]? { fields["mtls_endpoint_aliases"]?.objectValue }

    /// The endpoint named `name` (`token_endpoint`…) for a client that uses mutual TLS (RFC
    /// 8705 §5): its alias in `mtls_endpoint_aliases` when there is one, else the endpoint.
    /// Without `mutualTLS`, the endpoint.
    public func endpoint(_ name: String, mutualTLS: Bool) -> URL? {
        if mutualTLS, let alias = mtlsEndpointAliases?[name]?.stringValue.flatMap(URL.init(string:)) { return alias }
        return url(name)
    }
    /// `pushed_authorization_request_endpoint` (RFC 9126)
    public var pushedAuthorizationRequestEndpoint: URL? { url("pushed_authorization_request_endpoint") }
    /// `require_pushed_authorization_requests` (RFC 9126)
    public var requirePushedAuthorizationRequests: Bool? { bool("require_pushed_authorization_requests") }
    /// `client_id_metadata_document_supported` (OAuth Client ID Metadata Document, the MCP
    /// authorization specification): the server takes an HTTPS URL as a `client_id` and
    /// fetches the client's metadata from it.
    public var clientIDMetadataDocumentSupported: Bool? { bool("client_id_metadata_document_supported") }
    /// `authorization_response_iss_parameter_supported` (RFC 9207)
    public var authorizationResponseIssParameterSupported: Bool? {
        bool("authorization_response_iss_parameter_supported")
    }
    /// `dpop_signing_alg_values_supported` (RFC 9449)
    public var dpopSigningAlgValuesSupported: [String]? { strings("dpop_signing_alg_values_supported") }
    /// `require_signed_request_object` (RFC 9101)
    public var requireSignedRequestObject: Bool? { bool("require_signed_request_object") }
    /// `authorization_details_types_supported` (RFC 9396)
    public var authorizationDetailsTypesSupported: [String]? { strings("authorization_details_types_supported") }

    // MARK: OpenID Connect CIBA Core 1.0 §4

    /// `backchannel_authentication_endpoint` (CIBA)
    public var backchannelAuthenticationEndpoint: URL? { url("backchannel_authentication_endpoint") }
    /// `backchannel_token_delivery_modes_supported` (CIBA): `poll`, `ping`, `push`.
    public var backchannelTokenDeliveryModesSupported: [String]? { strings("backchannel_token_delivery_modes_supported") }
    /// `backchannel_authentication_request_signing_alg_values_supported` (CIBA): the
    /// algorithms a signed authentication request may use.
    public var backchannelAuthenticationRequestSigningAlgValuesSupported: [String]? {
        strings("backchannel_authentication_request_signing_alg_values_supported")
    }
    /// `backchannel_user_code_parameter_supported` (CIBA)
    public var backchannelUserCodeParameterSupported: Bool? { bool("backchannel_user_code_parameter_supported") }

    // MARK: OpenID Connect Discovery 1.0 §3

    /// `userinfo_endpoint`
    public var userInfoEndpoint: URL? { url("userinfo_endpoint") }
    /// `acr_values_supported`
    public var acrValuesSupported: [String]? { strings("acr_values_supported") }
    /// `subject_types_supported`
    public var subjectTypesSupported: [String]? { strings("subject_types_supported") }
    /// `id_token_signing_alg_values_supported`
    public var idTokenSigningAlgValuesSupported: [String]? { strings("id_token_signing_alg_values_supported") }
    /// `id_token_encryption_alg_values_supported`
    public var idTokenEncryptionAlgValuesSupported: [String]? { strings("id_token_encryption_alg_values_supported") }
    /// `id_token_encryption_enc_values_supported`
    public var idTokenEncryptionEncValuesSupported: [String]? { strings("id_token_encryption_enc_values_supported") }
    /// `userinfo_signing_alg_values_supported`
    public var userInfoSigningAlgValuesSupported: [String]? { strings("userinfo_signing_alg_values_supported") }
    /// `userinfo_encryption_alg_values_supported`
    public var userInfoEncryptionAlgValuesSupported: [String]? { strings("userinfo_encryption_alg_values_supported") }
    /// `userinfo_encryption_enc_values_supported`
    public var userInfoEncryptionEncValuesSupported: [String]? { strings("userinfo_encryption_enc_values_supported") }
    /// `request_object_signing_alg_values_supported`
    public var requestObjectSigningAlgValuesSupported: [String]? {
        strings("request_object_signing_alg_values_supported")
    }
    /// `request_object_encryption_alg_values_supported`
    public var requestObjectEncryptionAlgValuesSupported: [String]? {
        strings("request_object_encryption_alg_values_supported")
    }
    /// `request_object_encryption_enc_values_supported`
    public var requestObjectEncryptionEncValuesSupported: [String]? {
        strings("request_object_encryption_enc_values_supported")
    }
    /// `display_values_supported`
    public var displayValuesSupported: [String]? { strings("display_values_supported") }
    /// `claim_types_supported`
    public var claimTypesSupported: [String]? { strings("claim_types_supported") }
    /// `claims_supported`
    public var claimsSupported: [String]? { strings("claims_supported") }
    /// `claims_locales_supported`
    public var claimsLocalesSupported: [String]? { strings("claims_locales_supported") }
    /// `claims_parameter_supported`
    public var claimsParameterSupported: Bool? { bool("claims_parameter_supported") }
    /// `request_parameter_supported`
    public var requestParameterSupported: Bool? { bool("request_parameter_supported") }
    /// `request_uri_parameter_supported`
    public var requestURIParameterSupported: Bool? { bool("request_uri_parameter_supported") }
    /// `require_request_uri_registration`
    public var requireRequestURIRegistration: Bool? { bool("require_request_uri_registration") }
    /// `end_session_endpoint` (RP-Initiated Logout 1.0)
    public var endSessionEndpoint: URL? { url("end_session_endpoint") }
    /// `check_session_iframe` (Session Management 1.0)
    public var checkSessionIframe: URL? { url("check_session_iframe") }
    /// `frontchannel_logout_supported`
    public var frontchannelLogoutSupported: Bool? { bool("frontchannel_logout_supported") }
    /// `frontchannel_logout_session_supported`
    public var frontchannelLogoutSessionSupported: Bool? { bool("frontchannel_logout_session_supported") }
    /// `backchannel_logout_supported`
    public var backchannelLogoutSupported: Bool? { bool("backchannel_logout_supported") }
    /// `backchannel_logout_session_supported`
    public var backchannelLogoutSessionSupported: Bool? { bool("backchannel_logout_session_supported") }

    /// Members of ``fields`` that none of the typed properties covers.
    public var additionalFields: [String: JSONValue] {
        fields.filter { Self.knownFields[$0.key] == nil }
    }

    // MARK: - Type checking

    enum FieldKind: CustomStringConvertible {
        case string, url, strings, bool, object

        func accepts(_ value: JSONValue) -> Bool {
            switch self {
            case .string: return value.stringValue != nil
            case .url:
                guard let text = value.stringValue, let url = URL(string: text) else { return false }
                return url.scheme != nil && url.host != nil
            case .strings: return value.arrayValue?.allSatisfy { $0.stringValue != nil } ?? false
            case .bool: return value.boolValue != nil
            case .object: return value.objectValue != nil
            }
        }

        var description: String {
            switch self {
            case .string: return "string"
            case .url: return "absolute URL"
            case .strings: return "array of strings"
            case .bool: return "boolean"
            case .object: return "JSON object"
            }
        }
    }

    static let knownFields: [String: FieldKind] = {
        var kinds: [String: FieldKind] = ["issuer": .string, "signed_metadata": .string, "mtls_endpoint_aliases": .object]
        for name in [
            "authorization_endpoint", "token_endpoint", "jwks_uri", "registration_endpoint", "service_documentation",
            "op_policy_uri", "op_tos_uri", "revocation_endpoint", "introspection_endpoint",
            "device_authorization_endpoint", "pushed_authorization_request_endpoint", "userinfo_endpoint",
            "end_session_endpoint", "check_session_iframe", "backchannel_authentication_endpoint",
        ] { kinds[name] = .url }
        for name in [
            "scopes_supported", "response_types_supported", "response_modes_supported", "grant_types_supported",
            "token_endpoint_auth_methods_supported", "token_endpoint_auth_signing_alg_values_supported",
            "ui_locales_supported", "revocation_endpoint_auth_methods_supported",
            "revocation_endpoint_auth_signing_alg_values_supported", "introspection_endpoint_auth_methods_supported",
            "introspection_endpoint_auth_signing_alg_values_supported", "code_challenge_methods_supported",
            "dpop_signing_alg_values_supported", "authorization_details_types_supported", "acr_values_supported",
            "subject_types_supported", "id_token_signing_alg_values_supported",
            "id_token_encryption_alg_values_supported", "id_token_encryption_enc_values_supported",
            "userinfo_signing_alg_values_supported", "userinfo_encryption_alg_values_supported",
            "userinfo_encryption_enc_values_supported", "request_object_signing_alg_values_supported",
            "request_object_encryption_alg_values_supported", "request_object_encryption_enc_values_supported",
            "display_values_supported", "claim_types_supported", "claims_supported", "claims_locales_supported",
            "backchannel_token_delivery_modes_supported", "backchannel_authentication_request_signing_alg_values_supported",
        ] { kinds[name] = .strings }
        for name in [
            "tls_client_certificate_bound_access_tokens", "require_pushed_authorization_requests",
            "authorization_response_iss_parameter_supported", "require_signed_request_object",
            "claims_parameter_supported", "request_parameter_supported", "request_uri_parameter_supported",
            "require_request_uri_registration", "frontchannel_logout_supported",
            "frontchannel_logout_session_supported", "backchannel_logout_supported",
            "backchannel_logout_session_supported", "client_id_metadata_document_supported",
            "backchannel_user_code_parameter_supported",
        ] { kinds[name] = .bool }
        return kinds
    }()
}
