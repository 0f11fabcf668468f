import Crypto
import Foundation
import NIOHTTP1
import OAuth2Internals
import OAuth2JOSE

extension ProviderCore {
    /// The token endpoint (RFC 6749 §3.2): every grant of the core, refresh, and the device
    /// code grant.
    func token(_ request: HTTPServerRequest, now: Date) -> HTTPServerReply {
        let parameters: Parameters
        let client: TestProvider.Client
        switch authenticatedForm(request) {
        case .success(let form): (parameters, client) = form
        case .failure(let reply): return reply
        }
        guard let grantType = parameters["grant_type"] else { return .oauthError("invalid_request", "grant_type is missing.") }
        let type = TestProvider.GrantType(rawValue: grantType)
        guard TestProvider.GrantType.all.contains(type) else {
            return .oauthError("unsupported_grant_type", "The grant type \(grantType) is not supported.")
        }
        guard client.grantTypes.contains(type) else {
            return .oauthError("unauthorized_client", "The client may not use the \(grantType) grant.")
        }
        switch type {
        case .authorizationCode: return redeemCode(parameters, client: client, now: now)
        case .refreshToken: return refresh(parameters, client: client, now: now)
        case .clientCredentials: return clientCredentials(parameters, client: client, now: now)
        case .password: return password(parameters, client: client, now: now)
        case .tokenExchange: return exchangeForIdentityAssertion(parameters, client: client, now: now)
        case .jwtBearer: return redeemIdentityAssertion(parameters, client: client, now: now)
        default: return redeemDeviceCode(parameters, client: client, now: now)
        }
    }

    // MARK: - Grants

    /// `authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.6). A code is good for one attempt;
    /// when a redeemed code comes back, the tokens issued from it are revoked (§4.1.2).
    private func redeemCode(_ parameters: Parameters, client: TestProvider.Client, now: Date) -> HTTPServerReply {
        guard let code = parameters["code"] else { return .oauthError("invalid_request", "code is missing.") }
        return state.withLock { state in
            guard var record = state.codes[code] else {
                return .oauthError("invalid_grant", "The authorization code is unknown.")
            }
            if record.used {
                if let grantID = record.grantID { state.revokeGrant(grantID) }
                return .oauthError("invalid_grant", "The authorization code was already used; the tokens issued from it are revoked.")
            }
            record.used = true
            state.codes[code] = record
            guard record.clientID == client.id else {
                return .oauthError("invalid_grant", "The authorization code was issued to another client.")
            }
            guard now < record.expiresAt else { return .oauthError("invalid_grant", "The authorization code has expired.") }
            guard parameters["redirect_uri"] == record.redirectURI else {
                return .oauthError("invalid_grant", "redirect_uri is not the one of the authorization request.")
            }
            guard let verifier = parameters["code_verifier"] else {
                return .oauthError("invalid_grant", "code_verifier is missing (PKCE).")
            }
            guard Check.isValidCodeVerifier(verifier), Check.verifierMatchesS256Challenge(verifier, record.challenge) else {
                return .oauthError("invalid_grant", "The code_verifier does not match the code_challenge (PKCE).")
            }
            guard let user = state.users[record.username] else { return .oauthError("invalid_grant", "The user no longer exists.") }
            let resources: [String]
            switch Self.tokenResources(parameters.resources, granted: record.resources) {
            case .success(let chosen): resources = chosen
            case .failure(let reply): return reply
            }
            var grant = GrantRecord(
                id: Random.token(bytes: 16), clientID: client.id, username: user.username, subject: user.subject,
                scopes: record.scopes, authTime: record.authTime, sessionID: record.sessionID, acr: record.acr)
            grant.resources = record.resources.isEmpty ? resources : record.resources
            state.grants[grant.id] = grant
            record.grantID = grant.id
            state.codes[code] = record
            return issue(
                grant, to: client, scopes: grant.scopes, refreshToken: client.grantTypes.contains(.refreshToken) ? grant.scopes : nil,
                nonce: record.nonce, resources: resources, state: &state, now: now)
        }
    }

