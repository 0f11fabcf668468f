import Foundation
import HTTPTypes

extension OAuth2Client {
    /// Builds a (legacy) implicit-grant authorization request: `response_type=token` or
    /// `id_token token`, a fresh `state`, and a `nonce` (always for `id_token token`). No
    /// PKCE: there is no code.
    ///
    /// The implicit grant returns the access token in the browser's address, where history,
    /// extensions and referrers can read it; it cannot be sender-constrained and gives no
    /// refresh token. Use it only with a server that offers no authorization code flow,
    /// and only after setting ``ClientConfiguration/allowsImplicitGrant``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when
    ///   ``ClientConfiguration/allowsImplicitGrant`` is off, when the server requires pushed
    ///   requests, or for `id_token token` without the `openid` scope;
    ///   ``OAuth2Error/Code/missingEndpoint``; ``OAuth2Error/Code/insecureEndpoint``.
    @available(*, deprecated, message: "The implicit grant is insecure (RFC 9700 §2.1.2): use the authorization code flow with PKCE.")
    public func implicitAuthorizationRequest(
        _ responseType: ImplicitResponseType, options: AuthorizationOptions = AuthorizationOptions()
    ) throws -> AuthorizationRequest {
        guard configuration.allowsImplicitGrant else {
            throw OAuth2Error.client(
                .invalidConfiguration, "The implicit grant is off: set ClientConfiguration.allowsImplicitGrant to use it (RFC 9700 advises against it).")
        }
        if pushesAuthorizationRequests {
            throw OAuth2Error.client(.invalidConfiguration, "This server takes pushed authorization requests (RFC 9126): use the authorization code flow.")
        }
        return try AuthorizationRequest.make(
            metadata: metadata, configuration: configuration, options: options, now: now(), implicit: responseType,
            recipient: try cachedRecipientOrRefusal())
    }

    /// Checks an implicit grant's callback and returns its tokens: everything
    /// ``ImplicitAuthorizationResponse`` checks, then for an ID token the full validation
    /// (signature, `iss`, `aud`, `exp`…) with the request's `nonce` and an `at_hash` matching
    /// the access token both required (OIDC Core §3.2.2.10–11). The tokens never include a
    /// refresh token: a ``TokenSession`` made from them says ``OAuth2Error/Code/signInRequired``
    /// once they expire.
    ///
    /// - Parameters:
    ///   - callbackURL: the redirect's URL, with its fragment (a loopback listener's
    ///     fragment relay delivers it; an app's web view reads it).
    ///   - request: the request made by ``implicitAuthorizationRequest(_:options:)``.
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when
    ///   ``ClientConfiguration/allowsImplicitGrant`` is off; what
    ///   ``ImplicitAuthorizationResponse/init(callbackURL:request:receivedAt:)`` throws;
    ///   ``OAuth2Error/Code/invalidIDToken`` for an ID token that fails a check (or one that
    ///   came to a request without a nonce); ``OAuth2Error/Code/unboundToken`` for a Bearer
    ///   token with ``ClientConfiguration/dpop`` (unless it allows them).
    @available(*, deprecated, message: "The implicit grant is insecure (RFC 9700 §2.1.2): use the authorization code flow with PKCE.")
    public func completeImplicitAuthorization(callbackURL: URL, request: AuthorizationRequest) async throws -> TokenSet {
        guard configuration.allowsImplicitGrant else {
            throw OAuth2Error.client(
                .invalidConfiguration, "The implicit grant is off: set ClientConfiguration.allowsImplicitGrant to use it (RFC 9700 advises against it).")
        }
        let response = try ImplicitAuthorizationResponse(callbackURL: callbackURL, request: request, receivedAt: now(), quirks: configuration.quirks)
        var tokens = response.tokens
        try checkBinding(of: tokens, statusCode: 200)
        if let idToken = tokens.idToken {
            // A front-channel ID token is bound to this request only by its nonce.
            guard let nonce = request.nonce else {
                throw OAuth2Error(
                    .invalidIDToken, source: .client, message: "An ID token came in the fragment of a request without a nonce: it cannot be tied to this sign-in.",
                    underlyingError: JOSEError(.nonceMismatch, "no nonce sent"))
            }
            try requireEncryptionIfConfigured(idToken)
            tokens.idToken = try await validateIDToken(
                idToken,
                expecting: IDTokenValidator.Expectations(
                    nonce: nonce, maxAge: request.maxAge, accessToken: tokens.accessToken, requiresAccessTokenHash: true)).compact
        }
        return tokens
    }
}
