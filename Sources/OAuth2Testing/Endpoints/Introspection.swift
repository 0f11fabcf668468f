import Foundation
import NIOHTTP1
import OAuth2JOSE

extension ProviderCore {
    /// Token introspection (RFC 7662): confidential clients only; access and refresh tokens
    /// of any client.
    func introspect(_ request: HTTPServerRequest, now: Date) -> HTTPServerReply {
        guard request.method == .POST else { return .methodNotAllowed("POST") }
        let parameters: Parameters
        switch Parameters.read(request, body: true) {
        case .success(let read): parameters = read
        case .failure(let reply): return reply
        }
        if case .failure(let reply) = authenticateClient(request, parameters, allowPublic: false) { return reply }
        if let name = parameters.duplicated.sorted().first {
            return .oauthError("invalid_request", "The parameter \(name) is repeated.")
        }
        guard let token = parameters["token"] else { return .oauthError("invalid_request", "token is missing.") }
        return state.withLock { state in
            func describe(
                _ grantID: String, clientID: String, scopes: [String], issuedAt: Date, expiresAt: Date?, type: String,
                resources: [String] = []
            ) -> [String: JSONValue] {
                var members: [String: JSONValue] = [
                    "active": true, "client_id": .string(clientID), "token_type": .string(type), "iss": .string(issuer),
                    "iat": .integer(Int64(issuedAt.timeIntervalSince1970)),
                ]
                if !scopes.isEmpty { members["scope"] = .string(scopes.joined(separator: " ")) }
                if let expiresAt { members["exp"] = .integer(Int64(expiresAt.timeIntervalSince1970)) }
                if let grant = state.grants[grantID], let subject = grant.subject {
                    members["sub"] = .string(subject)
                    members["aud"] = .string(clientID)
                    if let username = grant.username { members["username"] = .string(username) }
                }
                // RFC 8707: a token for named resources is for them, its audience theirs.
                if resources.count == 1 {
                    members["aud"] = .string(resources[0])
                } else if !resources.isEmpty {
                    members["aud"] = .array(resources.map { .string($0) })
                }
                return members
            }
            let hint = parameters["token_type_hint"]
            let access = state.accessTokens[token].flatMap { record -> [String: JSONValue]? in
                guard now < record.expiresAt, state.grants[record.grantID] != nil else { return nil }
                return describe(record.grantID, clientID: record.clientID, scopes: record.scopes, issuedAt: record.issuedAt,
                                expiresAt: record.expiresAt, type: "Bearer", resources: record.resources)
            }
            let refresh = state.refreshTokens[token].flatMap { record -> [String: JSONValue]? in
                guard !record.retired, record.expiresAt.map({ now < $0 }) ?? true, state.grants[record.grantID] != nil else { return nil }
                return describe(record.grantID, clientID: record.clientID, scopes: record.scopes, issuedAt: record.issuedAt,
                                expiresAt: record.expiresAt, type: "refresh_token")
            }
            // The hint only orders the search (RFC 7662 §2.1).
            let found = hint == "refresh_token" ? (refresh ?? access) : (access ?? refresh)
            return .json(.ok, found ?? ["active": false])
        }
    }
}
