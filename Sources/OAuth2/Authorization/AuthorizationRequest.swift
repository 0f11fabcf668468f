import Foundation
import OAuth2Internals

/// What a call may add to an authorization request (RFC 6749 §4.1.1, OIDC Core §3.1.2.1).
public struct AuthorizationOptions: Sendable {
    /// The scopes to ask for; `nil` uses the configuration's scopes.
    public var scopes: [String]?
    /// `prompt` values (`none`, `login`, `consent`, `select_account`, `create`).
    public var prompt: [String]
    /// `login_hint`
    public var loginHint: String?
    /// `max_age`, in seconds: the longest time since the user last authenticated.
    public var maxAge: Int?
    /// `acr_values`
    public var acrValues: [String]
    /// `ui_locales`
    public var uiLocales: [String]
    /// `resource` indicators (RFC 8707), one parameter each.
    public var resources: [URL]
    /// `authorization_details` (Rich Authorization Requests, RFC 9396): sent as one JSON
    /// array, by value, in a request object (as an array claim) or pushed; empty sends none.
    public var authorizationDetails: [AuthorizationDetail]
    /// `response_mode` (`query`, `fragment`, `form_post`…, or a JARM mode: `jwt`,
    /// `query.jwt`, `fragment.jwt`, `form_post.jwt`); `nil` takes ``ClientConfiguration/jarm``'s
    /// mode when it is set, else lets the server choose.
    public var responseMode: String?
    /// The redirect URI; `nil` uses the configuration's.
    public var redirectURI: URL?
    /// Any other parameters. The ones the library sets (state, PKCE, nonce…) cannot be
    /// overridden here.
    public var additionalParameters: [String: String]

    /// Creates options.
    public init(
        scopes: [String]? = nil,
        prompt: [String] = [],
        loginHint: String? = nil,
        maxAge: Int? = nil,
        acrValues: [String] = [],
        uiLocales: [String] = [],
        resources: [URL] = [],
        authorizationDetails: [AuthorizationDetail] = [],
        responseMode: String? = nil,
        redirectURI: URL? = nil,
        additionalParameters: [String: String] = [:]
    ) {
        self.scopes = scopes
        self.prompt = prompt
        self.loginHint = loginHint
        self.maxAge = maxAge
        self.acrValues = acrValues
        self.uiLocales = uiLocales
        self.resources = resources
        self.authorizationDetails = authorizationDetails
        self.responseMode = responseMode
        self.redirectURI = redirectURI
        self.additionalParameters = additionalParameters
    }
}

/// An authorization request in flight: the URL to open in a browser and the secrets to
/// keep until the callback arrives (state, nonce, PKCE verifier).
///
/// It is `Codable` so an app can keep it across a restart; store it where you would store
/// a token. Its `description` shows no secret.
public struct AuthorizationRequest: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The URL to open in the user's browser.
    public let url: URL
    /// The redirect URI the response must come back to.
    public let redirectURI: URL
    /// The `state` sent; the response must carry the same.
    public let state: String
    /// The `nonce` sent (when `openid` is in scope); the ID token must carry the same.
    public let nonce: String?
    /// The PKCE verifier, sent with the code to the token endpoint (empty for an implicit
    /// request, which has no code).
    public let codeVerifier: String
    /// The scopes asked for.
    public let scopes: [String]
    /// The `max_age` asked for, if any.
    public let maxAge: Int?
    /// The issuer the response must name in `iss` (RFC 9207), if the server has one.
    public let issuer: String?
    /// `true` when the server promised an `iss` parameter, which makes it mandatory.
    public let requiresIssuerParameter: Bool
    /// When the request was made.
    public let createdAt: Date
    /// The implicit grant's response type when this is a (legacy) implicit request;
    /// `nil` for the authorization code flow.
    public let implicitResponseType: ImplicitResponseType?

    /// The request URI a pushed authorization request (RFC 9126) returned, when the request
    /// was pushed; ``url`` then carries only it and the client id.
    public let requestURI: String?
    /// When the pushed request expires (its `expires_in`), when it was pushed: open ``url``
    /// before then.
    public let requestURIExpiresAt: Date?
    /// The `response_mode` asked for, if any. A JARM mode (`jwt`, `query.jwt`,
    /// `fragment.jwt`, `form_post.jwt`) makes the response a JWT that
    /// ``OAuth2Client/authorizationResponse(callbackURL:request:)`` verifies.
    public let responseMode: String?

    /// Builds the request by value: PKCE S256, a fresh `state`, and a `nonce` when `openid`
    /// is among the scopes; with ``ClientConfiguration/requestObject``, the parameters go
    /// in a signed `request` object, encrypted to `recipient` when the options say so.
    static func make(
        metadata: ServerMetadata,
        configuration: ClientConfiguration,
        options: AuthorizationOptions,
        now: Date,
        implicit: ImplicitResponseType? = nil,
        recipient: JSONWebKey? = nil
    ) throws(OAuth2Error) -> AuthorizationRequest {
        let draft = try AuthorizationDraft(metadata: metadata, configuration: configuration, options: options, implicit: implicit)
        var query = draft.parameters
        if let requestObject = configuration.requestObject {
            let signed = try draft.requestObject(requestObject, metadata: metadata, configuration: configuration, now: now, recipient: recipient)
            // RFC 9101 §5: client_id and request; OpenID Connect Core §6.1 also wants
            // response_type and scope outside, and RFC 9101 servers ignore them there.
            query = [("client_id", configuration.clientID), ("request", signed), ("response_type", draft.responseType)]
            if !draft.scopes.isEmpty { query.append(("scope", draft.scopes.joined(separator: " "))) }
        }
        return draft.request(url: try draft.endpoint.appendingQuery(query), metadata: metadata, now: now)
    }

    /// The URL with its secrets redacted.
    public var description: String {
        "AuthorizationRequest(url: \(Redactor.url(url)), redirectURI: \(redirectURI.absoluteString))"
    }
}

