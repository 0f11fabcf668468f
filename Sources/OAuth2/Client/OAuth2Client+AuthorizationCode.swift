import Foundation
import HTTPTypes

extension OAuth2Client {
    /// Builds an authorization request: the URL to open in a browser, and the state, nonce
    /// and PKCE verifier to keep until the callback.
    ///
    /// PKCE (S256) and `state` are always on; a `nonce` is added when `openid` is among the
    /// scopes; `dpop_jkt` with ``ClientConfiguration/dpop``; the parameters go in a signed
    /// request object with ``ClientConfiguration/requestObject``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the request must be pushed
    ///   (``startAuthorization(_:)`` pushes it); ``OAuth2Error/Code/missingEndpoint``;
    ///   ``OAuth2Error/Code/insecureEndpoint``.
    package func authorizationRequest(_ options: AuthorizationOptions = AuthorizationOptions()) throws
        -> AuthorizationRequest
    {
        try authorizationRequest(options, recipient: try cachedRecipientOrRefusal())
    }

    /// The request by value, its request object (if any) encrypted to `recipient`.
    func authorizationRequest(_ options: AuthorizationOptions, recipient: JSONWebKey?) throws(OAuth2Error) -> AuthorizationRequest {
        if pushesAuthorizationRequests {
            throw OAuth2Error.client(
                .invalidConfiguration, "Authorization requests to this server are pushed (RFC 9126): use startAuthorization(_:).")
        }
        return try AuthorizationRequest.make(metadata: metadata, configuration: configuration, options: options, now: now(), recipient: recipient)
    }

    /// The server key an encrypted request object goes to, from the cache; for a synchronous
    /// builder, which cannot fetch the JWK set.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when request objects are encrypted
    ///   and the key set is not cached yet.
    func cachedRecipientOrRefusal() throws(OAuth2Error) -> JSONWebKey? {
        guard let encryption = configuration.requestObject?.encryption else { return nil }
        try encryption.check(against: metadata)
        guard let recipient = cachedRequestObjectRecipient() else {
            throw .client(
                .invalidConfiguration,
                "An encrypted request object needs the server's JWK set, not fetched yet: use startAuthorization(_:), which fetches it.")
        }
        return recipient
    }

    /// Checks a callback (state, `iss`, errors; for a JWT-secured response, the JWT first:
    /// see ``authorizationResponse(callbackURL:request:)``) and exchanges its code for tokens.
    ///
    /// - Parameters:
    ///   - callbackURL: the URL the browser was redirected to.
    ///   - request: the request that started the flow.
    /// - Throws: ``OAuth2Error/Code/stateMismatch``, ``OAuth2Error/Code/issuerMismatch``,
    ///   ``OAuth2Error/Code/invalidAuthorizationResponse`` (a JARM response that fails a
    ///   check, or a plain one where a JWT was asked for), the authorization server's error
    ///   (`access_denied`…), or the token endpoint's. A callback that fails a check never
    ///   reaches the token endpoint.
    public func completeAuthorization(callbackURL: URL, request: AuthorizationRequest) async throws -> TokenSet {
        let response = try await authorizationResponse(callbackURL: callbackURL, request: request)
        return try await exchangeCode(response, request: request)
    }

    /// Exchanges a checked authorization code for tokens.
    public func exchangeCode(_ response: AuthorizationResponse, request: AuthorizationRequest) async throws -> TokenSet {
        let grant = Grant.authorizationCode(
            code: response.code, redirectURI: request.redirectURI, codeVerifier: request.codeVerifier)
        let tokens = try await sendGrant(grant, requestedScopes: request.scopes)
        guard tokens.idToken != nil || request.nonce == nil else {
            // OIDC Core §3.1.3.3: a token response to an `openid` request carries an ID token.
            throw OAuth2Error(.invalidIDToken, source: .client, message: "The token response to an OpenID Connect request has no ID token.",
                underlyingError: JOSEError(.malformed, "missing id_token"))
        }
        return try await validatingIDToken(
            in: tokens,
            expecting: IDTokenValidator.Expectations(nonce: request.nonce, maxAge: request.maxAge, accessToken: tokens.accessToken, authorizationCode: response.code))
    }
}
