import Foundation

extension OAuth2Client {
    /// Parses and checks a callback to `request.redirectURI`, plain or JWT-secured (JARM).
    ///
    /// A plain response gets the checks of ``AuthorizationResponse/init(callbackURL:request:)``.
    /// When the request asked for a JARM response mode (``AuthorizationRequest/asksForJWTResponse``),
    /// the callback's one `response` parameter is a JWT, checked in this order:
    /// 1. a JWE (signed, then encrypted) is decrypted with ``ClientConfiguration/encryption``'s
    ///    keys and ``EncryptionOptions/authorizationResponse``'s algorithms; a signed-only one
    ///    is refused when ``JARMOptions/requiresEncryption`` is set;
    /// 2. its algorithm is the registered one (``JARMOptions/signingAlgorithm``, RS256 by
    ///    default; never `none`, never HMAC keyed by a public key) and its signature verifies
    ///    with the provider's JWK set (fetched again once for an unknown `kid`);
    /// 3. `iss` is the issuer exactly, `aud` names this client, `exp` has not passed (with
    ///    ``IDTokenValidationOptions/leeway``, on the client's clock);
    /// 4. its claims (`code`, `state`, `iss`, `error`…) then get every check of a plain
    ///    response: `state` equal to the one sent, an `error` thrown as the server's error.
    ///
    /// A callback with plain `code`, `state` or `error` parameters to a JARM request is
    /// refused (a downgrade). Nothing of a refused response reaches the token endpoint.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidAuthorizationResponse`` for a JWT that fails a
    ///   check (``OAuth2Error/joseReason`` says which; the JWT is never echoed) or a
    ///   downgrade; ``OAuth2Error/Code/redirectMismatch``; ``OAuth2Error/Code/stateMismatch``;
    ///   ``OAuth2Error/Code/issuerMismatch``; the server's error (`access_denied`…);
    ///   transport errors from fetching the JWK set.
    public func authorizationResponse(callbackURL: URL, request: AuthorizationRequest) async throws -> AuthorizationResponse {
        let pairs = try AuthorizationResponse.callbackParameters(callbackURL, request: request)
        return try await authorizationResponse(parameters: pairs, request: request)
    }

    /// Checks already-decoded response parameters (a `form_post` or `form_post.jwt` body),
    /// plain or JWT-secured, as ``authorizationResponse(callbackURL:request:)`` does.
    ///
    /// - Throws: as ``authorizationResponse(callbackURL:request:)``.
    public func authorizationResponse(parameters pairs: [(String, String)], request: AuthorizationRequest) async throws -> AuthorizationResponse {
        guard request.asksForJWTResponse else { return try AuthorizationResponse(parameters: pairs, request: request) }
        let claims = try await verifiedJARMClaims(try Self.responseJWT(in: pairs))
        return try AuthorizationResponse(verified: claims, request: request)
    }

    /// The `response` JWT of a JARM callback; plain response parameters beside it, or
    /// instead of it, are a downgrade.
    static func responseJWT(in pairs: [(String, String)]) throws(OAuth2Error) -> String {
        let plain: Set<String> = ["code", "state", "error", "iss", "access_token", "id_token"]
        let responses = pairs.filter { $0.0 == "response" }
        guard responses.count == 1, !pairs.contains(where: { plain.contains($0.0) }) else {
            if responses.count > 1 { throw .client(.invalidAuthorizationResponse, "The parameter response appears more than once in the callback.") }
            throw AuthorizationResponse.downgrade
        }
        return responses[0].1
    }

    /// The JARM checks of a `response` JWT (decryption, signature, `iss`, `aud`, `exp`); its
    /// response parameters, as name-value pairs (`aud` and `exp` left out).
    func verifiedJARMClaims(_ compact: String) async throws -> [(String, String)] {
        let options = configuration.jarm ?? JARMOptions()
        let issuer = metadata.issuer ?? ""
        let current = now()
        do {
            let (signed, wasEncrypted) = try decryptedIfEncrypted(compact, policy: \.authorizationResponse, what: "authorization response")
            if options.requiresEncryption, !wasEncrypted {
                throw JOSEError(.algorithmNotAllowed, "The authorization response is not encrypted, but this client requires encrypted responses.")
            }
            let jws = try JWS(compact: signed)
            let algorithm = options.signingAlgorithm
            let validator = IDTokenValidator(
                issuer: issuer, clientID: configuration.clientID, allowedAlgorithms: [algorithm],
                clientSecret: algorithm.isHMAC ? configuration.clientSecret : nil, options: configuration.idTokenValidation)
            try await verifySignature(jws, validator: validator, now: current)
            let claims = try jws.claims()
            guard !issuer.isEmpty, claims["iss"]?.stringValue == issuer else {
                throw JOSEError(.issuerMismatch, "The authorization response's iss is not the issuer.")
            }
            let audience = claims["aud"].map { $0.stringValue.map { [$0] } ?? $0.arrayValue?.compactMap(\.stringValue) ?? [] } ?? []
            guard audience.contains(configuration.clientID) else {
                throw JOSEError(.audienceMismatch, "The authorization response is not addressed to this client.")
            }
            guard let expiry = claims["exp"]?.doubleValue else { throw JOSEError(.expired, "The authorization response has no exp.") }
            guard expiry - current.timeIntervalSince1970 > -configuration.idTokenValidation.leeway else {
                throw JOSEError(.expired, "The authorization response has expired.")
            }
            var pairs: [(String, String)] = []
            for (name, value) in claims.sorted(by: { $0.key < $1.key }) where name != "aud" && name != "exp" {
                if let text = value.stringValue { pairs.append((name, text)) }
            }
            return pairs
        } catch let error as JOSEError {
            logger.debug("Authorization response refused: \(error.reason)")
            throw OAuth2Error(.invalidAuthorizationResponse, source: .client, message: "The JWT-secured authorization response was refused: \(error.message)", underlyingError: error)
        }
    }

    /// The `state` a callback to `request` carries, unverified: a plain response's `state`,
    /// or the `state` claim of a JARM `response` (decrypted when it is a JWE; its signature
    /// not checked). For finding the pending sign-in a callback belongs to, before
    /// ``authorizationResponse(callbackURL:request:)`` checks everything; `nil` when there is
    /// none.
    package func unverifiedState(ofCallback pairs: [(String, String)]) -> String? {
        if let state = pairs.first(where: { $0.0 == "state" }) { return state.1 }
        guard let response = pairs.first(where: { $0.0 == "response" })?.1,
            let signed = try? decryptedIfEncrypted(response, policy: \.authorizationResponse, what: "authorization response").text,
            let claims = try? JWS(compact: signed).claims()
        else { return nil }
        return claims["state"]?.stringValue
    }
}
