import Foundation
import HTTPTypes

// MARK: - Requests with an access token (RFC 6750, RFC 9449 §7)

extension OAuth2Client {
    /// `request` with the access token of `tokens`: `Authorization: Bearer <token>` for a
    /// Bearer token; for a DPoP token, `Authorization: DPoP <token>` and a `DPoP` proof for
    /// this method and URL, with `ath` and the server's latest nonce, signed with
    /// ``ClientConfiguration/dpop``'s key.
    ///
    /// A proof is good for one request: authorize each request anew.
    ///
    /// - Throws: ``OAuth2Error/Code/insecureEndpoint`` unless the URL is HTTPS or plain HTTP
    ///   to a loopback host; ``OAuth2Error/Code/invalidConfiguration`` for a DPoP token
    ///   without a DPoP key in the configuration, or a token type the library cannot send.
    package func authorize(_ request: HTTPRequest, with tokens: TokenSet) async throws -> HTTPRequest {
        try await authorize(request, accessToken: tokens.accessToken, tokenType: tokens.tokenType, nonce: nil)
    }

    /// Sends `request` with the access token of `tokens` (see ``authorize(_:with:)``) through
    /// this client's transport and interceptors, and returns the response whatever its status.
    ///
    /// A DPoP request that the server refuses for want of a nonce (`401` with
    /// `WWW-Authenticate: DPoP error="use_dpop_nonce"` and a `DPoP-Nonce` header) is sent
    /// once more with a new proof carrying that nonce; the nonce is remembered for the
    /// server's next requests. Nothing else is retried: a refused token is the caller's (or
    /// a ``TokenSession``'s) to renew.
    ///
    /// - Parameters:
    ///   - request: the request to send.
    ///   - body: the request body (sent again on the retry).
    ///   - tokens: the tokens whose access token authorizes the request.
    /// - Throws: as ``authorize(_:with:)``; transport errors.
    package func perform(_ request: HTTPRequest, body: Data? = nil, with tokens: TokenSet) async throws -> (HTTPResponse, Data) {
        try await send(request, body: body, accessToken: tokens.accessToken, tokenType: tokens.tokenType, kind: .resource)
    }

    /// Sends a request with an access token, retrying once with a new DPoP nonce when the
    /// server asks for one.
    func send(
        _ request: HTTPRequest, body: Data?, accessToken: String, tokenType: TokenType, kind: RequestKind
    ) async throws -> (HTTPResponse, Data) {
        let url = try Self.tokenDestination(request)
        let sent = try await sendRetryingDPoPNonce(to: url, dpop: tokenType == .dpop, kind: kind) { nonce in
            (try await authorize(request, accessToken: accessToken, tokenType: tokenType, nonce: nonce), body)
        }
        return (sent.response, sent.responseBody)
    }

    private func authorize(_ request: HTTPRequest, accessToken: String, tokenType: TokenType, nonce: String?) async throws -> HTTPRequest {
        let url = try Self.tokenDestination(request)
        var request = request
        switch tokenType {
        case .bearer:
            request.headerFields[.authorization] = "Bearer " + accessToken
            request.headerFields[.dpop] = nil
        case .dpop:
            guard let key = configuration.dpop?.key else {
                throw OAuth2Error.client(
                    .invalidConfiguration, "A DPoP token needs a proof: set ClientConfiguration.dpop to the key the token is bound to.")
            }
            var nonce = nonce
            if nonce == nil { nonce = await dpopNonces.nonce(for: url) }
            request.headerFields[.authorization] = "DPoP " + accessToken
            request.headerFields[.dpop] = try Self.proof(key, method: request.method, url: url, accessToken: accessToken, nonce: nonce, now: now())
        default:
            throw OAuth2Error.client(.invalidConfiguration, "The token type \(tokenType) cannot be sent.")
        }
        return request
    }

    /// The request's URL, if a token may go there (see ``EndpointPolicy/checkTokenDestination(_:)``).
    static func tokenDestination(_ request: HTTPRequest) throws(OAuth2Error) -> URL {
        try EndpointPolicy.checkTokenDestination(request)
        guard let url = request.url else {
            throw .client(.invalidConfiguration, "The request has no absolute URL.")
        }
        return url
    }
}
