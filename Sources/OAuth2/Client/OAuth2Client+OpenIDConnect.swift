import Foundation
import HTTPTypes

extension OAuth2Client {
    /// Verifies and validates an ID token against the provider's JWK set.
    ///
    /// The JWK set comes from the cache; when the token names a key the cached set lacks
    /// (the provider rotated its keys), the set is fetched again once (rate-limited) before
    /// the token is refused. An encrypted ID token (a JWE) is first decrypted with
    /// ``ClientConfiguration/encryption``'s keys; the signed ID token inside is then checked
    /// as any other, and is the returned ``IDToken/compact``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidIDToken`` with the `JOSEError` as
    ///   ``OAuth2Error/underlyingError``; transport errors from fetching the JWK set.
    public func validateIDToken(_ compact: String, expecting expectations: IDTokenValidator.Expectations) async throws -> IDToken {
        let validator = idTokenValidator
        let current = now()
        do {
            let (signed, _) = try decryptedIfEncrypted(compact, policy: \.idToken, what: "ID token")
            let jws = try JWS(compact: signed)
            try await verifySignature(jws, validator: validator, now: current)
            let claims = try IDTokenClaims(payload: jws.payloadBytes)
            try validator.check(claims, algorithm: jws.algorithm, expecting: expectations, now: current)
            return IDToken(compact: signed, jws: jws, claims: claims)
        } catch let error as JOSEError {
            logger.debug("ID token refused: \(error.reason)")
            throw OAuth2Error(.invalidIDToken, source: .client, message: "The ID token was refused: \(error.message)", underlyingError: error)
        }
    }

    /// Checks the algorithm and the signature with the cached JWK set, refetching it once
    /// when the token names a key the set lacks.
    func verifySignature(_ jws: JWS, validator: IDTokenValidator, now: Date) async throws {
        // No JWK set is needed when the token is HMAC-signed or its algorithm is refused anyway.
        let needsKeys = !jws.algorithm.isHMAC && validator.allowedAlgorithms.contains(jws.algorithm)
        var keys: JSONWebKeySet?
        if needsKeys, let keySet {
            // A fresh cached set is read without a hop to the cache's actor.
            keys = keySet.cachedKeys(now: now)
            if keys == nil { keys = try await keySet.keys(now: now) }
        }
        var failure = validator.signatureFailure(jws, keys: keys)
        if failure?.reason == .keyNotFound, let keySet, let fresh = try await keySet.refreshed(now: now) {
            failure = validator.signatureFailure(jws, keys: fresh)
        }
        if let failure { throw failure }
    }

    /// Validates the ID token of a token response, if it has one; returns the tokens with
    /// the signed ID token in place of an encrypted one.
    func validatingIDToken(in tokens: TokenSet, expecting expectations: IDTokenValidator.Expectations) async throws -> TokenSet {
        guard let idToken = tokens.idToken else { return tokens }
        try requireEncryptionIfConfigured(idToken)
        var tokens = tokens
        tokens.idToken = try await validateIDToken(idToken, expecting: expectations).compact
        return tokens
    }

    /// With ``EncryptionOptions/requiresEncryptedIDTokens``, refuses an ID token the server
    /// sent unencrypted (a downgrade). A signed ID token the client kept is not checked
    /// here: ``validateIDToken(_:expecting:)`` accepts it again.
    func requireEncryptionIfConfigured(_ idToken: String) throws {
        guard configuration.encryption?.requiresEncryptedIDTokens == true, !JWE.isCompact(idToken) else { return }
        let error = JOSEError(.algorithmNotAllowed, "The ID token is not encrypted, but this client requires encrypted ID tokens.")
        throw OAuth2Error(.invalidIDToken, source: .client, message: "The ID token was refused: \(error.message)", underlyingError: error)
    }

    /// GETs a JWK set.
    static func fetchKeySet(_ url: URL, pipeline: HTTPPipeline) async throws -> (JSONWebKeySet, cacheControl: String?) {
        var request = try HTTPRequest.make(method: .get, url: url)
        request.headerFields[.accept] = "application/jwk-set+json, application/json"
        let (response, body) = try await pipeline.send(request, body: nil, kind: .jwks)
        guard response.status.kind == .successful else {
            throw ResponseParsing.error(in: response, members: nil, kind: .jwks, now: Date())
                ?? OAuth2Error(.httpError, source: .server, message: "The JWK set could not be fetched.", statusCode: response.status.code)
        }
        do {
            return (try JSONWebKeySet(data: body), response.headerFields[.cacheControl])
        } catch {
            throw OAuth2Error(.invalidResponse, source: .server, message: "The JWK set at \(Redactor.url(url)) cannot be used: \(error.message)", underlyingError: error)
        }
    }
}

// MARK: - UserInfo

/// The claims the UserInfo endpoint returned about the signed-in user (OIDC Core §5.3).
public struct UserInfo: StandardClaims, Sendable, Hashable {
    /// The raw claims.
    public let claims: [String: JSONValue]
    /// `sub`: equal to the ID token's, or the response was refused.
    public let subject: String
    /// `true` when the response was a signed JWT (verified).
    public let isSigned: Bool
    /// `true` when the response was encrypted (a JWE, decrypted with
    /// ``ClientConfiguration/encryption``'s keys).
    public let isEncrypted: Bool
}

