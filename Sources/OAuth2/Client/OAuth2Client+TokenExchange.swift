import Foundation

// MARK: - Token exchange (RFC 8693) and the JWT bearer grant (RFC 7523 §2.1)

extension OAuth2Client {
    /// Exchanges a token (RFC 8693): sends `request` to the token endpoint, authenticated as
    /// the client, and returns the issued token with its `issued_token_type`.
    ///
    /// ```swift
    /// let answer = try await client.exchangeToken(TokenExchangeRequest(
    ///     subject: .init(userAccessToken, type: .accessToken),
    ///     audiences: ["https://backend.example.com"]))
    /// print(answer.issuedTokenType)          // urn:ietf:params:oauth:token-type:access_token
    /// let tokens = answer.tokenSet           // nil when token_type is N_A
    /// ```
    ///
    /// The issued token may be something other than an access token (a JWT grant, an ID
    /// token): it is returned as it is, unverified — it is meant for the audience that asked
    /// for it. With ``ClientConfiguration/dpop`` the request carries a proof, and an issued
    /// access token that is not DPoP-bound is refused as in
    /// ``requestToken(_:requestedScopes:)``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidRequest`` for a malformed request (before anything
    ///   is sent); the server's error, typed — `invalid_grant` for a refused subject or actor
    ///   token, `invalid_target` for a refused audience or resource, `invalid_client`,
    ///   `unsupported_grant_type`; ``OAuth2Error/Code/invalidResponse`` for an answer without
    ///   `access_token` or `issued_token_type`.
    public func exchangeToken(_ request: TokenExchangeRequest) async throws -> TokenExchangeResponse {
        let grant = try Grant.tokenExchange(request)
        let url = try endpoint(endpoint("token_endpoint"), "token endpoint")
        return try await post(
            url, parameters: [("grant_type", grant.type)] + grant.parameters, kind: .token,
            authMethods: metadata.tokenEndpointAuthMethodsSupported, dpop: true
        ) { response, body, sentAt in
            let answer = try TokenExchangeResponse.parse(
                response: response, body: body, requestedScopes: grant.requestedScopes, sentAt: sentAt, receivedAt: now())
            if let tokens = answer.tokenSet, answer.issuedTokenType == .accessToken {
                try checkBinding(of: tokens, statusCode: response.status.code)
            }
            return answer
        }
    }

    /// The JWT bearer grant (RFC 7523 §2.1) with an assertion you have (from an identity
    /// provider, another authorization server's token exchange, your own signer).
    ///
    /// - Throws: ``OAuth2Error/Code/invalidRequest`` for an assertion that is not a compact
    ///   JWT; the server's error — `invalid_grant` for an assertion it refuses (bad signature,
    ///   untrusted issuer, wrong audience, expired, replayed), `invalid_client`,
    ///   `unsupported_grant_type`.
    public func jwtBearer(assertion: String, scopes: [String]? = nil) async throws -> TokenSet {
        try await requestToken(.jwtBearer(assertion: assertion, scopes: scopes ?? configuration.scopes))
    }

    /// The JWT bearer grant (RFC 7523 §2.1) with an assertion the library signs with `key`.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the assertion cannot be signed
    ///   (an HMAC key without a secret, empty claims); otherwise as ``jwtBearer(assertion:scopes:)``.
    public func jwtBearer(signing assertion: JWTBearerAssertion, with key: JWSSigningKey, scopes: [String]? = nil)
        async throws -> TokenSet
    {
        let signed: String
        do {
            signed = try assertion.signed(with: key)
        } catch {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The JWT bearer assertion cannot be signed: \(error.message)", underlyingError: error)
        }
        return try await jwtBearer(assertion: signed, scopes: scopes)
    }

    /// A JWT bearer assertion addressed to this server: `aud` is its issuer identifier (or
    /// its token endpoint when the metadata names no issuer), valid for `lifetime` seconds.
    public func jwtBearerAssertion(issuer: String, subject: String, lifetime: TimeInterval = 60) -> JWTBearerAssertion {
        JWTBearerAssertion(
            issuer: issuer, subject: subject,
            audience: metadata.issuer ?? metadata.tokenEndpoint?.absoluteString ?? "",
            issuedAt: now(), lifetime: lifetime)
    }
}
