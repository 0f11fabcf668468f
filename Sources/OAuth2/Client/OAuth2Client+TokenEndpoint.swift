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
    ///
    /// A `refresh_token` grant goes the way a ``TokenSession``'s refresh goes (the session uses
    /// this very path): an answer without a refresh token keeps the one sent (Glewlwyd,
    /// LemonLDAP::NG); an HTTP 400 without an error object, Glewlwyd's answer to a dead
    /// refresh token, is `invalid_grant`; a new ID token must name the issuer and subject of
    /// ``Grant/previousIDTokenClaims`` when the grant has them (OIDC Core §12.2); with
    /// ``ServerQuirks/scopesOnRefresh`` a grant without scopes sends the configuration's.
    ///
    /// - Throws: ``OAuth2Error``: the server's error (`invalid_grant` —
    ///   ``OAuth2Error/requiresReauthorization`` — for a dead refresh token, an empty 400
    ///   included), ``OAuth2Error/Code/invalidIDToken`` for an ID token that fails a check,
    ///   a transport error.
    public func requestToken(_ grant: Grant, requestedScopes: [String]? = nil) async throws -> TokenSet {
        if grant.type == Grant.refreshTokenType { return try await sendRefresh(grant, requestedScopes: requestedScopes) }
        let tokens = try await sendGrant(grant, requestedScopes: requestedScopes)
        return try await validatingIDToken(in: tokens, expecting: IDTokenValidator.Expectations(accessToken: tokens.accessToken))
    }

    /// The one refresh path: ``requestToken(_:requestedScopes:)`` with a `refresh_token`
    /// grant, and through it ``refresh(_:scopes:)`` and every session's renewal.
    private func sendRefresh(_ grant: Grant, requestedScopes: [String]?) async throws -> TokenSet {
        var grant = grant
        if configuration.quirks.contains(.scopesOnRefresh) { grant = grant.addingScopes(configuration.scopes) }
        var refreshed: TokenSet
        do {
            refreshed = try await sendGrant(grant, requestedScopes: requestedScopes)
        } catch let error as OAuth2Error where error.inferredFromStatus && error.statusCode == 400 {
            // Glewlwyd answers a revoked, expired or unknown refresh token with an empty 400,
            // as it answers a wrong secret with an empty 403 (read as invalid_client).
            var refused = error
            refused.code = .invalidGrant
            refused.message = "HTTP 400 without an error object in answer to a refresh: the server refused the refresh token."
            throw refused
        }
        // OIDC Core §12.2: a new ID token names the same issuer and subject as the first.
        refreshed = try await validatingIDToken(
            in: refreshed,
            expecting: IDTokenValidator.Expectations(accessToken: refreshed.accessToken, previous: grant.previousIDTokenClaims))
        // RFC 6749 §6: without a new refresh token, the one sent stays valid.
        if refreshed.refreshToken == nil { refreshed.refreshToken = grant.parameters.first { $0.0 == "refresh_token" }?.1 }
        return refreshed
    }

    /// The token request itself, without ID-token validation.
    func sendGrant(_ grant: Grant, requestedScopes: [String]?) async throws -> TokenSet {
        let grant = grant.usesConfiguredScopes ? grant.addingScopes(configuration.scopes) : grant
        let url = try endpoint(endpoint("token_endpoint"), "token endpoint")
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

    /// `client_credentials`: tokens for the client itself; the same as
    /// `requestToken(.clientCredentials(scopes: scopes))`.
    ///
    /// - Parameter scopes: the scopes to ask for; `nil` asks for the configured ones.
    public func clientCredentials(scopes: [String]? = nil) async throws -> TokenSet {
        try await requestToken(.clientCredentials(scopes: scopes))
    }

    /// `password`: the resource owner's credentials (legacy servers only; RFC 9700 forbids
    /// it for new deployments); the same as `requestToken(.password(…))`.
    ///
    /// - Parameters:
    ///   - username: the resource owner's username.
    ///   - password: the resource owner's password.
    ///   - scopes: the scopes to ask for; `nil` asks for the configured ones.
    public func password(username: String, password: String, scopes: [String]? = nil) async throws -> TokenSet {
        try await requestToken(.password(username: username, password: password, scopes: scopes))
    }

    /// Refreshes `tokens` through ``requestToken(_:requestedScopes:)`` (the one refresh
    /// path) and merges the answer into them: a response without a refresh token keeps the
    /// current one (Glewlwyd), one with a new refresh token replaces it (rotation, as
    /// django-oauth-toolkit does), one without an ID token keeps the current ID token. A new
    /// ID token is verified and must name the same issuer and subject as the current one; if
    /// it fails, nothing is returned.
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
        let refreshed = try await requestToken(
            .refreshToken(refreshToken, scopes: scopes, previousIDTokenClaims: tokens.idTokenClaims),
            requestedScopes: scopes.nilIfEmpty ?? tokens.scopes)
        return tokens.merging(refreshed: refreshed)
    }
}
