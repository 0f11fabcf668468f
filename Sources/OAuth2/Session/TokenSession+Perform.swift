import Foundation
import HTTPTypes

extension TokenSession {
    /// `request` with the session's access token in its `Authorization` header, renewed
    /// first when it expires within the leeway. A DPoP-bound token goes as
    /// `Authorization: DPoP <token>` with a `DPoP` proof for this method and URL (with `ath`
    /// and the server's latest nonce), signed with the session's key: a proof is good for one
    /// request, so authorize each request anew.
    ///
    /// The token goes only to HTTPS URLs, or to plain HTTP on a loopback host.
    ///
    /// - Throws: ``OAuth2Error/Code/insecureEndpoint`` for any other URL;
    ///   ``OAuth2Error/Code/invalidConfiguration`` for a DPoP-bound token when the session
    ///   has no DPoP key; otherwise as ``freshTokens()``.
    public func authorize(_ request: HTTPRequest) async throws -> HTTPRequest {
        try EndpointPolicy.checkTokenDestination(request)
        // The hot path (a fresh Bearer token, benchmarked): no URL to build, no proof, and
        // the header value made once per token, so that the only allocation left is the
        // request's own: the buffer of its header fields.
        let now = baseClient.now()
        let header: String? = state.withLock { state in
            guard let snapshot = state.current, snapshot.expiry.isFresh(at: now), snapshot.tokens.tokenType == .bearer else { return nil }
            if let header = snapshot.bearerHeader { return header }
            let header = "Bearer " + snapshot.tokens.accessToken
            state.current?.bearerHeader = header
            return header
        }
        if let header {
            var request = request
            request.headerFields[.authorization] = header
            return request
        }
        let tokens = try await freshTokens()
        if tokens.tokenType == .bearer {
            var request = request
            request.headerFields[.authorization] = "Bearer " + tokens.accessToken
            return request
        }
        // The client is read after the tokens: reading them may have settled the DPoP key.
        return try await client.authorize(request, with: tokens)
    }

    /// Sends `request` with the session's access token through the client's transport and
    /// interceptors, and returns the response, whatever its status — except a refused token.
    ///
    /// On a 401 whose challenge is `Bearer error="invalid_token"` or names no error (and on
    /// a 403 when ``Options/retryOnForbidden`` is set), the token is renewed once — shared
    /// with every other caller that saw it refused — and the request sent once more. A
    /// DPoP-bound token carries a fresh proof each time, and a `DPoP error="use_dpop_nonce"`
    /// challenge is answered once with the server's nonce (remembered for the server's next
    /// requests), without renewing the token.
    ///
    /// With ``Options/stepUp``, a `403` whose challenge is `error="insufficient_scope"` with
    /// a `scope` leads to one step-up sign-in for the union of the scopes and one more
    /// try; a server that asks again gets ``OAuth2Error/Code/insufficientScope``.
    ///
    /// - Parameters:
    ///   - request: the request to send.
    ///   - body: the request body, sent again on the retry.
    /// - Throws: the resource server's error (the challenge's `error`, else
    ///   ``OAuth2Error/Code/invalidToken`` for a 401), with the HTTP status, when the retry
    ///   is refused too; transport errors; otherwise as
    ///   ``authorize(_:)``.
    public func perform(_ request: HTTPRequest, body: Data? = nil) async throws -> (HTTPResponse, Data) {
        try EndpointPolicy.checkTokenDestination(request)
        let tokens = try await freshTokens()
        let (response, responseBody) = try await client.send(
            request, body: body, accessToken: tokens.accessToken, tokenType: tokens.tokenType, kind: .resource)
        guard refusesToken(response) else {
            return try await steppingUp(request, body: body, after: response, granted: tokens) ?? (response, responseBody)
        }
        let renewed = try await renew(rejecting: tokens.accessToken)
        let (retried, retriedBody) = try await client.send(
            request, body: body, accessToken: renewed.accessToken, tokenType: renewed.tokenType, kind: .resource)
        guard refusesToken(retried) else {
            return try await steppingUp(request, body: body, after: retried, granted: renewed) ?? (retried, retriedBody)
        }
        let members = ResponseParsing.members(of: retriedBody, contentType: retried.headerFields[.contentType])
        var error = ResponseParsing.error(in: retried, members: members, kind: .resource, now: baseClient.now())
            ?? OAuth2Error(.httpError, source: .server, statusCode: retried.status.code)
        if retried.status.code == 401, error.code == .httpError {
            error.code = .invalidToken
            error.message = "The resource server refused a renewed access token too."
        }
        throw error.withholding(HeldSecrets([tokens.accessToken, renewed.accessToken]))
    }

    /// Whether `response` says the access token was refused, in a way a new token can fix.
    func refusesToken(_ response: HTTPResponse) -> Bool {
        switch response.status.code {
        case 401:
            // A Bearer/DPoP challenge that names another error (insufficient_scope,
            // invalid_request) is not cured by a new token.
            for value in response.headerFields[values: .wwwAuthenticate] {
                guard let challenge = WWWAuthenticate(value), ["bearer", "dpop"].contains(challenge.scheme.lowercased()),
                    let error = challenge.parameters["error"]
                else { continue }
                return error == OAuth2Error.Code.invalidToken.rawValue
            }
            return true
        case 403:
            // A scope challenge is for a step-up sign-in, when the session has one.
            return options.retryOnForbidden && (options.stepUp == nil || Self.insufficientScope(response) == nil)
        default:
            return false
        }
    }
}
