import Foundation

extension TokenSession {
    /// Exchanges the session's access token (RFC 8693) for a token for another audience or
    /// resource — the usual step of a service that calls a downstream service on the
    /// signed-in user's behalf.
    ///
    /// The subject is the session's current access token (renewed first if it expires
    /// within the leeway), of type ``TokenTypeURI/accessToken``. The session's own tokens do
    /// not change, and the issued token is not stored: it belongs to another audience. To
    /// make a session of an exchanged token instead, sign in with it:
    ///
    /// ```swift
    /// let downstream = try await session.exchange(audiences: ["https://backend.example.com"])
    /// try await backendSession.signIn { client in
    ///     guard let tokens = try await client.exchangeToken(request).tokenSet else {
    ///         throw OAuth2Error(.invalidResponse, source: .server, message: "The exchange issued no token set.")
    ///     }
    ///     return tokens
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - actor: an actor token for delegation (RFC 8693 §1.1); `nil` for impersonation.
    ///   - resources: `resource`: absolute URIs of the services the token is for.
    ///   - audiences: `audience`: logical names of the services the token is for.
    ///   - scopes: `scope`: the scopes asked for; empty sends none.
    ///   - requestedTokenType: `requested_token_type`: the type wanted; `nil` lets the server choose.
    /// - Throws: as ``freshAccessToken()`` (``OAuth2Error/Code/signInRequired`` without
    ///   tokens), then as ``OAuth2Client/exchangeToken(_:)``.
    public func exchange(
        actor: TokenExchangeRequest.Token? = nil,
        resources: [URL] = [],
        audiences: [String] = [],
        scopes: [String] = [],
        requestedTokenType: TokenTypeURI? = nil
    ) async throws -> TokenExchangeResponse {
        let subject = try await freshAccessToken()
        return try await client.exchangeToken(
            TokenExchangeRequest(
                subject: .init(subject, type: .accessToken), actor: actor, resources: resources,
                audiences: audiences, scopes: scopes, requestedTokenType: requestedTokenType))
    }
}
