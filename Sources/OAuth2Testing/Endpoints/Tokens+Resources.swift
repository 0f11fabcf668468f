import Foundation
import NIOHTTP1
import OAuth2

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
        return state.withLockedValue { state in
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
        return state.withLockedValue { state in
            func describe(_ grantID: String, clientID: String, scopes: [String], issuedAt: Date, expiresAt: Date?, type: String)
                -> [String: JSONValue]
            {
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
                return members
            }
            let hint = parameters["token_type_hint"]
            let access = state.accessTokens[token].flatMap { record -> [String: JSONValue]? in
                guard now < record.expiresAt, state.grants[record.grantID] != nil else { return nil }
                return describe(record.grantID, clientID: record.clientID, scopes: record.scopes, issuedAt: record.issuedAt,
                                expiresAt: record.expiresAt, type: "Bearer")
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