/// The parts of an authorization request before it is sent one way or another (by value,
/// as a request object, or pushed): the parameters and the secrets to keep.
struct AuthorizationDraft {
    let endpoint: URL
    let redirectURI: URL
    let scopes: [String]
    let state: String
    let nonce: String?
    let codeVerifier: String
    let maxAge: Int?
    let parameters: [(String, String)]
    let implicit: ImplicitResponseType?
    let responseMode: String?

    /// `response_type`: `code`, or the implicit grant's.
    var responseType: String { implicit?.rawValue ?? "code" }

    /// PKCE S256, a fresh `state`, a `nonce` when `openid` is among the scopes, `dpop_jkt`
    /// with DPoP, then the options and the configuration's extras.
    ///
    /// With `implicit` (the legacy implicit grant): that response type, no PKCE and no
    /// `dpop_jkt` (there is no code to bind), and a `nonce` always for `id_token token`,
    /// which needs `openid` among the scopes.
    init(
        metadata: ServerMetadata, configuration: ClientConfiguration, options: AuthorizationOptions,
        implicit: ImplicitResponseType? = nil
    ) throws(OAuth2Error) {
        guard let endpoint = metadata.authorizationEndpoint else {
            throw .client(.missingEndpoint, "The server has no authorization endpoint.")
        }
        try EndpointPolicy.validate(endpoint, name: "authorization endpoint")
        guard let redirectURI = options.redirectURI ?? configuration.redirectURI else {
            throw .client(.invalidConfiguration, "An authorization request needs a redirect URI.")
        }
        guard redirectURI.scheme != nil, redirectURI.fragment == nil else {
            throw .client(.invalidConfiguration, "The redirect URI must be absolute and have no fragment.")
        }
        let scopes = options.scopes ?? configuration.scopes
        if implicit == .idTokenToken, !scopes.contains("openid") {
            throw .client(.invalidConfiguration, "The id_token token response type needs the openid scope.")
        }
        let pkce = try PKCE()
        let state = SecureRandom.token()
        let nonce = scopes.contains("openid") ? SecureRandom.token() : nil

        var parameters: [(String, String)] = [
            ("response_type", implicit?.rawValue ?? "code"),
            ("client_id", configuration.clientID),
            ("redirect_uri", redirectURI.absoluteString),
        ]
        if !scopes.isEmpty { parameters.append(("scope", scopes.joined(separator: " "))) }
        parameters.append(("state", state))
        if let nonce { parameters.append(("nonce", nonce)) }
        if implicit == nil {
            parameters.append(("code_challenge", pkce.challenge))
            parameters.append(("code_challenge_method", pkce.method))
            if let dpop = configuration.dpop, dpop.bindsAuthorizationCode { parameters.append(("dpop_jkt", dpop.key.thumbprint)) }
        }
        // JARM (a JWT-secured response) is for the authorization code flow: the configuration's
        // mode applies to code requests; one asked for with the implicit grant is refused.
        let responseMode = options.responseMode ?? (implicit == nil ? configuration.jarm?.responseMode : nil)
        if implicit != nil, JARMOptions.isJWTMode(responseMode) {
            throw .client(.invalidConfiguration, "JWT-secured responses (JARM) are supported with the authorization code flow only.")
        }
        if let responseMode { parameters.append(("response_mode", responseMode)) }
        if !options.prompt.isEmpty { parameters.append(("prompt", options.prompt.joined(separator: " "))) }
        if let loginHint = options.loginHint { parameters.append(("login_hint", loginHint)) }
        if let maxAge = options.maxAge { parameters.append(("max_age", String(maxAge))) }
        if !options.acrValues.isEmpty { parameters.append(("acr_values", options.acrValues.joined(separator: " "))) }
        if !options.uiLocales.isEmpty { parameters.append(("ui_locales", options.uiLocales.joined(separator: " "))) }
        for resource in options.resources { parameters.append(("resource", resource.absoluteString)) }
        if !options.authorizationDetails.isEmpty {
            parameters.append(("authorization_details", try AuthorizationDetail.parameter(options.authorizationDetails)))
        }
        parameters.appendExtras(configuration.additionalParameters[.authorization] ?? [:])
        parameters.appendExtras(options.additionalParameters)

        self.endpoint = endpoint
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.state = state
        self.nonce = nonce
        codeVerifier = implicit == nil ? pkce.verifier : ""
        maxAge = options.maxAge
        self.parameters = parameters
        self.implicit = implicit
        self.responseMode = responseMode
    }