    /// `refresh_token` (RFC 6749 §6): narrower scopes allowed; with rotation, a new refresh
    /// token of the same scope, and reuse of a retired one revokes the grant.
    private func refresh(_ parameters: Parameters, client: TestProvider.Client, now: Date) -> HTTPServerReply {
        guard let token = parameters["refresh_token"] else { return .oauthError("invalid_request", "refresh_token is missing.") }
        let requested = Self.scopes(parameters["scope"])
        return state.withLock { state in
            guard var record = state.refreshTokens[token] else {
                return .oauthError("invalid_grant", "The refresh token is unknown, revoked or expired.")
            }
            guard record.clientID == client.id else {
                return .oauthError("invalid_grant", "The refresh token was issued to another client.")
            }
            if record.retired {
                state.revokeGrant(record.grantID)
                return .oauthError("invalid_grant", "The refresh token was already used; every token of its grant is revoked.")
            }
            if let expiresAt = record.expiresAt, now >= expiresAt {
                state.refreshTokens[token] = nil
                return .oauthError("invalid_grant", "The refresh token has expired.")
            }
            guard let grant = state.grants[record.grantID] else {
                return .oauthError("invalid_grant", "The grant of this refresh token was revoked.")
            }
            let wider = requested.filter { !record.scopes.contains($0) }
            guard wider.isEmpty else {
                return .oauthError("invalid_scope", "A refresh cannot add scopes: \(wider.joined(separator: " ")).")
            }
            let resources: [String]
            switch Self.tokenResources(parameters.resources, granted: grant.resources) {
            case .success(let chosen): resources = chosen
            case .failure(let reply): return reply
            }
            if rotatesRefreshTokens {
                record.retired = true
                state.refreshTokens[token] = record
            }
            return issue(
                grant, to: client, scopes: requested.isEmpty ? record.scopes : requested,
                refreshToken: rotatesRefreshTokens ? record.scopes : nil, nonce: nil, resources: resources, state: &state, now: now)
        }
    }

    /// `client_credentials` (RFC 6749 §4.4): confidential clients only; no refresh token, no
    /// ID token. Without `scope`, the client's allowed scopes (but `openid` and
    /// `offline_access`).
    private func clientCredentials(_ parameters: Parameters, client: TestProvider.Client, now: Date) -> HTTPServerReply {
        guard !client.isPublic else {
            return .oauthError("unauthorized_client", "A public client cannot use the client_credentials grant.")
        }
        let requested = Self.scopes(parameters["scope"])
        let forbidden = Self.forbiddenScopes(requested, for: client)
        guard forbidden.isEmpty else {
            return .oauthError("invalid_scope", "The client may not ask for: \(forbidden.joined(separator: " ")).")
        }
        let scopes = requested.isEmpty ? (client.allowedScopes ?? []).subtracting(["openid", "offline_access"]).sorted() : requested
        if let invalid = Self.invalidResource(parameters.resources) { return .oauthError("invalid_target", invalid) }
        return state.withLock { state in
            var grant = GrantRecord(
                id: Random.token(bytes: 16), clientID: client.id, username: nil, subject: nil, scopes: scopes, authTime: nil,
                sessionID: nil)
            grant.resources = parameters.resources
            state.grants[grant.id] = grant
            return issue(grant, to: client, scopes: scopes, refreshToken: nil, nonce: nil, resources: parameters.resources, state: &state, now: now)
        }
    }

    /// `password` (RFC 6749 §4.3).
    private func password(_ parameters: Parameters, client: TestProvider.Client, now: Date) -> HTTPServerReply {
        guard let username = parameters["username"], let password = parameters["password"] else {
            return .oauthError("invalid_request", "username and password are required.")
        }
        let scopes = Self.scopes(parameters["scope"])
        let forbidden = Self.forbiddenScopes(scopes, for: client)
        guard forbidden.isEmpty else {
            return .oauthError("invalid_scope", "The client may not ask for: \(forbidden.joined(separator: " ")).")
        }
        return state.withLock { state in
            guard let user = state.users[username], Check.constantTimeEquals(password, user.password) else {
                return .oauthError("invalid_grant", "The username or password is wrong.")
            }
            let grant = GrantRecord(
                id: Random.token(bytes: 16), clientID: client.id, username: user.username, subject: user.subject, scopes: scopes,
                authTime: now, sessionID: nil)
            state.grants[grant.id] = grant
            return issue(
                grant, to: client, scopes: scopes, refreshToken: client.grantTypes.contains(.refreshToken) ? scopes : nil,
                nonce: nil, state: &state, now: now)
        }
    }

