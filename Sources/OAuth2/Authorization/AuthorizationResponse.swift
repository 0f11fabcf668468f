import Foundation
import OAuth2Internals

/// A successful authorization response: the code, checked against its request.
public struct AuthorizationResponse: Sendable, Hashable, CustomStringConvertible {
    /// The authorization code (a secret: exchange it, never log it).
    public let code: String
    /// The `state`, equal to the request's.
    public let state: String
    /// The RFC 9207 `iss` parameter, when the server sent one (already checked).
    public let issuer: String?
    /// Every parameter of the response, for extensions (`session_state`…).
    public let parameters: [String: String]

    /// Parses and checks a redirect to `request.redirectURI`.
    ///
    /// The checks, in order: the callback arrived at the redirect URI; `state` is present
    /// and equal to the one sent (constant time); `iss` equals the issuer when present,
    /// and is present when the server advertises
    /// `authorization_response_iss_parameter_supported`; an `error` becomes a typed
    /// ``OAuth2Error``; a `code` is present. Parameters come from the query, or from the
    /// fragment when the query has none. A response that fails a check never reaches the
    /// token endpoint.
    ///
    /// A request that asked for a JWT-secured response (JARM) is refused here: its response
    /// needs the provider's keys, which ``OAuth2Client/authorizationResponse(callbackURL:request:)``
    /// has.
    public init(callbackURL: URL, request: AuthorizationRequest) throws(OAuth2Error) {
        try self.init(parameters: Self.callbackParameters(callbackURL, request: request), request: request)
    }

    /// The parameters of a callback to `request.redirectURI`: from the query, or from the
    /// fragment when the query has none.
    static func callbackParameters(_ callbackURL: URL, request: AuthorizationRequest) throws(OAuth2Error) -> [(String, String)] {
        guard let components = URLComponents(url: callbackURL, resolvingAgainstBaseURL: false) else {
            throw .client(.invalidResponse, "The callback URL cannot be parsed.")
        }
        guard Self.sameEndpoint(callbackURL, request.redirectURI) else {
            throw .client(.redirectMismatch, "The callback did not arrive at the redirect URI.")
        }
        var pairs = FormURLEncoding.decode(components.percentEncodedQuery ?? "")
        if pairs?.isEmpty ?? true, let fragment = components.percentEncodedFragment, !fragment.isEmpty {
            pairs = FormURLEncoding.decode(fragment)
        }
        guard let pairs else {
            throw .client(.invalidResponse, "The callback's parameters are not valid URL encoding.")
        }
        return pairs
    }

    /// Parses and checks already-decoded response parameters (a `form_post` body, say).
    ///
    /// A request that asked for a JWT-secured response (JARM) is refused here, as for
    /// ``init(callbackURL:request:)``: use ``OAuth2Client/authorizationResponse(parameters:request:)``.
    public init(parameters pairs: [(String, String)], request: AuthorizationRequest) throws(OAuth2Error) {
        guard !request.asksForJWTResponse else {
            guard pairs.contains(where: { $0.0 == "response" }) else { throw Self.downgrade }
            throw .client(.invalidConfiguration, "The request asked for a JWT-secured response (JARM), which needs the provider's keys: check it with OAuth2Client.authorizationResponse(callbackURL:request:).")
        }
        try self.init(verified: pairs, request: request)
    }

    /// The refusal of a plain response to a request that asked for a JWT-secured one: an
    /// attacker (or a misconfigured server) must not get a code past the JWT's checks.
    static let downgrade = OAuth2Error.client(
        .invalidAuthorizationResponse, "The request asked for a JWT-secured response (JARM), but the callback carries plain parameters instead of one response JWT: refused.")

    /// Checks parameters whose origin is established: a plain response's, or the claims of
    /// a verified JARM response.
    init(verified pairs: [(String, String)], request: AuthorizationRequest) throws(OAuth2Error) {
        guard request.implicitResponseType == nil else {
            throw .client(.invalidConfiguration, "The request is an implicit-grant request: complete it with completeImplicitAuthorization(callbackURL:request:).")
        }
        let parameters = try Self.checkedParameters(pairs, request: request)
        guard let code = parameters["code"], !code.isEmpty else {
            throw .client(.invalidResponse, "The authorization response has neither a code nor an error.")
        }
        self.code = code
        self.state = parameters["state"] ?? ""
        self.issuer = parameters["iss"]
        self.parameters = parameters
    }

    /// The checks every authorization response passes, whatever its response type: no
    /// repeated parameter (RFC 6749 §3.1), `state` present and equal to the one sent
    /// (constant time), `iss` as RFC 9207 wants, and an `error` thrown as the server's typed
    /// error. Returns the parameters by name.
    static func checkedParameters(_ pairs: [(String, String)], request: AuthorizationRequest) throws(OAuth2Error) -> [String: String] {
        var parameters: [String: String] = [:]
        for (name, value) in pairs {
            // RFC 6749 §3.1: parameters must not be repeated.
            guard parameters.updateValue(value, forKey: name) == nil else {
                throw .client(.invalidResponse, "The parameter \(name) appears more than once in the response.")
            }
        }
        guard let state = parameters["state"] else {
            throw .client(.stateMismatch, "The authorization response has no state.")
        }
        guard constantTimeEquals(state, request.state) else {
            throw .client(.stateMismatch, "The authorization response's state is not the one sent.")
        }
        if let iss = parameters["iss"] {
            guard let expected = request.issuer, iss == expected else {
                throw .client(.issuerMismatch, "The authorization response's iss is not the expected issuer.")
            }
        } else if request.requiresIssuerParameter {
            throw .client(.issuerMismatch, "The server promises an iss parameter (RFC 9207) but sent none.")
        }
        if let error = parameters["error"] {
            throw OAuth2Error.fromServer(
                error: error,
                description: parameters["error_description"],
                uri: parameters["error_uri"],
                statusCode: nil,
                retryAfter: nil
            )
        }
        return parameters
    }

    /// Same scheme, host, port and path (RFC 8252 §7.3 lets a loopback port vary only when
    /// the redirect URI names none).
    static func sameEndpoint(_ callback: URL, _ redirect: URL) -> Bool {
        guard callback.scheme?.lowercased() == redirect.scheme?.lowercased(),
            callback.host?.lowercased() == redirect.host?.lowercased()
        else { return false }
        if redirect.port != nil, callback.port != redirect.port { return false }
        let callbackPath = callback.path.isEmpty ? "/" : callback.path
        let redirectPath = redirect.path.isEmpty ? "/" : redirect.path
        return callbackPath == redirectPath
    }

    /// No secret in the description.
    public var description: String {
        "AuthorizationResponse(code: \(Redactor.placeholder), issuer: \(issuer ?? "none"))"
    }
}
