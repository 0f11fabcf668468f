import Foundation
import OAuth2Internals

/// What to put in an RP-initiated logout request (OpenID Connect RP-Initiated Logout 1.0).
public struct EndSessionOptions: Sendable, Hashable {
    /// The ID token of the session to end (`id_token_hint`); recommended.
    public var idTokenHint: String?
    /// Where the provider sends the browser afterwards; must be registered.
    public var postLogoutRedirectURI: URL?
    /// A hint about the user (`logout_hint`).
    public var logoutHint: String?
    /// Preferred languages of the logout page (`ui_locales`).
    public var uiLocales: [String]
    /// Extension parameters; they never override the ones above.
    public var additionalParameters: [String: String]

    /// Creates options.
    public init(
        idTokenHint: String? = nil,
        postLogoutRedirectURI: URL? = nil,
        logoutHint: String? = nil,
        uiLocales: [String] = [],
        additionalParameters: [String: String] = [:]
    ) {
        self.idTokenHint = idTokenHint
        self.postLogoutRedirectURI = postLogoutRedirectURI
        self.logoutHint = logoutHint
        self.uiLocales = uiLocales
        self.additionalParameters = additionalParameters
    }
}

/// A logout request to open in the browser, and what checks the redirect back.
public struct EndSessionRequest: Sendable, Hashable, CustomStringConvertible {
    /// The end-session URL to open.
    public let url: URL
    /// The `state` sent, which the post-logout redirect must carry back; `nil` when no
    /// post-logout redirect was asked for.
    public let state: String?
    /// The post-logout redirect URI, if any.
    public let postLogoutRedirectURI: URL?

    static func make(endpoint: URL, clientID: String, options: EndSessionOptions) throws(OAuth2Error) -> EndSessionRequest {
        try EndpointPolicy.validate(endpoint, name: "end_session_endpoint")
        var parameters: [(String, String)] = [("client_id", clientID)]
        if let hint = options.idTokenHint { parameters.append(("id_token_hint", hint)) }
        if let hint = options.logoutHint { parameters.append(("logout_hint", hint)) }
        if !options.uiLocales.isEmpty { parameters.append(("ui_locales", options.uiLocales.joined(separator: " "))) }
        var state: String?
        if let redirect = options.postLogoutRedirectURI {
            let value = SecureRandom.token()
            state = value
            parameters.append(("post_logout_redirect_uri", redirect.absoluteString))
            parameters.append(("state", value))
        }
        parameters.appendExtras(options.additionalParameters)
        return EndSessionRequest(url: try endpoint.appendingQuery(parameters), state: state, postLogoutRedirectURI: options.postLogoutRedirectURI)
    }

    /// Checks the post-logout redirect: it arrived at ``postLogoutRedirectURI`` and carries
    /// the `state` sent (compared in constant time).
    ///
    /// - Throws: ``OAuth2Error/Code/redirectMismatch`` or ``OAuth2Error/Code/stateMismatch``.
    public func validateCallback(_ callbackURL: URL) throws(OAuth2Error) {
        guard let redirect = postLogoutRedirectURI, let state else {
            throw .client(.invalidRequest, "This logout request asked for no post-logout redirect.")
        }
        guard AuthorizationResponse.sameEndpoint(callbackURL, redirect) else {
            throw .client(.redirectMismatch, "The post-logout redirect did not arrive at the registered URI.")
        }
        let query = URLComponents(url: callbackURL, resolvingAgainstBaseURL: false)?.percentEncodedQuery ?? ""
        let received = FormURLEncoding.decode(query)?.filter { $0.0 == "state" }.map(\.1) ?? []
        guard received.count == 1, let value = received.first, constantTimeEquals(value, state) else {
            throw .client(.stateMismatch, "The post-logout redirect's state is missing or not the one sent.")
        }
    }

    /// The endpoint only; the ID token hint and state are redacted.
    public var description: String { "EndSessionRequest(\(Redactor.url(url)))" }
}
