import Foundation
import HTTPTypes

extension OAuth2Client {
    /// Sends a grant to the token endpoint and returns the tokens.
    ///
    /// The client authenticates with the configured method (or the one chosen from
    /// `token_endpoint_auth_methods_supported`); the configuration's extra token
    /// parameters and headers are added. With ``ClientConfiguration/dpop`` the request
    /// carries a DPoP proof (retried once with the server's nonce when it asks for one), and
    /// a `Bearer` answer is refused with ``OAuth2Error/Code/unboundToken`` unless
    /// ``DPoPOptions/allowsBearerTokens``.
    ///
    /// - Parameters:
    ///   - grant: the grant to send.
    ///   - requestedScopes: the scopes to assume when the response omits `scope`
    ///     (defaults to the grant's).
    ///
    /// An ID token in the response is verified (without a nonce: none was sent) before the
    /// tokens are returned; if it fails, the call throws and no token is returned.
    public func requestToken(_ grant: Grant, requestedScopes: [String]? = nil) async throws -> TokenSet {
        let tokens = try await sendGrant(grant, requestedScopes: requestedScopes)
        try await validateIDToken(in: tokens, expecting: IDTokenValidator.Expectations(accessToken: tokens.accessToken))
        return tokens
    }

    /// The token request itself, without ID-token validation.
    func sendGrant(_ grant: Grant, requestedScopes: [String]?) async throws -> TokenSet {
        let url = try endpoint(metadata.tokenEndpoint, "token endpoint")
        var parameters: [(String, String)] = [("grant_type", grant.type)]
        parameters += grant.parameters
        return try await post(
            url, parameters: parameters, kind: .token,
            authMethods: metadata.tokenEndpointAuthMethodsSupported, dpop: true
        ) { response, body, sentAt in
            let tokens = try TokenSet.parse(
                response: response,
                body: body,
                requestedScopes: requestedScopes ?? grant.requestedScopes,
                sentAt: sentAt,
                receivedAt: now(),
                quirks: configuration.quirks
            )
            try checkBinding(of: tokens, statusCode: response.status.code)
            return tokens
        }
    }

    /// RFC 9449 §5: a server that ignored the proof issued a token anyone holding it can
    /// use; refused unless ``DPoPOptions/allowsBearerTokens``.
    func checkBinding(of tokens: TokenSet, statusCode: Int) throws(OAuth2Error) {
        if let dpop = configuration.dpop, tokens.tokenType != .dpop, !dpop.allowsBearerTokens {
            throw OAuth2Error(
                .unboundToken, source: .server,
                message: "The token endpoint answered a DPoP token request with a \(tokens.tokenType) token; set DPoPOptions.allowsBearerTokens to accept it.",
                statusCode: statusCode)
        }
    }

    /// `client_credentials`: tokens for the client itself.
    public func clientCredentials(scopes: [String]? = nil) async throws -> TokenSet {
        try await requestToken(.clientCredentials(scopes: scopes ?? configuration.scopes))
    }

    /// `password`: the resource owner's credentials (legacy servers only; RFC 9700 forbids
    /// it for new deployments).
    public func password(username: String, password: String, scopes: [String]? = nil) async throws -> TokenSet {
        try await requestToken(.password(username: username, password: password, scopes: scopes ?? configuration.scopes))
    }

    /// Refreshes `tokens` and merges the answer into them: a response without a refresh
    /// token keeps the current one (Glewlwyd), one with a new refresh token replaces it
    /// (rotation, as django-oauth-toolkit does). A new ID token is verified and must name
    /// the same issuer and subject as the current one; if it fails, nothing is returned.
    ///
    /// Empty `scopes` keep the grant's scopes and send none — unless the configuration has
    /// ``ServerQuirks/scopesOnRefresh``, which sends the configuration's scopes.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidRequest`` when `tokens` has no refresh token;
    ///   `invalid_grant` (``OAuth2Error/requiresReauthorization``) — also for an HTTP 400
    ///   without an error object, Glewlwyd's answer — when the refresh token is
    ///   dead.
    package func refresh(_ tokens: TokenSet, scopes: [String] = []) async throws -> TokenSet {
        guard let refreshToken = tokens.refreshToken else {
            throw OAuth2Error.client(.invalidRequest, "The token set has no refresh token.")
        }
        var sentScopes = scopes
        if sentScopes.isEmpty, configuration.quirks.contains(.scopesOnRefresh) { sentScopes = configuration.scopes }
        let refreshed: TokenSet
        do {
            refreshed = try await sendGrant(
                .refreshToken(refreshToken, scopes: sentScopes), requestedScopes: scopes.nilIfEmpty ?? tokens.scopes)
        } catch let error as OAuth2Error where error.inferredFromStatus && error.statusCode == 400 {
            // Glewlwyd answers a revoked, expired or unknown refresh token with an empty 400,
            // as it answers a wrong secret with an empty 403 (read as invalid_client).
            var refused = error
            refused.code = .invalidGrant
            refused.message = "HTTP 400 without an error object in answer to a refresh: the server refused the refresh token."
            throw refused
        }
        // OIDC Core §12.2: a new ID token names the same issuer and subject as the first.
        try await validateIDToken(
            in: refreshed,
            expecting: IDTokenValidator.Expectations(accessToken: refreshed.accessToken, previous: tokens.idTokenClaims))
        return tokens.merging(refreshed: refreshed)
    }
}