    /// The device code grant (RFC 8628 §3.4, §3.5).
    private func redeemDeviceCode(_ parameters: Parameters, client: TestProvider.Client, now: Date) -> HTTPServerReply {
        guard let deviceCode = parameters["device_code"] else { return .oauthError("invalid_request", "device_code is missing.") }
        return state.withLock { state in
            guard var record = state.devices[deviceCode] else {
                return .oauthError("invalid_grant", "The device code is unknown or was already used.")
            }
            guard record.clientID == client.id else {
                return .oauthError("invalid_grant", "The device code was issued to another client.")
            }
            func forget() {
                state.devices[deviceCode] = nil
                state.userCodes[TestProvider.normalizedUserCode(record.userCode)] = nil
            }
            guard now < record.expiresAt else {
                forget()
                return .oauthError("expired_token", "The device code has expired.")
            }
            switch record.status {
            case .denied:
                forget()
                return .oauthError("access_denied", "The user denied the request.")
            case .approved(let username, let at):
                forget()
                guard let user = state.users[username] else { return .oauthError("invalid_grant", "The user no longer exists.") }
                let grant = GrantRecord(
                    id: Random.token(bytes: 16), clientID: client.id, username: user.username, subject: user.subject,
                    scopes: record.scopes, authTime: at, sessionID: nil)
                state.grants[grant.id] = grant
                return issue(
                    grant, to: client, scopes: grant.scopes,
                    refreshToken: client.grantTypes.contains(.refreshToken) ? grant.scopes : nil, nonce: nil, state: &state, now: now)
            case .pending:
                defer { state.devices[deviceCode] = record }
                if let last = record.lastPoll, now.timeIntervalSince(last) < record.interval.timeInterval * 0.75 {
                    record.interval += .seconds(5)
                    record.lastPoll = now
                    return .oauthError("slow_down", "Poll less often: every \(record.interval.wholeSeconds) seconds.")
                }
                record.lastPoll = now
                return .oauthError("authorization_pending", "The user has not approved the request yet.")
            }
        }
    }

    // MARK: - Resource indicators (RFC 8707)

    /// Why `resources` are refused (RFC 8707 §2: absolute URIs without a fragment), or `nil`.
    static func invalidResource(_ resources: [String]) -> String? {
        for resource in resources {
            guard let url = URL(string: resource), url.scheme != nil, url.host != nil, url.fragment == nil else {
                return "A resource must be an absolute URI without a fragment (RFC 8707 §2)."
            }
        }
        return nil
    }

    /// The resources a token is for: the ones a token request names, each among `granted`
    /// when the grant named any (RFC 8707 §2.2), else the grant's.
    static func tokenResources(_ requested: [String], granted: [String]) -> Result<[String], HTTPServerReply> {
        if let invalid = invalidResource(requested) { return .failure(.oauthError("invalid_target", invalid)) }
        guard !requested.isEmpty else { return .success(granted) }
        guard granted.isEmpty || requested.allSatisfy(granted.contains) else {
            return .failure(.oauthError("invalid_target", "A resource was not named when the grant was authorized."))
        }
        return .success(requested)
    }

    // MARK: - Issuing

