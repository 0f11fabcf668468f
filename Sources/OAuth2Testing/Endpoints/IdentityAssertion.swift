import Foundation
import NIOHTTP1
import OAuth2Internals
import OAuth2JOSE

/// The identity assertion grant (draft-ietf-oauth-identity-assertion-authz-grant), both legs.
extension ProviderCore {
    static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"
    static let identityAssertionType = "urn:ietf:params:oauth:token-type:id-jag"
    static let identityAssertionJWTType = "oauth-id-jag+jwt"

    // MARK: - Leg 1: the identity provider

    /// Token exchange (RFC 8693 §2.1) of an ID token this provider issued to the client for
    /// an ID-JAG (draft §4.3).
    func exchangeForIdentityAssertion(_ parameters: Parameters, client: TestProvider.Client, now: Date) -> HTTPServerReply {
        guard !client.isPublic else {
            return .oauthError("unauthorized_client", "A public client cannot exchange tokens for an identity assertion grant.")
        }
        guard let requested = parameters["requested_token_type"] else {
            return .oauthError("invalid_request", "requested_token_type is missing; this provider issues only \(Self.identityAssertionType).")
        }
        guard requested == Self.identityAssertionType else {
            return .oauthError("invalid_request", "The requested_token_type \(requested) is not issued; only \(Self.identityAssertionType).")
        }
        guard let subjectToken = parameters["subject_token"], let subjectType = parameters["subject_token_type"] else {
            return .oauthError("invalid_request", "subject_token and subject_token_type are required.")
        }
        guard subjectType == Self.idTokenType else {
            return .oauthError("invalid_request", "The subject_token_type must be \(Self.idTokenType).")
        }
        if parameters["actor_token"] != nil || parameters["actor_token_type"] != nil {
            return .oauthError("invalid_request", "actor_token is not used with an identity assertion grant.")
        }
        guard let audience = parameters["audience"] else {
            return .oauthError("invalid_request", "audience (the authorization server's issuer) is missing.")
        }
        if let invalid = Self.invalidResource(parameters.resources) { return .oauthError("invalid_target", invalid) }
        let requestedScopes = Self.scopes(parameters["scope"])
        return state.withLock { state in
            let options = state.identityAssertions.options
            if let audiences = options.audiences, !audiences.contains(audience) {
                return .oauthError("invalid_target", "The provider issues no identity assertion grant for this audience.")
            }
            guard audience != issuer else {
                return .oauthError("invalid_target", "An identity assertion grant is for another authorization server, not for its issuer.")
            }
            let claims: [String: JSONValue]
            switch verifiedIDToken(subjectToken, keys: state.keys.compactMap(\.publicKey), clientID: client.id, now: now) {
            case .success(let verified): claims = verified
            case .failure(let reply): return reply
            }
            guard let subject = claims["sub"]?.stringValue, state.users.values.contains(where: { $0.subject == subject }) else {
                return .oauthError("invalid_grant", "The ID token's subject is not a user of the provider.")
            }
            let issuedAt = Int64(now.timeIntervalSince1970)
            var grant: [String: JSONValue] = [
                "iss": .string(issuer),
                "sub": .string(subject),
                "aud": .string(audience),
                "client_id": .string(options.clientIDsAtAuthorizationServers[client.id] ?? client.id),
                "jti": .string(Random.token(bytes: 16)),
                "iat": .integer(issuedAt),
                "exp": .integer(issuedAt + max(1, options.grantLifetime.wholeSeconds)),
            ]
            if parameters.resources.count == 1 {
                grant["resource"] = .string(parameters.resources[0])
            } else if !parameters.resources.isEmpty {
                grant["resource"] = .array(parameters.resources.map(JSONValue.string))
            }
            if !requestedScopes.isEmpty { grant["scope"] = .string(requestedScopes.joined(separator: " ")) }
            for copied in ["auth_time", "acr", "amr"] { grant[copied] = claims[copied] }
            let signed: String
            do {
                signed = try state.signingKey.sign(claims: grant, header: ["typ": .string(Self.identityAssertionJWTType)])
            } catch {
                return .oauthError("server_error", "The identity assertion grant could not be signed.", status: .internalServerError)
            }
            var answer: [String: JSONValue] = [
                "access_token": .string(signed),
                "issued_token_type": .string(Self.identityAssertionType),
                "token_type": "N_A",
                "expires_in": .integer(max(1, options.grantLifetime.wholeSeconds)),
            ]
            if !requestedScopes.isEmpty { answer["scope"] = .string(requestedScopes.joined(separator: " ")) }
            return .json(.ok, answer)
        }
    }

    /// The claims of an ID token this provider issued to `clientID`, unexpired and signed by
    /// one of its keys (draft §4.3.1: its audience is the authenticated client).
    private func verifiedIDToken(
        _ compact: String, keys: [JSONWebKey], clientID: String, now: Date
    ) -> Result<[String: JSONValue], HTTPServerReply> {
        func refused(_ why: String) -> Result<[String: JSONValue], HTTPServerReply> {
            .failure(.oauthError("invalid_grant", "The subject token is refused: \(why)."))
        }
        guard let jws = try? JWS(compact: compact), let claims = try? jws.claims() else { return refused("it is not a JWT") }
        guard keys.contains(where: { ($0.keyID == nil || jws.keyID == nil || $0.keyID == jws.keyID) && jws.isSigned(by: $0) }) else {
            return refused("its signature is not the provider's")
        }
        guard claims["iss"]?.stringValue == issuer else { return refused("it was issued by another issuer") }
        guard Self.audiences(claims["aud"]).contains(clientID) else { return refused("it was issued to another client") }
        guard let exp = claims["exp"]?.doubleValue, now.timeIntervalSince1970 < exp else { return refused("it has expired") }
        return .success(claims)
    }