    /// The parameters as a request object signed with the configured key (the request
    /// object's own, else the private key, else HS256 with the client secret).
    func signedRequestObject(
        _ options: RequestObjectOptions, metadata: ServerMetadata, configuration: ClientConfiguration, now: Date
    ) throws(OAuth2Error) -> String {
        let key: JWSSigningKey
        if let own = options.signingKey ?? configuration.privateKey {
            key = own
        } else if let secret = configuration.clientSecret, !secret.isEmpty {
            do { key = try JWSSigningKey(secret: secret) } catch {
                throw OAuth2Error(.invalidConfiguration, source: .client, message: "The request object cannot be keyed: \(error.message)", underlyingError: error)
            }
        } else {
            throw .client(.invalidConfiguration, "A signed request object needs a signing key, a private key or a client secret.")
        }
        let object = RequestObject(
            parameters: parameters, clientID: configuration.clientID,
            audience: metadata.issuer ?? endpoint.absoluteString, issuedAt: now, lifetime: options.lifetime)
        do {
            return try object.signed(with: key)
        } catch {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The request object cannot be signed: \(error.message)", underlyingError: error)
        }
    }

    /// The request to keep until the callback, opening `url`.
    func request(url: URL, metadata: ServerMetadata, now: Date, requestURI: String? = nil, expiresAt: Date? = nil) -> AuthorizationRequest {
        AuthorizationRequest(
            url: url,
            redirectURI: redirectURI,
            state: state,
            nonce: nonce,
            codeVerifier: codeVerifier,
            scopes: scopes,
            maxAge: maxAge,
            issuer: metadata.issuer,
            requiresIssuerParameter: metadata.authorizationResponseIssParameterSupported == true,
            createdAt: now,
            implicitResponseType: implicit,
            requestURI: requestURI,
            requestURIExpiresAt: expiresAt,
            responseMode: responseMode
        )
    }
}

extension Array where Element == (String, String) {
    /// Appends extra parameters in a stable order, skipping names already present: a
    /// caller's extras can add to a request, never replace what the library set.
    mutating func appendExtras(_ extras: [String: String]) {
        let present = Set(map(\.0))
        for (name, value) in extras.sorted(by: { $0.key < $1.key }) where !present.contains(name) {
            append((name, value))
        }
    }
}

extension URL {
    /// This URL with `parameters` appended to its query (existing query items are kept,
    /// as RFC 6749 §3.1 requires).
    func appendingQuery(_ parameters: [(String, String)]) throws(OAuth2Error) -> URL {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: false) else {
            throw .client(.invalidConfiguration, "The endpoint URL cannot be parsed.")
        }
        let encoded = FormURLEncoding.encode(parameters)
        if let existing = components.percentEncodedQuery, !existing.isEmpty {
            components.percentEncodedQuery = existing + "&" + encoded
        } else {
            components.percentEncodedQuery = encoded
        }
        guard let url = components.url else {
            throw .client(.invalidConfiguration, "The authorization URL cannot be built.")
        }
        return url
    }
}