    /// Issues an access token, a refresh token (of `refreshToken` scopes, when not `nil`)
    /// and, for `openid` with a user, an ID token. Runs with the lock held.
    func issue(
        _ grant: GrantRecord, to client: TestProvider.Client, scopes: [String], refreshToken refreshScopes: [String]?,
        nonce: String?, resources: [String] = [], state: inout ProviderState, now: Date
    ) -> HTTPServerReply {
        let lifetimes = state.lifetimes
        let accessToken = Random.token()
        var response: [String: JSONValue] = [
            "access_token": .string(accessToken),
            "token_type": "Bearer",
            "expires_in": .integer(lifetimes.accessToken.wholeSeconds),
        ]
        if !scopes.isEmpty { response["scope"] = .string(scopes.joined(separator: " ")) }
        if scopes.contains("openid"), let user = state.user(named: grant.username) {
            do {
                var token = try idToken(
                    for: user, grant: grant, clientID: client.id, scopes: scopes, nonce: nonce, accessToken: accessToken,
                    key: state.signingKey, lifetime: lifetimes.idToken, now: now)
                if let encryption = client.idTokenEncryption {
                    token = try JWE.encrypt(
                        Data(token.utf8), to: encryption.key, algorithm: encryption.algorithm, encryption: encryption.encryption, contentType: "JWT")
                }
                response["id_token"] = .string(token)
            } catch {
                return .oauthError("server_error", "The ID token could not be signed or encrypted.", status: .internalServerError)
            }
        }
        state.accessTokens[accessToken] = AccessTokenRecord(
            clientID: client.id, grantID: grant.id, scopes: scopes, issuedAt: now,
            expiresAt: now.addingTimeInterval(lifetimes.accessToken.timeInterval), resources: resources)
        if let refreshScopes {
            let refreshToken = Random.token()
            state.refreshTokens[refreshToken] = RefreshTokenRecord(
                clientID: client.id, grantID: grant.id, scopes: refreshScopes, issuedAt: now,
                expiresAt: lifetimes.refreshToken.map { now.addingTimeInterval($0.timeInterval) })
            response["refresh_token"] = .string(refreshToken)
        }
        return .json(.ok, response)
    }

    /// An ID token (OIDC Core §2): `iss`, `sub`, `aud`, `exp`, `iat`, `auth_time`, `nonce`
    /// (when sent), `at_hash`, `sid` (authorization code grants), `acr` (the first
    /// `acr_values` asked for), `amr`, and the claims the
    /// scopes release.
    func idToken(
        for user: TestProvider.User, grant: GrantRecord, clientID: String, scopes: [String], nonce: String?, accessToken: String,
        key: JWSSigningKey, lifetime: Duration, now: Date
    ) throws(JOSEError) -> String {
        var claims = Self.releasedClaims(of: user, scopes: scopes)
        let issuedAt = Int64(now.timeIntervalSince1970)
        claims["iss"] = .string(issuer)
        claims["sub"] = .string(user.subject)
        claims["aud"] = .string(clientID)
        claims["iat"] = .integer(issuedAt)
        claims["exp"] = .integer(issuedAt + max(1, lifetime.wholeSeconds))
        claims["auth_time"] = .integer(Int64((grant.authTime ?? now).timeIntervalSince1970))
        claims["amr"] = ["pwd"]
        if let nonce { claims["nonce"] = .string(nonce) }
        if let sessionID = grant.sessionID { claims["sid"] = .string(sessionID) }
        if let acr = grant.acr { claims["acr"] = .string(acr) }
        claims["at_hash"] = .string(Self.halfHash(accessToken, algorithm: key.algorithm))
        return try key.sign(claims: claims, header: ["typ": "JWT"])
    }

    /// OIDC Core §3.1.3.6: the left half of the hash of the token, with the hash of the
    /// signing algorithm (SHA-512 for Ed25519), base64url-encoded.
    static func halfHash(_ text: String, algorithm: JWSAlgorithm) -> String {
        let data = Data(text.utf8)
        let digest: [UInt8]
        switch algorithm {
        case .rs384, .ps384, .es384: digest = Array(SHA384.hash(data: data))
        case .rs512, .ps512, .es512, .edDSA: digest = Array(SHA512.hash(data: data))
        default: digest = Array(SHA256.hash(data: data))
        }
        return Base64URL.encode(digest.prefix(digest.count / 2))
    }
}
