import Foundation

/// Encrypted answers (JWE, RFC 7516): the client's decryption keys and the algorithms it
/// registered for each kind of answer (ID tokens, UserInfo, JWT-secured authorization
/// responses).
///
/// With ``ClientConfiguration/encryption`` set, the client decrypts encrypted ID tokens
/// (then verifies the signed ID token inside, as OpenID Connect requires: an ID token is
/// signed, then encrypted) and encrypted UserInfo answers (signed inside or not), and keeps
/// the *signed* ID token in the ``TokenSet``: that one has claims to read and is what an
/// `id_token_hint` carries. Without it, an encrypted answer is refused with
/// ``OAuth2Error/Code/invalidIDToken`` or ``OAuth2Error/Code/invalidUserInfo`` saying so.
///
/// Register the public halves (`JWEDecryptionKey.publicKey`, `use: enc`) in the client's
/// JWK set, and the algorithms as `id_token_encrypted_response_alg`/`enc` and
/// `userinfo_encrypted_response_alg`/`enc`.
public struct EncryptionOptions: Sendable {
    /// The private keys answers may be encrypted to: during a rotation, the new and the old.
    /// A JWE naming a `kid` is opened with that key only. Never logged.
    public var decryptionKeys: [JWEDecryptionKey]
    /// The algorithms accepted for ID tokens.
    public var idToken: JWEPolicy
    /// The algorithms accepted for UserInfo answers.
    public var userInfo: JWEPolicy
    /// The algorithms accepted for encrypted JWT-secured authorization responses (JARM,
    /// `authorization_encrypted_response_alg`/`enc`); `JWEPolicy.default` unless set.
    public var authorizationResponse: JWEPolicy = .default
    /// Refuse an ID token the server sends *not* encrypted (in a token response or a
    /// front-channel answer): set it when the client registered
    /// `id_token_encrypted_response_alg`, so that an answer that skipped the encryption is
    /// not taken for one that was meant to be plain. The signed ID token the client keeps
    /// afterwards is still accepted by ``OAuth2Client/validateIDToken(_:expecting:)``.
    public var requiresEncryptedIDTokens: Bool

    /// Creates options.
    ///
    /// - Parameters:
    ///   - decryptionKeys: the client's decryption keys.
    ///   - idToken: the algorithms accepted for ID tokens; `JWEPolicy.default` by default.
    ///   - userInfo: the algorithms accepted for UserInfo answers; `JWEPolicy.default` by default.
    ///   - requiresEncryptedIDTokens: refuse plain ID tokens; `false` by default.
    public init(
        decryptionKeys: [JWEDecryptionKey], idToken: JWEPolicy = .default, userInfo: JWEPolicy = .default,
        requiresEncryptedIDTokens: Bool = false
    ) {
        self.decryptionKeys = decryptionKeys
        self.idToken = idToken
        self.userInfo = userInfo
        self.requiresEncryptedIDTokens = requiresEncryptedIDTokens
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
