import Foundation
import NIOHTTP1
import OAuth2

extension ProviderCore {
    /// Token revocation (RFC 7009): public clients too (by `client_id`). Revoking a refresh
    /// token revokes its whole grant; an access token, only itself. An unknown token is
    /// answered 200 (§2.2); a token of another client is refused.
    func revoke(_ request: HTTPServerRequest, now: Date) -> HTTPServerReply {
        guard request.method == .POST else { return .methodNotAllowed("POST") }
        let parameters: Parameters
        switch Parameters.read(request, body: true) {
        case .success(let read): parameters = read
        case .failure(let reply): return reply
        }
        let client: TestProvider.Client
        switch authenticateClient(request, parameters) {
        case .success(let authenticated): client = authenticated
        case .failure(let reply): return reply
        }
        if let name = parameters.duplicated.sorted().first {
            return .oauthError("invalid_request", "The parameter \(name) is repeated.")
        }
        guard let token = parameters["token"] else { return .oauthError("invalid_request", "token is missing.") }
        return state.withLockedValue { state in
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
