import Foundation
import HTTPTypes

// MARK: - Pushed authorization requests (RFC 9126)

extension OAuth2Client {
    /// `true` when authorization requests go through the PAR endpoint: the server's
    /// metadata says `require_pushed_authorization_requests: true`, or the configuration
    /// asks for it (``ClientConfiguration/usePushedAuthorizationRequests``).
    public var pushesAuthorizationRequests: Bool {
        metadata.requirePushedAuthorizationRequests == true || configuration.usePushedAuthorizationRequests
    }

    /// Starts a sign-in: the authorization request whose URL to open in a browser, and the
    /// state, nonce and PKCE verifier to keep until the callback (pass it to
    /// ``completeAuthorization(callbackURL:request:)``).
    ///
    /// PKCE (S256) and `state` are always on; a `nonce` is added when `openid` is among the
    /// scopes; `dpop_jkt` with ``ClientConfiguration/dpop``; the parameters go in a signed
    /// request object with ``ClientConfiguration/requestObject``, encrypted to the server
    /// (its JWK set, fetched when not cached) with ``RequestObjectOptions/encryption``. When
    /// ``pushesAuthorizationRequests`` (the server requires it, or
    /// ``ClientConfiguration/usePushedAuthorizationRequests``), the parameters are pushed to
    /// the PAR endpoint (RFC 9126) first, authenticated as at the token endpoint and with a
    /// DPoP proof when configured, and the URL carries only `client_id` and `request_uri`.
    ///
    /// - Throws: ``OAuth2Error/Code/missingEndpoint``; ``OAuth2Error/Code/insecureEndpoint``;
    ///   ``OAuth2Error/Code/invalidConfiguration`` for a request object the client cannot
    ///   sign, or encrypt (a pair the server does not offer, no server key that fits);
    ///   for a pushed request, the server's error typed as at the token endpoint
    ///   (`invalid_request`, `invalid_client` — also for an empty 401 or 403 —,
    ///   `invalid_request_object`…), ``OAuth2Error/Code/invalidResponse`` for an answer
    ///   without a usable `request_uri`, and transport errors.
    public func startAuthorization(_ options: AuthorizationOptions = AuthorizationOptions()) async throws -> AuthorizationRequest {
        if pushesAuthorizationRequests { return try await pushAuthorizationRequest(options) }
        return try authorizationRequest(options, recipient: try await requestObjectRecipient())
    }

    /// Pushes the authorization parameters to the PAR endpoint (RFC 9126), authenticated as
    /// at the token endpoint, and returns the request whose URL carries only `client_id`
    /// and the `request_uri` the server returned.
    ///
    /// The parameters are those of `authorizationRequest(_:)` — PKCE, `state`, `nonce`,
    /// `dpop_jkt` — or, with ``ClientConfiguration/requestObject``, one signed `request`
    /// object holding them. With ``ClientConfiguration/dpop`` the push carries a DPoP proof
    /// too (RFC 9449 §10.1), retried once with the server's nonce when it asks for one.
    ///
    /// - Throws: ``OAuth2Error/Code/missingEndpoint`` without a PAR endpoint; the server's
    ///   error, typed as at the token endpoint (`invalid_request`, `invalid_client` — also for
    ///   an empty 401 or 403 —, `invalid_request_object`…); ``OAuth2Error/Code/invalidResponse``
    ///   for an answer without a usable `request_uri`; transport errors.
    package func pushAuthorizationRequest(_ options: AuthorizationOptions = AuthorizationOptions()) async throws -> AuthorizationRequest {
        let url = try endpoint(endpoint("pushed_authorization_request_endpoint"), "pushed authorization request endpoint")
        let draft = try AuthorizationDraft(metadata: metadata, configuration: configuration, options: options)
        let sentAt = now()
        var parameters = draft.parameters
        if let requestObject = configuration.requestObject {
            let recipient = try await requestObjectRecipient()
            let signed = try draft.requestObject(requestObject, metadata: metadata, configuration: configuration, now: sentAt, recipient: recipient)
            parameters = [("client_id", configuration.clientID), ("request", signed)]
        }
        let (requestURI, lifetime) = try await post(
            url, parameters: parameters, kind: .pushedAuthorization,
            authMethods: metadata.tokenEndpointAuthMethodsSupported, dpop: true
        ) { response, body, _ in
            let members = ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])
            if let error = ResponseParsing.error(in: response, members: members, kind: .pushedAuthorization, now: now()) {
                throw error
            }
            guard let members, let requestURI = members["request_uri"]?.stringValue, !requestURI.isEmpty,
                requestURI.count <= 2048, !requestURI.contains(where: { $0.isWhitespace || $0.isNewline })
            else {
                throw OAuth2Error.invalidResponse("The pushed authorization response has no usable request_uri.", statusCode: response.status.code)
            }
            return (requestURI, ResponseParsing.number(members["expires_in"]).flatMap { $0 > 0 && $0 < 1e7 ? $0 : nil })
        }
        let authorizationURL = try draft.endpoint.appendingQuery([("client_id", configuration.clientID), ("request_uri", requestURI)])
        return draft.request(
            url: authorizationURL, metadata: metadata, now: sentAt, requestURI: requestURI,
            expiresAt: lifetime.map { sentAt.addingTimeInterval($0) })
    }
}
