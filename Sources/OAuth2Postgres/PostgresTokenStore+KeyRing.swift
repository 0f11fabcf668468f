#if Postgres
import Crypto
import Foundation
import OAuth2

extension PostgresTokenStore {
    /// The keys that seal the rows: AES-256-GCM, one current key that seals every write,
    /// and the previous keys that still open older rows.
    ///
    /// Each row names the id of the key that sealed it, so keys rotate without downtime:
    /// add the new key as ``current`` and move the old one to ``previous`` on every replica;
    /// rows are sealed again with the new key the next time they are written (or at once,
    /// with ``PostgresTokenStore/resealRows(limit:)``). Remove an old key once no row names
    /// it (``PostgresTokenStore/keyUsage()``).
    ///
    /// The associated data of each ciphertext binds it to its key id and its row's session
    /// key (issuer, client id, account), so a ciphertext copied into another row does not
    /// open.
    public struct EncryptionKeys: Sendable {
        /// One key and its id.
        public struct Key: Sendable {
            /// The id rows name; chosen by the application (`2026-11`, a KMS key version).
            public let id: String
            let key: SymmetricKey

            /// A key of exactly 32 bytes, named `id` (1 to 64 printable ASCII characters).
            ///
            /// - Throws: ``PostgresTokenStoreError/Code/invalidConfiguration`` for another
            ///   length or an unusable id.
            public init(id: String, bytes: some ContiguousBytes) throws {
                let count = bytes.withUnsafeBytes { $0.count }
                guard count == 32 else {
                    throw PostgresTokenStoreError(.invalidConfiguration, "an encryption key must be 32 bytes, not \(count)")
                }
                guard !id.isEmpty, id.utf8.count <= 64, id.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw PostgresTokenStoreError(.invalidConfiguration, "a key id must be 1 to 64 printable ASCII characters")
                }
                self.id = id
                self.key = SymmetricKey(data: bytes)
            }
        }

        /// The key that seals every write.
        public let current: Key
        /// Keys that only open rows sealed before the rotation.
        public let previous: [Key]
        private let byID: [String: SymmetricKey]

        /// A ring with `current` and the `previous` keys.
        ///
        /// - Throws: ``PostgresTokenStoreError/Code/invalidConfiguration`` when two keys
        ///   share an id.
        public init(current: Key, previous: [Key] = []) throws {
            var byID: [String: SymmetricKey] = [:]
            for key in [current] + previous {
                guard byID.updateValue(key.key, forKey: key.id) == nil else {
                    throw PostgresTokenStoreError(.invalidConfiguration, "two keys of the ring share the id \"\(key.id)\"")
                }
            }
            self.current = current
            self.previous = previous
            self.byID = byID
        }

        /// A ring written as text — for an environment variable or a secret file: keys
        /// separated by commas, the current one first, each `id:` followed by its 32 bytes in
        /// base64 (standard or URL-safe, padded or not).
        ///
        /// ```swift
        /// // OAUTH2_POSTGRES_KEYS="2026-11:q9Xr…,2026-10:Hc2M…"
        /// let ring = try PostgresTokenStore.EncryptionKeys(parsing: environment["OAUTH2_POSTGRES_KEYS"] ?? "")
        /// ```
        ///
        /// - Throws: ``PostgresTokenStoreError/Code/invalidConfiguration`` when the text is
        ///   empty, an entry is malformed, a key is not 32 bytes, or two keys share an id. The
        ///   message names the entry by its position and id, never a key.
        public init(parsing text: String) throws {
            var keys: [Key] = []
            for (index, entry) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
                let entry = entry.trimmingCharacters(in: .whitespacesAndNewlines)
                guard let colon = entry.lastIndex(of: ":"), colon != entry.startIndex else {
                    throw PostgresTokenStoreError(.invalidConfiguration, "key \(index + 1) of the ring is not id:base64-key")
                }
                let id = String(entry[..<colon])
                guard let bytes = Self.base64(entry[entry.index(after: colon)...]) else {
                    throw PostgresTokenStoreError(.invalidConfiguration, "key \(index + 1) (\"\(id.prefix(64))\") of the ring is not base64")
                }
                keys.append(try Key(id: id, bytes: bytes))
            }
            guard let current = keys.first else {
                throw PostgresTokenStoreError(.invalidConfiguration, "the key ring is empty")
            }
            try self.init(current: current, previous: Array(keys.dropFirst()))
        }

        /// Standard or URL-safe base64, padded or not.
        private static func base64(_ text: Substring) -> Data? {
            var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
            return Data(base64Encoded: standard)
        }

        /// The key named `id`, if the ring holds it.
        func key(_ id: String) -> SymmetricKey? { byID[id] }
    }
}

/// Seals and opens what the store's rows hold: token documents, registrations, web sessions,
/// pending sign-ins.
struct RowCipher: Sendable {
    let ring: PostgresTokenStore.EncryptionKeys

