import Foundation

/// Encrypted answers (JWE, RFC 7516): the client's decryption keys and the algorithms it
/// registered for each kind of answer (ID tokens, UserInfo, JWT introspection answers,
/// JWT-secured authorization responses).
///
/// With ``ClientConfiguration/encryption`` set, the client decrypts encrypted ID tokens
/// (then verifies the signed ID token inside, as OpenID Connect requires: an ID token is
/// signed, then encrypted), encrypted UserInfo answers (signed inside or not) and encrypted
/// JWT introspection answers (RFC 9701 §5: signed, then encrypted; the signature inside is
/// verified as for a plain one), and keeps the *signed* ID token in the ``TokenSet``: that
/// one has claims to read and is what an `id_token_hint` carries. Without it, an encrypted
/// answer is refused with ``OAuth2Error/Code/invalidIDToken``,
/// ``OAuth2Error/Code/invalidUserInfo`` or ``OAuth2Error/Code/invalidIntrospectionResponse``
/// saying so.
///
/// Register the public halves (`JWEDecryptionKey.publicKey`, `use: enc`) in the client's
/// JWK set, and the algorithms as `id_token_encrypted_response_alg`/`enc`,
/// `userinfo_encrypted_response_alg`/`enc` and `introspection_encrypted_response_alg`/`enc`.
/// During a key rotation list the new key and the old one (`JWEDecryptionKey.keys(jwkSet:)`
/// reads them all from one JWK set file): a JWE naming a `kid` is opened with that key, one
/// without is tried with each key that fits its algorithm.
public struct EncryptionOptions: Sendable {
    /// The private keys answers may be encrypted to: during a rotation, the new and the old.
    /// A JWE naming a `kid` is opened with that key only. Never logged.
    public var decryptionKeys: [JWEDecryptionKey]
    /// The algorithms accepted for ID tokens.
    public var idToken: JWEPolicy
    /// The algorithms accepted for UserInfo answers.
    public var userInfo: JWEPolicy
    /// The algorithms accepted for encrypted JWT-secured authorization responses (JARM,
    /// `authorization_encrypted_response_alg`/`enc`).
    public var authorizationResponse: JWEPolicy
    /// The algorithms accepted for JWT introspection answers (RFC 9701 §5).
    public var introspection: JWEPolicy
    /// Refuse an ID token the server sends *not* encrypted (in a token response or a
    /// front-channel answer): set it when the client registered
    /// `id_token_encrypted_response_alg`, so that an answer that skipped the encryption is
    /// not taken for one that was meant to be plain. The signed ID token the client keeps
    /// afterwards is still accepted by ``OAuth2Client/validateIDToken(_:expecting:)``.
    public var requiresEncryptedIDTokens: Bool
    /// Refuse a JWT introspection answer (``IntrospectionFormat/jwt(_:)``) the server sends
    /// signed but *not* encrypted: set it when the client registered
    /// `introspection_encrypted_response_alg`, so that an answer that skipped the encryption
    /// is not taken for one that was meant to be plain.
    public var requiresEncryptedIntrospection: Bool

    /// Creates options.
    ///
    /// - Parameters:
    ///   - decryptionKeys: the client's decryption keys.
    ///   - idToken: the algorithms accepted for ID tokens; `JWEPolicy.default` by default.
    ///   - userInfo: the algorithms accepted for UserInfo answers; `JWEPolicy.default` by default.
    ///   - introspection: the algorithms accepted for JWT introspection answers;
    ///     `JWEPolicy.default` by default.
    ///   - authorizationResponse: the algorithms accepted for JWT-secured authorization
    ///     responses (JARM); `JWEPolicy.default` by default.
    ///   - requiresEncryptedIDTokens: refuse plain ID tokens; `false` by default.
    ///   - requiresEncryptedIntrospection: refuse plain JWT introspection answers; `false` by default.
    public init(
        decryptionKeys: [JWEDecryptionKey], idToken: JWEPolicy = .default, userInfo: JWEPolicy = .default,
        introspection: JWEPolicy = .default, authorizationResponse: JWEPolicy = .default,
        requiresEncryptedIDTokens: Bool = false, requiresEncryptedIntrospection: Bool = false
    ) {
        self.decryptionKeys = decryptionKeys
        self.idToken = idToken
        self.userInfo = userInfo
        self.introspection = introspection
        self.authorizationResponse = authorizationResponse
        self.requiresEncryptedIDTokens = requiresEncryptedIDTokens
        self.requiresEncryptedIntrospection = requiresEncryptedIntrospection
    }

    /// The public halves of ``decryptionKeys``, as the client publishes or registers them.
    public var publicKeys: JSONWebKeySet { JSONWebKeySet(keys: decryptionKeys.map(\.publicKey)) }
}

extension OAuth2Client {
    /// `compact` decrypted when it is a JWE (its plaintext, as text), else `compact` itself.
    ///
    /// - Throws: `JOSEError`: ``JOSEError/Reason/keyNotFound`` when it is encrypted and the
    ///   configuration has no decryption keys; the JWE's own errors.
    func decryptedIfEncrypted(_ compact: String, policy: KeyPath<EncryptionOptions, JWEPolicy>, what: String) throws(JOSEError) -> (text: String, wasEncrypted: Bool) {
        guard JWE.isCompact(compact) else { return (compact, false) }
        guard let encryption = configuration.encryption, !encryption.decryptionKeys.isEmpty else {
            throw JOSEError(.keyNotFound, "The \(what) is encrypted, and the client has no decryption keys (ClientConfiguration.encryption).")
        }
        let plaintext = try JWE(compact: compact).decrypt(with: encryption.decryptionKeys, policy: encryption[keyPath: policy])
        return (String(decoding: plaintext, as: UTF8.self), true)
    }
}
