import Foundation
import OAuth2Internals

/// The response types of the legacy implicit grant (RFC 6749 §4.2, OIDC Core §3.2).
///
/// Used only with ``ClientConfiguration/allowsImplicitGrant``: RFC 9700 §2.1.2 advises
/// against the implicit grant. Use the authorization code flow with PKCE wherever the
/// server offers it.
public enum ImplicitResponseType: String, Sendable, Hashable, Codable, CaseIterable {
    /// `token`: an access token in the redirect's fragment (RFC 6749 §4.2).
    case token = "token"
    /// `id_token token`: an access token and an ID token in the fragment (OIDC Core §3.2);
    /// the ID token must carry the request's `nonce` and the access token's `at_hash`.
    case idTokenToken = "id_token token"
}

/// A checked implicit-grant response: the tokens read from the redirect's fragment.
///
/// The checks, in order: the callback arrived at the redirect URI; the parameters come from
/// the fragment (or, for an error only, the query); no parameter is repeated; `state` is
/// present and equal to the one sent (constant time); `iss` as RFC 9207 wants; an `error`
/// becomes the server's typed ``OAuth2Error``; then the fragment is read as a token response
/// (`access_token`, `token_type`, `expires_in`, `scope`), and a `refresh_token` is refused
/// (RFC 6749 §4.2.2 forbids one: it would have been exposed in the browser's address). The
/// ID token is *not* verified here (that needs the provider's keys):
/// ``OAuth2Client/completeImplicitAuthorization(callbackURL:request:)`` does it.
public struct ImplicitAuthorizationResponse: Sendable, Hashable, CustomStringConvertible {
    /// The tokens: no refresh token, ever; `expiresAt` counted from when the response was
    /// parsed.
    public let tokens: TokenSet
    /// The `state`, equal to the request's.
    public let state: String
    /// The RFC 9207 `iss` parameter, when the server sent one (already checked).
    public let issuer: String?

    /// Parses and checks a redirect to `request.redirectURI` whose fragment carries the
    /// response.
    ///
    /// - Parameters:
    ///   - callbackURL: the URL the browser was sent to, fragment included.
    ///   - request: the implicit request that started the flow.
    ///   - receivedAt: when the response arrived; `expires_in` counts from then.
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when `request` is not an implicit
    ///   request; ``OAuth2Error/Code/redirectMismatch``; ``OAuth2Error/Code/stateMismatch``;
    ///   ``OAuth2Error/Code/issuerMismatch``; the server's error (`access_denied`…);
    ///   ``OAuth2Error/Code/invalidResponse`` for tokens in the query, a missing access token,
    ///   an unsupported token type, or a refresh token; ``OAuth2Error/Code/invalidIDToken``
    ///   when `id_token token` was asked for and no ID token came.
    public init(callbackURL: URL, request: AuthorizationRequest, receivedAt: Date = Date()) throws(OAuth2Error) {
        try self.init(callbackURL: callbackURL, request: request, receivedAt: receivedAt, quirks: [])
    }

    init(callbackURL: URL, request: AuthorizationRequest, receivedAt: Date, quirks: ServerQuirks) throws(OAuth2Error) {
        guard let responseType = request.implicitResponseType else {
            throw .client(.invalidConfiguration, "The request is not an implicit-grant request: complete it with completeAuthorization(callbackURL:request:).")
        }
        guard let components = URLComponents(url: callbackURL, resolvingAgainstBaseURL: false) else {
            throw .client(.invalidResponse, "The callback URL cannot be parsed.")
        }
        guard AuthorizationResponse.sameEndpoint(callbackURL, request.redirectURI) else {
            throw .client(.redirectMismatch, "The callback did not arrive at the redirect URI.")
        }
        // RFC 6749 §4.2.2: the response is in the fragment. A server that cannot redirect
        // with a fragment may report an error in the query; tokens there are refused below.
        let fragment = components.percentEncodedFragment ?? ""
        let fromQuery = fragment.isEmpty
        guard let pairs = FormURLEncoding.decode(fromQuery ? components.percentEncodedQuery ?? "" : fragment) else {
            throw .client(.invalidResponse, "The callback's parameters are not valid URL encoding.")
        }
        let parameters = try AuthorizationResponse.checkedParameters(pairs, request: request)
        guard !fromQuery else {
            throw .client(.invalidResponse, "The implicit response has no fragment: its parameters arrived in the query, where tokens must never be.")
        }
        guard parameters["refresh_token"] == nil else {
            throw .client(.invalidResponse, "The implicit response carries a refresh token, which RFC 6749 §4.2.2 forbids; it is refused.")
        }
        var members: [String: JSONValue] = [:]
        for (name, value) in parameters where !["state", "iss", "session_state"].contains(name) { members[name] = .string(value) }
        let tokens = try TokenSet.parse(
            members: members, statusCode: nil, requestedScopes: request.scopes, sentAt: receivedAt, receivedAt: receivedAt,
            serverDate: nil, quirks: quirks)
        if responseType == .idTokenToken, tokens.idToken == nil {
            throw OAuth2Error(
                .invalidIDToken, source: .client, message: "The id_token token response has no ID token.",
                underlyingError: JOSEError(.malformed, "missing id_token"))
        }
        self.tokens = tokens
        state = parameters["state"] ?? ""
        issuer = parameters["iss"]
    }

    /// No secret in the description.
    public var description: String {
        "ImplicitAuthorizationResponse(tokens: \(tokens), issuer: \(issuer ?? "none"))"
    }
}