    /// What a ciphertext sealed with key `keyID` authenticates: a JSON array of the kind of
    /// row (`binding`'s first element), the key id, then what names the row, so that no two
    /// different rows give the same bytes.
    static func associatedData(keyID: String, binding: [String]) -> Data {
        let parts = Array(binding.prefix(1)) + [keyID] + binding.dropFirst()
        // An array of strings always encodes.
        return (try? JSONEncoder().encode(parts)) ?? Data()
    }

    /// What the ciphertext of the token row of `key` is bound to.
    static func binding(for key: TokenSessionKey) -> [String] {
        ["swift-oauth2 postgres row", key.issuer, key.clientID, key.account]
    }

    /// What the ciphertext of the registration row of `clientID` at `issuer` is bound to:
    /// another array than a session row's, so that neither opens as the other.
    static func binding(registrationOf clientID: String, at issuer: String) -> [String] {
        ["swift-oauth2 postgres registration", issuer, clientID]
    }

    /// `plaintext` sealed with the current key: its id, and nonce + ciphertext + tag.
    func seal(_ plaintext: Data, for key: TokenSessionKey) throws -> (keyID: String, sealed: Data) {
        try seal(plaintext, binding: Self.binding(for: key))
    }

    /// The registration document `plaintext` of `clientID` at `issuer`, sealed with the
    /// current key: its id, and nonce + ciphertext + tag.
    func seal(_ plaintext: Data, registrationOf clientID: String, at issuer: String) throws -> (keyID: String, sealed: Data) {
        try seal(plaintext, binding: Self.binding(registrationOf: clientID, at: issuer))
    }

    /// The plain registration document of `clientID` at `issuer`.
    ///
    /// - Throws: as ``open(_:keyID:for:)``.
    func open(_ sealed: Data, keyID: String, registrationOf clientID: String, at issuer: String) throws -> Data {
        try open(sealed, keyID: keyID, binding: Self.binding(registrationOf: clientID, at: issuer), row: "the registration row of \(clientID)")
    }

    /// `plaintext` sealed with the current key, bound to `binding`.
    func seal(_ plaintext: Data, binding: [String]) throws -> (keyID: String, sealed: Data) {
        let keyID = ring.current.id
        do {
            let box = try AES.GCM.seal(plaintext, using: ring.current.key, authenticating: Self.associatedData(keyID: keyID, binding: binding))
            guard let combined = box.combined else { throw PostgresTokenStoreError(.corrupt, "encryption failed") }
            return (keyID, combined)
        } catch {
            throw PostgresTokenStoreError(.corrupt, "encryption failed")
        }
    }

    /// The plain document of the row of `key`.
    ///
    /// - Throws: ``PostgresTokenStoreError/Code/unknownKey`` when the ring lacks `keyID`;
    ///   ``PostgresTokenStoreError/Code/corrupt`` when the box is malformed or fails
    ///   authentication (altered, or another row's).
    func open(_ sealed: Data, keyID: String, for key: TokenSessionKey) throws -> Data {
        try open(sealed, keyID: keyID, binding: Self.binding(for: key), row: "the row of \(key)")
    }

    /// The plaintext of a box bound to `binding`; `row` names the row in errors.
    func open(_ sealed: Data, keyID: String, binding: [String], row: String) throws -> Data {
        guard let symmetric = ring.key(keyID) else {
            throw PostgresTokenStoreError(.unknownKey, "\(row) is sealed with key \"\(keyID.prefix(64))\", which the key ring lacks")
        }
        guard let box = try? AES.GCM.SealedBox(combined: sealed),
            let plaintext = try? AES.GCM.open(box, using: symmetric, authenticating: Self.associatedData(keyID: keyID, binding: binding))
        else {
            throw PostgresTokenStoreError(.corrupt, "\(row) fails authentication: its ciphertext was altered, or belongs to another row")
        }
        return plaintext
    }

    /// `plaintext` sealed into one self-describing value (the web tables', whose key id
    /// column came later): a format byte (1), the key id's length (one byte), the key id,
    /// then nonce + ciphertext + tag; and the key id.
    func sealEnvelope(_ plaintext: Data, binding: [String]) throws -> (keyID: String, sealed: [UInt8]) {
        let (keyID, sealed) = try seal(plaintext, binding: binding)
        return (keyID, [1, UInt8(keyID.utf8.count)] + Array(keyID.utf8) + Array(sealed))
    }

    /// The plaintext of a ``sealEnvelope(_:binding:)`` value.
    ///
    /// - Throws: ``PostgresTokenStoreError/Code/corrupt`` for a value that is not an
    ///   envelope (a plain record written by hand, say) or fails authentication;
    ///   ``PostgresTokenStoreError/Code/unknownKey`` when the ring lacks its key.
    func openEnvelope(_ envelope: some Collection<UInt8>, binding: [String], row: String) throws -> Data {
        let bytes = Array(envelope)
        guard bytes.count > 2, bytes[0] == 1, bytes.count > 2 + Int(bytes[1]),
            let keyID = String(validating: bytes[2..<(2 + Int(bytes[1]))], as: UTF8.self)
        else {
            throw PostgresTokenStoreError(.corrupt, "\(row) is not sealed")
        }
        return try open(Data(bytes[(2 + Int(bytes[1]))...]), keyID: keyID, binding: binding, row: row)
    }
}
#endif
