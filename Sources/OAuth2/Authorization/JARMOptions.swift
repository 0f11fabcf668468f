import Foundation

/// JWT-secured authorization responses (JARM, OpenID Foundation's "JWT Secured
/// Authorization Response Mode for OAuth 2.0"): the response mode every authorization
/// request asks for, and the algorithm the client registered for the responses.
///
/// With ``ClientConfiguration/jarm`` set, every authorization code request asks for
/// ``responseMode`` (unless ``AuthorizationOptions/responseMode`` names another), and the
/// callback's one `response` parameter is a JWT that
/// ``OAuth2Client/authorizationResponse(callbackURL:request:)`` decrypts (when it is a JWE,
/// with ``ClientConfiguration/encryption``'s keys and ``EncryptionOptions/authorizationResponse``'s
/// algorithms), verifies with the provider's JWK set and ``signingAlgorithm`` (never `none`),
/// and checks (`iss` the issuer exactly, `aud` naming the client, `exp` not passed) before
/// its `code`, `state`, `iss` and `error` get every check of a plain response. A plain
/// response to a JARM request is refused as a downgrade.
///
/// Register the client with `authorization_signed_response_alg` equal to
/// ``signingAlgorithm`` (and, for encrypted responses, `authorization_encrypted_response_alg`
/// and `authorization_encrypted_response_enc`).
public struct JARMOptions: Sendable, Hashable {
    /// The JARM response modes.
    public static let responseModes: Set<String> = ["jwt", "query.jwt", "fragment.jwt", "form_post.jwt"]

    /// The response mode asked for: `jwt` (the default: the query for a code response),
    /// `query.jwt`, `fragment.jwt` or `form_post.jwt` (whose body you pass to
    /// ``OAuth2Client/authorizationResponse(parameters:request:)``).
    public var responseMode: String
    /// The algorithm the responses must be signed with
    /// (`authorization_signed_response_alg`); RS256 by default. An HMAC algorithm is keyed
    /// by the client secret, never by a public key; `none` is never accepted.
    public var signingAlgorithm: JWSAlgorithm
    /// Refuse a response that is signed but not encrypted: set it when the client registered
    /// `authorization_encrypted_response_alg`.
    public var requiresEncryption: Bool

    /// Creates options.
    ///
    /// - Parameters:
    ///   - responseMode: `jwt` (the default), `query.jwt`, `fragment.jwt` or `form_post.jwt`.
    ///   - signingAlgorithm: the registered `authorization_signed_response_alg`; RS256 by default.
    ///   - requiresEncryption: refuse responses that are not encrypted; `false` by default.
    public init(responseMode: String = "jwt", signingAlgorithm: JWSAlgorithm = .rs256, requiresEncryption: Bool = false) {
        self.responseMode = responseMode
        self.signingAlgorithm = signingAlgorithm
        self.requiresEncryption = requiresEncryption
    }

    /// Whether `mode` is one of the JARM response modes.
    static func isJWTMode(_ mode: String?) -> Bool {
        guard let mode else { return false }
        return responseModes.contains(mode)
    }
}

extension AuthorizationRequest {
    /// Whether the request asked for a JWT-secured response (a JARM ``responseMode``).
    public var asksForJWTResponse: Bool { JARMOptions.isJWTMode(responseMode) }
}