extension OAuth2Client {
    /// Fetches the UserInfo of the user the tokens belong to, and checks that its `sub` is
    /// the ID token's.
    ///
    /// - Throws: see ``userInfo(accessToken:tokenType:expectedSubject:)``.
    public func userInfo(for tokens: TokenSet) async throws -> UserInfo {
        try await userInfo(accessToken: tokens.accessToken, tokenType: tokens.tokenType, expectedSubject: tokens.idTokenClaims?.subject)
    }

    /// GETs the UserInfo endpoint with the access token in the `Authorization` header (never
    /// in the URL) — for a DPoP token, with a proof signed by ``ClientConfiguration/dpop``'s
    /// key (and the server's nonce, retried once when it asks for a new one; see
    /// ``TokenSession/perform(_:body:)``). A JSON answer is parsed strictly; an `application/jwt` answer is
    /// verified like an ID token (algorithms from `userinfo_signing_alg_values_supported`
    /// or the ID-token ones; `iss` and `aud` checked when present).
    ///
    /// - Parameters:
    ///   - accessToken: the access token to send.
    ///   - tokenType: its type: `Bearer`, or `DPoP` to send it with a proof.
    ///   - expectedSubject: the ID token's `sub`; the answer's must be equal. Pass
    ///     `nil` only when there is no ID token (plain OAuth).
    /// - Throws: ``OAuth2Error/Code/invalidUserInfo`` (wrong `sub`, bad signature,
    ///   malformed); ``OAuth2Error/Code/invalidToken`` when the server refuses the token
    ///   (401 with `WWW-Authenticate`), also when a DPoP-bound token is sent without its
    ///   proof; ``OAuth2Error/Code/invalidConfiguration`` for a DPoP token without a DPoP
    ///   key in the configuration; ``OAuth2Error/Code/missingEndpoint``; transport errors.
    public func userInfo(accessToken: String, tokenType: TokenType = .bearer, expectedSubject: String?) async throws -> UserInfo {
        let url = try endpoint(endpoint("userinfo_endpoint"), "userinfo endpoint")
        var request = try HTTPRequest.make(method: .get, url: url)
        // A client that registered encrypted answers asks for a JWT only: some servers
        // (Glewlwyd) answer JSON to anything else.
        request.headerFields[.accept] = configuration.encryption == nil ? "application/json, application/jwt" : "application/jwt"
        let (response, body) = try await send(request, body: nil, accessToken: accessToken, tokenType: tokenType, kind: .userInfo)
        let contentType = response.headerFields[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard response.status.kind == .successful else {
            let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
            throw ResponseParsing.error(in: response, members: members, kind: .userInfo, now: now())
                ?? OAuth2Error(.httpError, source: .server, message: "The UserInfo request failed.", statusCode: response.status.code)
        }
        do {
            var claims: [String: JSONValue]
            var signed = false, encrypted = false
            if contentType == "application/jwt" {
                // Signed, encrypted, or signed then encrypted (OIDC Core §5.3.2).
                let (text, wasEncrypted) = try decryptedIfEncrypted(
                    String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), policy: \.userInfo, what: "UserInfo response")
                encrypted = wasEncrypted
                if wasEncrypted, text.first == "{" {
                    claims = try JOSEJSON.object(Data(text.utf8), what: "UserInfo response")
                } else {
                    claims = try await verifiedUserInfoClaims(text)
                    signed = true
                }
            } else {
                claims = try JOSEJSON.object(body, what: "UserInfo response")
            }
            guard let subject = claims["sub"]?.stringValue, !subject.isEmpty else {
                throw JOSEError(.subjectMismatch, "The UserInfo response has no sub.")
            }
            if let expectedSubject, subject != expectedSubject {
                throw JOSEError(.subjectMismatch, "The UserInfo response is about another subject than the ID token.")
            }
            return UserInfo(claims: claims, subject: subject, isSigned: signed, isEncrypted: encrypted)
        } catch let error as JOSEError {
            throw OAuth2Error(.invalidUserInfo, source: .client, message: "The UserInfo response was refused: \(error.message)", underlyingError: error)
        }
    }

    private func verifiedUserInfoClaims(_ compact: String) async throws -> [String: JSONValue] {
        let base = idTokenValidator
        let algorithms = metadata.userInfoSigningAlgValuesSupported.map { IDTokenValidator.allowedAlgorithms(configured: nil, advertised: $0) }
        let validator = IDTokenValidator(
            issuer: base.issuer, clientID: base.clientID, allowedAlgorithms: algorithms ?? base.allowedAlgorithms,
            clientSecret: configuration.clientSecret, options: base.options)
        let jws = try JWS(compact: compact.trimmingCharacters(in: .whitespacesAndNewlines))
        try await verifySignature(jws, validator: validator, now: now())
        let claims = try jws.claims()
        // OIDC Core §5.3.2: a signed response should carry iss and aud; check them when present.
        if let iss = claims["iss"], iss.stringValue != validator.issuer {
            throw JOSEError(.issuerMismatch, "The signed UserInfo response names another issuer.")
        }
        if let aud = claims["aud"] {
            let audiences = aud.stringValue.map { [$0] } ?? aud.arrayValue?.compactMap(\.stringValue) ?? []
            guard audiences.contains(validator.clientID) else {
                throw JOSEError(.audienceMismatch, "The signed UserInfo response is not addressed to this client.")
            }
        }
        return claims
    }
}
