import Foundation
import NIOHTTP1
import OAuth2JOSE

extension ProviderCore {
    /// Token revocation (RFC 7009): public clients too (by `client_id`). Revoking a refresh
    /// token revokes its whole grant; an access token, only itself. An unknown token is
    /// answered 200 (§2.2); a token of another client is refused.
    func revoke(_ request: HTTPServerRequest, now: Date) -> HTTPServerReply {
        let parameters: Parameters
        let client: TestProvider.Client
        switch authenticatedForm(request) {
        case .success(let form): (parameters, client) = form
        case .failure(let reply): return reply
        }
        guard let token = parameters["token"] else { return .oauthError("invalid_request", "token is missing.") }
        return state.withLock { state in
            if let record = state.accessTokens[token] {
                guard record.clientID == client.id else {
                    return .oauthError("invalid_request", "The token was issued to another client.")
                }
                state.accessTokens[token] = nil
            } else if let record = state.refreshTokens[token] {
                guard record.clientID == client.id else {
                    return .oauthError("invalid_request", "The token was issued to another client.")
                }
                state.revokeGrant(record.grantID)
            }
            return .response(.ok, headers: [("Cache-Control", "no-store")], body: [])
        }
    }
}
