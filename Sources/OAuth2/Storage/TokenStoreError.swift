import Foundation

/// The error a ``TokenStore`` throws.
///
/// Switch on ``code`` (an open set: new codes never break a `switch`). The message names
/// files, keys and system errors, never a token or a secret.
///
/// What each code means for the record on disk or in the keyring:
/// - ``Code/corrupt``: the record could not be read; a file store moved it to
///   ``preservedPath`` and loads `nil` from then on.
/// - ``Code/unsupportedVersion``: a newer version of the library wrote it in a format this
///   one cannot read; it is left in place, and `save` refuses to replace it.
/// - ``Code/wrongKey``: it is encrypted with another key, or encrypted while the store has
///   no key; it is left in place, and `save` refuses to replace it.
public struct TokenStoreError: Error, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's spelling.
        public let rawValue: String
        /// Creates a code from its spelling.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's spelling.
        public var description: String { rawValue }

        /// A stored record is unreadable: not JSON, a required member missing or of the wrong
        /// type, a failed authentication tag. File stores keep the bad file aside
        /// (``TokenStoreError/preservedPath``).
        public static let corrupt = Code(rawValue: "corrupt")
        /// A stored record was written in a schema version this library cannot read
        /// (``TokenStoreError/version``).
        public static let unsupportedVersion = Code(rawValue: "unsupported_version")
        /// A stored record is encrypted with a different key than the store's, or the store
        /// has no key for an encrypted record.
        public static let wrongKey = Code(rawValue: "wrong_key")
        /// A store that encrypts found a plain record where one of its records belongs —
        /// planted, or left from before encryption was turned on. It is neither read nor
        /// replaced; ``FileTokenStore/encryptPlainDocuments()`` adopts such records on purpose.
        public static let unencrypted = Code(rawValue: "unencrypted")
        /// The encryption key is unusable: not 32 bytes, or a key file others can read.
        public static let invalidEncryptionKey = Code(rawValue: "invalid_encryption_key")
        /// The record stored where `key` belongs names another key.
        public static let conflict = Code(rawValue: "conflict")
        /// The store's backend is missing: no libsecret, no Secret Service on the session bus,
        /// no Keychain access.
        public static let unavailable = Code(rawValue: "unavailable")
        /// A file-system call failed (``TokenStoreError/systemError`` has the `errno`).
        public static let io = Code(rawValue: "io")
        /// The keyring or the Keychain refused the operation (a locked collection, an
        /// `OSStatus`).
        public static let backend = Code(rawValue: "backend")
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable explanation; never contains a token or a secret.
    public var message: String
    /// The file concerned, for file stores.
    public var path: String?
    /// Where a corrupt file was moved, so that nothing is lost (``Code/corrupt``).
    public var preservedPath: String?
    /// The schema version found, for ``Code/unsupportedVersion``.
    public var version: Int?
    /// The `errno` of a failed system call (``Code/io``), or the backend's status code.
    public var systemError: Int32?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        path: String? = nil,
        preservedPath: String? = nil,
        version: Int? = nil,
        systemError: Int32? = nil
    ) {
        self.code = code
        self.message = message
        self.path = path
        self.preservedPath = preservedPath
        self.version = version
        self.systemError = systemError
    }

    /// One line: code, message, path, and where a corrupt file was kept.
    public var description: String {
        var text = "TokenStoreError.\(code.rawValue): \(message)"
        if let path { text += " (\(path))" }
        if let preservedPath { text += "; kept as \(preservedPath)" }
        if let systemError {
            text += code == .io ? " [errno \(systemError): \(String(cString: strerror(systemError)))]" : " [status \(systemError)]"
        }
        return text
    }
}

extension TokenStoreError {
    /// An ``Code/io`` error for the failed call `operation` on `path`, with the current `errno`.
    static func io(_ operation: String, path: String, errno code: Int32) -> TokenStoreError {
        TokenStoreError(.io, "\(operation) failed", path: path, systemError: code)
    }

    /// A ``Code/corrupt`` error without a path yet (the store adds it).
    static func corrupt(_ message: String) -> TokenStoreError {
        TokenStoreError(.corrupt, message)
    }

    /// The same error, naming `path` (and where the file was kept, if it was moved).
    func at(_ path: String, preserved: String? = nil) -> TokenStoreError {
        var copy = self
        copy.path = path
        if let preserved { copy.preservedPath = preserved }
        return copy
    }
}
