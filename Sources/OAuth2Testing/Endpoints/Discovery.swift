import Foundation
import NIOHTTP1
import OAuth2JOSE

extension ProviderCore {
    /// The metadata document (OpenID Connect Discovery 1.0 §3 and RFC 8414 §2 in one).
    func metadata() -> [String: JSONValue] {
        let (algorithm, clientScopes) = state.withLock { state in
            (state.signingKey.algorithm, state.clients.values.compactMap(\.allowedScopes).reduce(into: Set<String>()) { $0.formUnion($1) })
        }
        let scopes = Set(["openid", "profile", "email", "address", "phone", "offline_access"]).union(clientScopes).sorted()
        func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }
        let authMethods = strings(["client_secret_basic", "client_secret_post", "none"])
        var members: [String: JSONValue] = [
            "issuer": .string(issuer),
            "authorization_endpoint": .string(url(.authorization)),
            "token_endpoint": .string(url(.token)),
            "userinfo_endpoint": .string(url(.userInfo)),
            "jwks_uri": .string(url(.jwks)),
            "revocation_endpoint": .string(url(.revocation)),
            "introspection_endpoint": .string(url(.introspection)),
            "device_authorization_endpoint": .string(url(.deviceAuthorization)),
            "end_session_endpoint": .string(url(.endSession)),
            // OpenID Connect Back-Channel Logout 1.0 §2.1: logout tokens carry `sid` when the
            // session is known.
            "backchannel_logout_supported": true,
            "backchannel_logout_session_supported": true,
            "scopes_supported": strings(scopes),
            "response_types_supported": strings(["code"]),
            "response_modes_supported": strings(["query", "jwt", "query.jwt", "fragment.jwt"]),
            // JWT Secured Authorization Response Mode (JARM) §3: signed with the provider's key,
            // encrypted to a client's key when it has authorizationResponseEncryption.
            "authorization_signing_alg_values_supported": strings([algorithm.rawValue]),
            "authorization_encryption_alg_values_supported": strings(JWEKeyAlgorithm.supported.map(\.rawValue).sorted()),
            "authorization_encryption_enc_values_supported": strings(JWEContentEncryption.supported.map(\.rawValue).sorted()),
            "grant_types_supported": strings(TestProvider.GrantType.all.map(\.rawValue).sorted()),
            "subject_types_supported": strings(["public"]),
            "id_token_signing_alg_values_supported": strings([algorithm.rawValue]),
            "token_endpoint_auth_methods_supported": authMethods,
            "revocation_endpoint_auth_methods_supported": authMethods,
            "introspection_endpoint_auth_methods_supported": strings(["client_secret_basic", "client_secret_post"]),
            "code_challenge_methods_supported": strings(["S256"]),
            "authorization_response_iss_parameter_supported": .bool(sendsIssuerParameter),
            "claims_supported": strings(
                ["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "sid", "acr", "amr"] + Self.scopeClaims.values.flatMap { $0 }.sorted()),
            "claims_parameter_supported": false,
            "request_parameter_supported": false,
            "request_uri_parameter_supported": false,
            "prompt_values_supported": strings(["none", "login", "consent", "select_account"]),
        ]
        if clientMetadataDocuments != nil { members["client_id_metadata_document_supported"] = true }
        return members
    }

    /// The JWK set: every published key (public members only).
    func jwks() -> HTTPServerReply {
        let keys = state.withLock { $0.keys.compactMap(\.publicKey) }
        return .response(
            .ok, headers: [("Content-Type", "application/json"), ("Cache-Control", "public, max-age=300")],
            body: Array(JSONWebKeySet(keys: keys).jsonData))
    }
}
