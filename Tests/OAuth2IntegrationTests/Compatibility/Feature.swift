import Foundation
import OAuth2

/// A column of the compatibility table (docs/compatibility.md): one thing a client does
/// with an authorization server, checked against every server of the suite.
enum Feature: String, Sendable, CaseIterable, CustomStringConvertible {
    case discovery
    case signIn = "sign-in"
    case refresh
    case userInfo = "userinfo"
    case introspection
    case revocation
    case logout
    case clientCredentials = "client-credentials"
    case password
    case device
    case par
    case dpop
    case jwtClientAuthentication = "jwt-client-auth"
    case registration
    case tokenExchange = "token-exchange"
    case encryptedIDTokens = "encrypted-id-tokens"
    case ciba
    case richAuthorization = "rar"
    case jwtIntrospection = "jwt-introspection"
    case mtlsClientAuthentication = "mtls-client-auth"
    case certificateBoundTokens = "certificate-bound-tokens"
    case jarm
    case encryptedRequestObjects = "encrypted-request-objects"
    case encryptedIntrospection = "encrypted-introspection"

    var description: String { rawValue }

    /// The table's column heading.
    var title: String {
        switch self {
        case .discovery: "Discovery"
        case .signIn: "Code + PKCE (loopback)"
        case .refresh: "Refresh"
        case .userInfo: "UserInfo"
        case .introspection: "Introspection"
        case .revocation: "Revocation"
        case .logout: "RP-initiated logout"
        case .clientCredentials: "Client credentials"
        case .password: "Password"
        case .device: "Device flow"
        case .par: "PAR"
        case .dpop: "DPoP"
        case .jwtClientAuthentication: "JWT client auth"
        case .registration: "Registration"
        case .tokenExchange: "Token exchange"
        case .encryptedIDTokens: "Encrypted ID tokens"
        case .ciba: "CIBA"
        case .richAuthorization: "RAR"
        case .jwtIntrospection: "JWT introspection answers"
        case .mtlsClientAuthentication: "mTLS client authentication"
        case .certificateBoundTokens: "Certificate-bound tokens"
        case .jarm: "JARM"
        case .encryptedRequestObjects: "Encrypted request objects"
        case .encryptedIntrospection: "Encrypted introspection answers"
        }
    }

