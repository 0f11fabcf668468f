import Foundation

/// A backchannel authentication request (OpenID Connect CIBA Core §7.1): who is asked to
/// sign in, and what they are shown.
///
/// ```swift
/// let request = BackchannelAuthenticationRequest(hint: .loginHint("alice"), bindingMessage: "W4SCT")
/// let authentication = try await client.startBackchannelAuthentication(request)
/// ```
///
/// The hint, the binding message and the user code are not secrets; `id_token_hint` and
/// `login_hint_token` are tokens, and never appear in a log line or an error message.
public struct BackchannelAuthenticationRequest: Sendable {
    /// How the request names the user: exactly one hint (CIBA Core §7.1).
    public enum Hint: Sendable, Hashable {
        /// `login_hint`: an identifier the server knows the user by (an e-mail address, a
        /// username; Glewlwyd reads a JSON object such as `{"username":"alice"}`).
        case loginHint(String)
        /// `id_token_hint`: an ID token this server issued to this client for the user; the
        /// answer's ID token must then name the same subject.
        case idTokenHint(String)
        /// `login_hint_token`: a token naming the user, in a format the server defines.
        case loginHintToken(String)

        /// The parameter's name.
        public var parameterName: String {
            switch self {
            case .loginHint: "login_hint"
            case .idTokenHint: "id_token_hint"
            case .loginHintToken: "login_hint_token"
            }
        }

        /// The parameter's value.
        public var value: String {
            switch self {
            case .loginHint(let value), .idTokenHint(let value), .loginHintToken(let value): value
            }
        }
    }

    /// Who is asked to sign in.
    public var hint: Hint
    /// The scopes to ask for; `nil` takes the configuration's. `openid` is added when
    /// missing: CIBA is an OpenID Connect flow (CIBA Core §7.1).
    public var scopes: [String]?
    /// `binding_message`: a short text shown on both the consumption device and the
    /// authentication device, so the user can tell that the request is this one.
    public var bindingMessage: String?
    /// `user_code`: a secret the user set up with the server, proving the request comes
    /// from them (only when the server advertises `backchannel_user_code_parameter_supported`).
    public var userCode: String?
    /// `requested_expiry`: how many seconds the request may wait for the user.
    public var requestedExpiry: Int?
    /// `acr_values`: the authentication context classes asked for, in order of preference.
    public var acrValues: [String]
    /// `client_notification_token`: the bearer token the server sends back to the client's
    /// notification endpoint in ping mode (required there; at least 128 bits of entropy).
    public var clientNotificationToken: String?
    /// Whether the request is sent as a signed JWT (`request`, CIBA Core §7.1.1): `nil`
    /// signs when the configuration has ``ClientConfiguration/requestObject`` (its key and
    /// lifetime are used); `true` always signs, `false` never does.
    public var signed: Bool?
    /// Extra parameters; they never replace the ones above.
    public var additionalParameters: [String: String]

    /// Creates a request.
    public init(
        hint: Hint,
        scopes: [String]? = nil,
        bindingMessage: String? = nil,
        userCode: String? = nil,
        requestedExpiry: Int? = nil,
        acrValues: [String] = [],
        clientNotificationToken: String? = nil,
        signed: Bool? = nil,
        additionalParameters: [String: String] = [:]
    ) {
        self.hint = hint
        self.scopes = scopes
        self.bindingMessage = bindingMessage
        self.userCode = userCode
        self.requestedExpiry = requestedExpiry
        self.acrValues = acrValues
        self.clientNotificationToken = clientNotificationToken
        self.signed = signed
        self.additionalParameters = additionalParameters
    }

    /// The request's parameters, in order, and the scopes they ask for.
    func parameters(defaultScopes: [String]) -> (parameters: [(String, String)], scopes: [String]) {
        var scopes = scopes ?? defaultScopes
        if !scopes.contains("openid") { scopes.insert("openid", at: 0) }
        var parameters: [(String, String)] = [("scope", scopes.joined(separator: " ")), (hint.parameterName, hint.value)]
        if let bindingMessage { parameters.append(("binding_message", bindingMessage)) }
        if let userCode { parameters.append(("user_code", userCode)) }
        if let requestedExpiry { parameters.append(("requested_expiry", String(requestedExpiry))) }
        if !acrValues.isEmpty { parameters.append(("acr_values", acrValues.joined(separator: " "))) }
        if let clientNotificationToken { parameters.append(("client_notification_token", clientNotificationToken)) }
        parameters.appendExtras(additionalParameters)
        return (parameters, scopes)
    }
}
