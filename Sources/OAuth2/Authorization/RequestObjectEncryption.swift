import Foundation

/// Encrypted request objects (RFC 9101 §6.1, OpenID Connect Core §6.3): the signed request
/// object encrypted to the authorization server, so that only it reads the parameters on
/// their way through the browser (by value) or the PAR endpoint.
///
/// The object is signed first, then encrypted (a nested JWT, `cty: JWT`) to the server's key:
/// ``recipientKey`` when set, else one of its JWK set (`jwks_uri`) — a key marked `use: enc`
/// first, else one without `use` — whose type fits ``algorithm`` and whose `alg`, if stated,
/// is that one. The pair is the client's registered `request_object_encryption_alg` and
/// `request_object_encryption_enc`; when the server's metadata lists
/// `request_object_encryption_alg_values_supported` or `…_enc_values_supported`, the pair must
/// be among them.
///
/// ```swift
/// var configuration = ClientConfiguration(clientID: "my-app", redirectURI: URL(string: "http://127.0.0.1/callback")!)
/// configuration.requestObject = RequestObjectOptions(encryption: RequestObjectEncryption(.rsaOAEP256, .a256GCM))
/// ```
public struct RequestObjectEncryption: Sendable, Hashable {
    /// The key management algorithm (`request_object_encryption_alg`).
    public var algorithm: JWEKeyAlgorithm
    /// The content encryption (`request_object_encryption_enc`).
    public var contentEncryption: JWEContentEncryption
    /// The server's public key to encrypt to; `nil` (the default) picks one from its JWK set.
    public var recipientKey: JSONWebKey?

    /// Creates the options.
    ///
    /// - Parameters:
    ///   - algorithm: `request_object_encryption_alg`: `RSA-OAEP-256`, `ECDH-ES`,
    ///     `ECDH-ES+A128KW`…
    ///   - contentEncryption: `request_object_encryption_enc`; `A128CBC-HS256` by default, as
    ///     OpenID Connect Registration says when only the `alg` is registered.
    ///   - recipientKey: the server's key; `nil` picks one from its JWK set.
    public init(_ algorithm: JWEKeyAlgorithm, _ contentEncryption: JWEContentEncryption = .a128CBCHS256, recipientKey: JSONWebKey? = nil) {
        self.algorithm = algorithm
        self.contentEncryption = contentEncryption
        self.recipientKey = recipientKey
    }

    /// Checks the pair: supported by this library, and offered by the server when its
    /// metadata lists what it accepts.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` naming what does not fit.
    func check(against metadata: ServerMetadata) throws(OAuth2Error) {
        guard JWEKeyAlgorithm.supported.contains(algorithm) else {
            throw .client(.invalidConfiguration, "Request objects cannot be encrypted with \(algorithm).")
        }
        guard JWEContentEncryption.supported.contains(contentEncryption) else {
            throw .client(.invalidConfiguration, "Request objects cannot be encrypted with \(contentEncryption).")
        }
        if let offered = metadata.requestObjectEncryptionAlgValuesSupported, !offered.contains(algorithm.rawValue) {
            throw .client(
                .invalidConfiguration,
                "The server does not accept request objects encrypted with \(algorithm); it lists \(Redactor.sanitizeServerText(offered.joined(separator: ", "), limit: 300)).")
        }
        if let offered = metadata.requestObjectEncryptionEncValuesSupported, !offered.contains(contentEncryption.rawValue) {
            throw .client(
                .invalidConfiguration,
                "The server does not accept request objects encrypted with \(contentEncryption); it lists \(Redactor.sanitizeServerText(offered.joined(separator: ", "), limit: 300)).")
        }
    }

    /// The key of `keys` to encrypt to: the first that fits marked `use: enc`, else the first
    /// that fits without `use`; `nil` when none fits.
    func recipient(in keys: JSONWebKeySet) -> JSONWebKey? {
        let fitting = keys.keys.filter { Self.fits($0, algorithm) }
        return fitting.first { $0.use == "enc" } ?? fitting.first { $0.use == nil }
    }

    /// `true` when `key` may receive a JWE made with `algorithm`: not a signing key (`use`),
    /// its type fits (RSA for RSA-OAEP, EC for ECDH-ES), its `alg`, if stated, is that one,
    /// and its `key_ops`, if stated, allow it.
    static func fits(_ key: JSONWebKey, _ algorithm: JWEKeyAlgorithm) -> Bool {
        if let use = key.use, use != "enc" { return false }
        if let stated = key.members["alg"]?.stringValue, stated != algorithm.rawValue { return false }
        if let operations = key.keyOperations, !operations.contains(where: { ["encrypt", "wrapKey", "deriveKey"].contains($0) }) {
            return false
        }
        switch key.keyType {
        case "RSA": return algorithm.isRSA
        case "EC": return algorithm.isECDH
        default: return false
        }
    }
}

extension AuthorizationDraft {
    /// The request object: signed, then, with ``RequestObjectOptions/encryption``, encrypted
    /// to `recipient` (the server's key, found by the caller).
    func requestObject(
        _ options: RequestObjectOptions, metadata: ServerMetadata, configuration: ClientConfiguration, now: Date, recipient: JSONWebKey?
    ) throws(OAuth2Error) -> String {
        let signed = try signedRequestObject(options, metadata: metadata, configuration: configuration, now: now)
        guard let encryption = options.encryption else { return signed }
        try encryption.check(against: metadata)
        guard let recipient else {
            throw .client(.invalidConfiguration, "The server's JWK set has no key to encrypt the request object to with \(encryption.algorithm).")
        }
        guard RequestObjectEncryption.fits(recipient, encryption.algorithm) else {
            throw .client(.invalidConfiguration, "The request object's recipient key does not fit \(encryption.algorithm).")
        }
        do {
            return try JWE.encrypt(Data(signed.utf8), to: recipient, algorithm: encryption.algorithm, encryption: encryption.contentEncryption, contentType: "JWT")
        } catch {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The request object cannot be encrypted: \(error.message)", underlyingError: error)
        }
    }
}

extension OAuth2Client {
    /// The server key a request object is encrypted to, when the configuration encrypts
    /// request objects: the configured one, else one of the server's JWK set (cached, fetched
    /// when not, and fetched again once when the cached set has none that fits).
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for a pair the server does not
    ///   offer, when the server has no JWK set or it has no key that fits; transport errors.
    func requestObjectRecipient() async throws -> JSONWebKey? {
        guard let encryption = configuration.requestObject?.encryption else { return nil }
        try encryption.check(against: metadata)
        if let key = encryption.recipientKey { return key }
        guard let keySet else {
            throw OAuth2Error.client(.invalidConfiguration, "The server publishes no JWK set (jwks_uri) to encrypt the request object to.")
        }
        let current = now()
        let keys = try await keySet.keys(now: current)
        if let key = encryption.recipient(in: keys) { return key }
        if let fresh = try await keySet.refreshed(now: current), let key = encryption.recipient(in: fresh) { return key }
        throw OAuth2Error.client(
            .invalidConfiguration, "The server's JWK set has no key to encrypt the request object to with \(encryption.algorithm).")
    }

    /// The same from the cache only, for the synchronous builders: `nil` when the key set is
    /// not cached yet (then the builder says to use ``startAuthorization(_:)``).
    func cachedRequestObjectRecipient() -> JSONWebKey? {
        guard let encryption = configuration.requestObject?.encryption else { return nil }
        if let key = encryption.recipientKey { return key }
        return keySet?.cachedKeys(now: now()).flatMap(encryption.recipient(in:))
    }
}