    /// Whether the server's metadata says it offers the feature; `nil` when metadata cannot
    /// tell (the password and client-credentials grants are often left out of
    /// `grant_types_supported`): then a server's note decides.
    func advertised(in metadata: ServerMetadata) -> Availability? {
        func endpoint(_ url: URL?, _ member: String) -> Availability {
            url != nil ? .offered("\(member) in its metadata") : .notOffered("no \(member) in its metadata")
        }
        let grants = metadata.grantTypesSupported ?? []
        switch self {
        case .discovery, .signIn:
            return .offered("authorization_endpoint in its metadata")
        case .refresh, .clientCredentials, .password:
            return nil
        case .userInfo: return endpoint(metadata.userInfoEndpoint, "userinfo_endpoint")
        case .introspection: return endpoint(metadata.introspectionEndpoint, "introspection_endpoint")
        case .revocation: return endpoint(metadata.revocationEndpoint, "revocation_endpoint")
        case .logout: return endpoint(metadata.endSessionEndpoint, "end_session_endpoint")
        case .device: return endpoint(metadata.deviceAuthorizationEndpoint, "device_authorization_endpoint")
        case .par: return endpoint(metadata.pushedAuthorizationRequestEndpoint, "pushed_authorization_request_endpoint")
        case .registration: return endpoint(metadata.registrationEndpoint, "registration_endpoint")
        case .ciba: return endpoint(metadata.backchannelAuthenticationEndpoint, "backchannel_authentication_endpoint")
        case .dpop:
            return metadata.dpopSigningAlgValuesSupported?.isEmpty == false
                ? .offered("dpop_signing_alg_values_supported in its metadata")
                : .notOffered("no dpop_signing_alg_values_supported in its metadata")
        case .jwtClientAuthentication:
            let methods = metadata.tokenEndpointAuthMethodsSupported ?? []
            return methods.contains("private_key_jwt") || methods.contains("client_secret_jwt")
                ? .offered("private_key_jwt or client_secret_jwt in token_endpoint_auth_methods_supported")
                : .notOffered("neither private_key_jwt nor client_secret_jwt in token_endpoint_auth_methods_supported")
        case .richAuthorization:
            return metadata.authorizationDetailsTypesSupported?.isEmpty == false
                ? .offered("authorization_details_types_supported in its metadata")
                : .notOffered("no authorization_details_types_supported in its metadata")
        case .jwtIntrospection:
            guard metadata.introspectionEndpoint != nil else { return .notOffered("no introspection_endpoint in its metadata") }
            return metadata.introspectionSigningAlgValuesSupported?.isEmpty == false
                ? .offered("introspection_signing_alg_values_supported in its metadata")
                : .notOffered("no introspection_signing_alg_values_supported in its metadata")
        case .mtlsClientAuthentication:
            let methods = metadata.tokenEndpointAuthMethodsSupported ?? []
            return methods.contains("tls_client_auth") || methods.contains("self_signed_tls_client_auth")
                ? .offered("tls_client_auth or self_signed_tls_client_auth in token_endpoint_auth_methods_supported")
                : .notOffered("neither tls_client_auth nor self_signed_tls_client_auth in token_endpoint_auth_methods_supported")
        case .certificateBoundTokens:
            return metadata.tlsClientCertificateBoundAccessTokens == true
                ? .offered("tls_client_certificate_bound_access_tokens in its metadata")
                : .notOffered("no tls_client_certificate_bound_access_tokens in its metadata")
        case .tokenExchange:
            return grants.contains("urn:ietf:params:oauth:grant-type:token-exchange")
                ? .offered("the token-exchange grant in grant_types_supported")
                : .notOffered("no token-exchange grant in grant_types_supported")
        case .jarm:
            let modes = metadata.strings("response_modes_supported") ?? []
            return modes.contains(where: { JARMOptions.responseModes.contains($0) })
                ? .offered("a JWT response mode in response_modes_supported")
                : .notOffered("no JWT response mode (jwt, query.jwt…) in response_modes_supported")
        case .encryptedIDTokens:
            return metadata.idTokenEncryptionAlgValuesSupported?.isEmpty == false
                ? .offered("id_token_encryption_alg_values_supported in its metadata")
                : .notOffered("no id_token_encryption_alg_values_supported in its metadata")
        case .encryptedRequestObjects:
            return metadata.requestObjectEncryptionAlgValuesSupported?.isEmpty == false
                ? .offered("request_object_encryption_alg_values_supported in its metadata")
                : .notOffered("no request_object_encryption_alg_values_supported in its metadata")
        case .encryptedIntrospection:
            guard metadata.introspectionEndpoint != nil else { return .notOffered("no introspection_endpoint in its metadata") }
            return metadata.introspectionEncryptionAlgValuesSupported?.isEmpty == false
                ? .offered("introspection_encryption_alg_values_supported in its metadata")
                : .notOffered("no introspection_encryption_alg_values_supported in its metadata")
        }
    }
}

/// What the suite knows about a feature on a server before it runs: offered (then it must
/// work), not offered (then the client must say so cleanly), or offered but broken by a
/// bug of the server's own (then the check runs as a known issue). Each carries its
/// evidence: a metadata member, or a note citing the server's documentation.
enum Availability: Sendable, Equatable {
    case offered(String)
    case notOffered(String)
    case serverBug(String)

    var evidence: String {
        switch self {
        case .offered(let text), .notOffered(let text), .serverBug(let text): text
        }
    }
}
