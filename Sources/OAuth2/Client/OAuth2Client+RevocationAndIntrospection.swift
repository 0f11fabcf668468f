import Foundation
import HTTPTypes

extension OAuth2Client {
    /// Revokes a token (RFC 7009). Revoking a refresh token usually revokes the access
    /// tokens issued with it.
    ///
    /// Per RFC 7009 §2.2 a server answers 200 for an unknown or already invalid token too,
    /// so success means "this token no longer works", not "this token existed".
    public func revoke(_ token: String, hint: TokenTypeHint? = nil) async throws {
        let url = try endpoint(endpoint("revocation_endpoint"), "revocation endpoint")
        var parameters = [("token", token)]
        if let hint { parameters.append(("token_type_hint", hint.rawValue)) }
        try await post(
            url, parameters: parameters, kind: .revocation,
            authMethods: metadata.revocationEndpointAuthMethodsSupported ?? metadata.tokenEndpointAuthMethodsSupported
        ) { response, body, _ in
            let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
            if let error = ResponseParsing.error(in: response, members: members, kind: .revocation, now: now()) {
                throw error
            }
        }
    }

    /// Asks the introspection endpoint (RFC 7662) whether a token is active, and what it
    /// grants.
    public func introspect(_ token: String, hint: TokenTypeHint? = nil) async throws -> IntrospectionResponse {
        let url = try endpoint(endpoint("introspection_endpoint"), "introspection endpoint")
        var parameters = [("token", token)]
        if let hint { parameters.append(("token_type_hint", hint.rawValue)) }
        return try await post(
            url, parameters: parameters, kind: .introspection,
            authMethods: metadata.introspectionEndpointAuthMethodsSupported ?? metadata.tokenEndpointAuthMethodsSupported
        ) { response, body, _ in
            try IntrospectionResponse.parse(response: response, body: body, receivedAt: now())
        }
    }
}