    // MARK: - Leg 2: the authorization server

    /// The JWT bearer grant (RFC 7523 §2.1) with an ID-JAG from a trusted issuer (draft §4.4).
    func redeemIdentityAssertion(_ parameters: Parameters, client: TestProvider.Client, now: Date) -> HTTPServerReply {
        guard !client.isPublic else {
            return .oauthError("unauthorized_client", "A public client cannot use the JWT bearer grant.")
        }
        guard let assertion = parameters["assertion"] else { return .oauthError("invalid_request", "assertion is missing.") }
        if let invalid = Self.invalidResource(parameters.resources) { return .oauthError("invalid_target", invalid) }
        let requestedScopes = Self.scopes(parameters["scope"])
        return state.withLock { state in
            func refused(_ why: String) -> HTTPServerReply {
                .oauthError("invalid_grant", "The identity assertion grant is refused: \(why).")
            }
            guard let jws = try? JWS(compact: assertion), let claims = try? jws.claims() else { return refused("it is not a JWT") }
            guard let type = jws.type, Self.isIdentityAssertionJWTType(type) else {
                return refused("its typ is not \(Self.identityAssertionJWTType)")
            }
            guard let grantIssuer = claims["iss"]?.stringValue else { return refused("it has no iss") }
            guard grantIssuer != issuer else {
                return refused("it was issued by this provider itself, which takes only another identity provider's (draft §9.3)")
            }
            guard let trusted = state.identityAssertions.options.trustedIssuers.first(where: { $0.issuer == grantIssuer }) else {
                return refused("its issuer is not trusted")
            }
            guard JWSAlgorithm.asymmetric.contains(jws.algorithm),
                trusted.keys.candidates(for: jws.algorithm, keyID: jws.keyID).contains(where: { jws.isSigned(by: $0) })
            else { return refused("its signature does not verify with the issuer's keys") }
            guard Self.audiences(claims["aud"]) == [issuer] else { return refused("its aud is not this authorization server") }
            guard let exp = claims["exp"]?.doubleValue, now.timeIntervalSince1970 < exp else { return refused("it has expired") }
            guard let iat = claims["iat"]?.doubleValue, iat <= now.timeIntervalSince1970 + 60 else {
                return refused("its iat is missing or in the future")
            }
            guard let subject = claims["sub"]?.stringValue, !subject.isEmpty else { return refused("it has no sub") }
            guard claims["client_id"]?.stringValue == client.id else {
                return refused("its client_id is not the authenticated client")
            }
            guard let jti = claims["jti"]?.stringValue, !jti.isEmpty else { return refused("it has no jti") }
            state.identityAssertions.usedGrantIDs = state.identityAssertions.usedGrantIDs.filter { $0.value > now }
            guard state.identityAssertions.usedGrantIDs[jti] == nil else { return refused("it was already used (jti replayed)") }
            let granted = Self.audiences(claims["resource"])
            let resources: [String]
            switch Self.tokenResources(parameters.resources, granted: granted) {
            case .success(let chosen): resources = chosen
            case .failure(let reply): return reply
            }
            let grantedScopes = Self.scopes(claims["scope"]?.stringValue)
            let wider = requestedScopes.filter { !grantedScopes.contains($0) }
            guard wider.isEmpty else {
                return .oauthError("invalid_scope", "The identity assertion grant does not grant: \(wider.joined(separator: " ")).")
            }
            let scopes = requestedScopes.isEmpty ? grantedScopes : requestedScopes
            let forbidden = Self.forbiddenScopes(scopes, for: client)
            guard forbidden.isEmpty else {
                return .oauthError("invalid_scope", "The client may not ask for: \(forbidden.joined(separator: " ")).")
            }
            state.identityAssertions.usedGrantIDs[jti] = Date(timeIntervalSince1970: exp)
            let user = state.users.values.first { $0.subject == subject }
            var grant = GrantRecord(
                id: Random.token(bytes: 16), clientID: client.id, username: user?.username, subject: subject, scopes: scopes,
                authTime: claims["auth_time"]?.doubleValue.map(Date.init(timeIntervalSince1970:)), sessionID: nil)
            grant.resources = resources
            state.grants[grant.id] = grant
            return issue(
                grant, to: client, scopes: scopes, refreshToken: nil, nonce: nil, resources: resources, state: &state, now: now)
        }
    }

    /// `oauth-id-jag+jwt`, in any case, with or without `application/` (RFC 7515 §4.1.9).
    static func isIdentityAssertionJWTType(_ type: String) -> Bool {
        var type = type.lowercased()
        if type.hasPrefix("application/") { type.removeFirst("application/".count) }
        return type == identityAssertionJWTType
    }

    /// The strings of an `aud` or `resource` claim: one string or an array of them.
    static func audiences(_ claim: JSONValue?) -> [String] {
        switch claim {
        case .string(let value)?: return [value]
        case .array(let values)?: return values.compactMap(\.stringValue)
        default: return []
        }
    }
}
