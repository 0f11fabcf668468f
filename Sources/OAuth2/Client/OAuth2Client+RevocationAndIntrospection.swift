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
    ///
    /// With `format` ``IntrospectionFormat/jwt(_:)`` the answer is asked for as a signed JWT
    /// (RFC 9701, `Accept: application/token-introspection+jwt`): its media type, `typ`,
    /// signature (the server's JWK set, fetched again once for an unknown `kid`), `iss`,
    /// `aud` (this client, unless the options name other audiences) and `iat` are checked,
    /// and its `token_introspection` claim is read. An answer signed, then encrypted to the
    /// client (RFC 9701 §5) is decrypted first with ``ClientConfiguration/encryption``; with
    /// ``EncryptionOptions/requiresEncryptedIntrospection`` a plain one is refused.
    ///
    /// - Throws: the server's error; ``OAuth2Error/Code/invalidResponse`` for a JSON answer
    ///   without `active`; ``OAuth2Error/Code/invalidIntrospectionResponse`` for a JWT answer
    ///   that fails a check (an encrypted one the client cannot or may not decrypt, a plain
    ///   one when encryption is required), the `JOSEError` as its underlying error; ``OAuth2Error/Code/missingEndpoint``; transport errors.
    public func introspect(_ token: String, hint: TokenTypeHint? = nil, format: IntrospectionFormat = .json) async throws -> IntrospectionResponse {
        let url = try endpoint(endpoint("introspection_endpoint"), "introspection endpoint")
        var parameters = [("token", token)]
        if let hint { parameters.append(("token_type_hint", hint.rawValue)) }
        let validator: IntrospectionJWTValidator?
        if case .jwt(let options) = format {
            guard let issuer = metadata.issuer else {
                throw OAuth2Error.client(.invalidConfiguration, "A JWT introspection answer needs the server's issuer.")
            }
            let advertised = metadata.introspectionSigningAlgValuesSupported.map { IDTokenValidator.allowedAlgorithms(configured: nil, advertised: $0) }
            validator = IntrospectionJWTValidator(
                issuer: issuer, audiences: options.audiences ?? [configuration.clientID],
                allowedAlgorithms: options.allowedAlgorithms ?? advertised ?? idTokenValidator.allowedAlgorithms,
                maximumAge: options.maximumAge, leeway: options.leeway)
        } else {
            validator = nil
        }
        let answer: IntrospectionAnswer = try await post(
            url, parameters: parameters, kind: .introspection,
            authMethods: metadata.introspectionEndpointAuthMethodsSupported ?? metadata.tokenEndpointAuthMethodsSupported,
            accept: validator == nil ? nil : IntrospectionJWTValidator.contentType
        ) { response, body, _ in
            guard let validator, response.status.kind == .successful else {
                return .json(try IntrospectionResponse.parse(response: response, body: body, receivedAt: now()))
            }
            return .jwt(try decryptedIntrospectionAnswer(try validator.compact(of: response, body: body)))
        }
        switch answer {
        case .json(let response): return response
        case .jwt(let jws):
            guard let validator else { throw OAuth2Error.client(.invalidIntrospectionResponse, "Unexpected JWT introspection answer.") }
            let current = now()
            var failure = validator.signatureFailure(jws, keys: try await cachedKeys(for: jws, algorithms: validator.allowedAlgorithms, now: current))
            if failure?.reason == .keyNotFound, let keySet, let fresh = try await keySet.refreshed(now: current) {
                failure = validator.signatureFailure(jws, keys: fresh)
            }
            if let failure { throw IntrospectionJWTValidator.refused(failure) }
            return try validator.validateClaims(of: jws, now: current)
        }
    }

    /// The signed JWT of an introspection answer: `compact` itself, or decrypted when it is
    /// a JWE (RFC 9701 §5). With ``EncryptionOptions/requiresEncryptedIntrospection``, a
    /// plain answer is refused.
    private func decryptedIntrospectionAnswer(_ compact: String) throws(OAuth2Error) -> JWS {
        let signed: String
        do throws(JOSEError) {
            let (text, wasEncrypted) = try decryptedIfEncrypted(compact, policy: \.introspection, what: "introspection answer")
            if !wasEncrypted, configuration.encryption?.requiresEncryptedIntrospection == true {
                throw JOSEError(.algorithmNotAllowed, "The introspection answer is not encrypted, but this client requires encrypted introspection answers.")
            }
            signed = text
        } catch {
            throw IntrospectionJWTValidator.refused(error)
        }
        return try IntrospectionJWTValidator.parse(signed)
    }

    /// The cached JWK set when `jws` needs one (an allowed asymmetric algorithm).
    private func cachedKeys(for jws: JWS, algorithms: [JWSAlgorithm], now: Date) async throws -> JSONWebKeySet? {
        guard !jws.algorithm.isHMAC, algorithms.contains(jws.algorithm), let keySet else { return nil }
        if let keys = keySet.cachedKeys(now: now) { return keys }
        return try await keySet.keys(now: now)
    }
}

/// An introspection answer as it arrived: JSON (already read), or a JWT still to verify.
private enum IntrospectionAnswer {
    case json(IntrospectionResponse)
    case jwt(JWS)
}
