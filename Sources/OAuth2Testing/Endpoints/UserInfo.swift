import Foundation
import NIOHTTP1
import OAuth2JOSE

extension ProviderCore {
    /// UserInfo (OIDC Core §5.3): the access token in the `Authorization: Bearer` header only
    /// (RFC 6750 §2.1); a token in the query or the body is refused.
    func userInfo(_ request: HTTPServerRequest, now: Date) -> HTTPServerReply {
        guard request.method == .GET || request.method == .POST else { return .methodNotAllowed("GET, POST") }
        func challenge(_ status: HTTPResponseStatus, _ code: String?, _ description: String) -> HTTPServerReply {
            var value = #"Bearer realm="\#(issuer)""#
            guard let code else {
                // RFC 6750 §3.1: no error code when the request carried no credentials.
                return .response(status, headers: [("WWW-Authenticate", value), ("Cache-Control", "no-store")], body: [])
            }
            value += #", error="\#(code)", error_description="\#(description)""#
            return .oauthError(code, description, status: status, headers: [("WWW-Authenticate", value)])
        }
        let queryHasToken = FormEncoding.decode(request.query ?? "")?.contains { $0.0 == "access_token" } ?? false
        let bodyHasToken = request.method == .POST && (FormEncoding.decode(Substring(String(decoding: request.body, as: UTF8.self)))?
            .contains { $0.0 == "access_token" } ?? false)
        if queryHasToken || bodyHasToken {
            return challenge(.badRequest, "invalid_request", "Send the access token in the Authorization header only.")
        }
        guard let header = request.headers.first(name: "Authorization") else {
            return challenge(.unauthorized, nil, "")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return challenge(.unauthorized, "invalid_token", "Only Bearer tokens are accepted.")
        }
        let token = String(parts[1]).trimmingCharacters(in: .whitespaces)
        return state.withLock { state in
            guard let record = state.accessTokens[token], now < record.expiresAt, let grant = state.grants[record.grantID] else {
                return challenge(.unauthorized, "invalid_token", "The access token is unknown, revoked or expired.")
            }
            guard record.scopes.contains("openid"), let user = state.user(named: grant.username) else {
                return challenge(.forbidden, "insufficient_scope", "UserInfo needs a token for a user with the openid scope.")
            }
            var claims = Self.releasedClaims(of: user, scopes: record.scopes)
            claims["sub"] = .string(user.subject)
            return .json(.ok, claims)
        }
    }
}
