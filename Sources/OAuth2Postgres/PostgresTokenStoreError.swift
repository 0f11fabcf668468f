#if Postgres
import Foundation
import PostgresNIO

/// The error a ``PostgresTokenStore`` throws.
///
/// Switch on ``code`` (an open set: new codes never break a `switch`), and retry when
/// ``isTransient`` says so. The message names the operation and the database's own error
/// message, never a token, a secret, a ciphertext or the database password.
public struct PostgresTokenStoreError: Error, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's spelling.
        public let rawValue: String
        /// Creates a code from its spelling.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's spelling.
        public var description: String { rawValue }

        /// The database could not be reached, or the connection was lost (closed by the
        /// server, `pg_terminate_backend`, a network failure, too many connections).
        /// Transient: nothing was written, or the transaction was rolled back.
        public static let connectionFailed = Code(rawValue: "connection_failed")
        /// The database aborted the transaction to keep it serializable, or to break a
        /// deadlock (SQLSTATE 40001, 40P01). Transient.
        public static let serializationFailure = Code(rawValue: "serialization_failure")
        /// The session key's lock was not granted within
        /// ``PostgresTokenStore/Configuration/lockTimeout`` (SQLSTATE 55P03). Transient.
        public static let lockTimeout = Code(rawValue: "lock_timeout")
        /// A compare-and-set write found another version of the row than the one it read:
        /// another writer changed it meanwhile. Nothing was written.
        public static let conflict = Code(rawValue: "conflict")
        /// The row is sealed with a key id that the key ring does not hold.
        public static let unknownKey = Code(rawValue: "unknown_key")
        /// The row could not be opened or read: a failed authentication tag (an altered
        /// ciphertext, or one copied from another row), or a document that is not a token
        /// document.
        public static let corrupt = Code(rawValue: "corrupt")
        /// The database holds a schema version newer than this library knows; the store
        /// neither reads nor writes it.
        public static let unsupportedSchema = Code(rawValue: "unsupported_schema")
        /// The store's configuration is unusable: a bad URL, schema name or key.
        public static let invalidConfiguration = Code(rawValue: "invalid_configuration")
        /// Any other error of the database (``PostgresTokenStoreError/sqlState`` says which).
        public static let database = Code(rawValue: "database")
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable explanation; never contains a token, a secret or a password.
    public var message: String
    /// The SQLSTATE the database answered with, when it answered.
    public var sqlState: String?
    /// Whether the connection closed under the operation (rather than the database refusing
    /// it or not answering in time): an idempotent operation may run again on another.
    var lostConnection = false
    /// Whether trying again later may succeed: lost connections, serialization failures and
    /// lock timeouts. A transient error changes nothing in the store.
    public var isTransient: Bool {
        [.connectionFailed, .serializationFailure, .lockTimeout].contains(code)
    }

    /// Creates an error.
    public init(_ code: Code, _ message: String, sqlState: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
    }

    /// One line: code, message and SQLSTATE.
    public var description: String {
        var text = "PostgresTokenStoreError.\(code.rawValue): \(message)"
        if let sqlState { text += " [SQLSTATE \(sqlState)]" }
        return text
    }
}

extension PostgresTokenStoreError {
    /// The error for `error`, thrown by PostgresNIO during `operation`; other errors
    /// (cancellation, the library's own) are returned unchanged.
    static func mapping(_ error: any Error, during operation: String) -> any Error {
        if error is PostgresTokenStoreError || error is CancellationError { return error }
        if PostgresTokenStore.isConnectionLoss(error) {
            var mapped = PostgresTokenStoreError(.connectionFailed, "\(operation) failed: the connection to the database was lost")
            mapped.sqlState = (error as? PSQLError)?.serverInfo?[.sqlState]
            mapped.lostConnection = true
            return mapped
        }
        if let transaction = error as? PostgresTransactionError {
            if let inner = transaction.closureError ?? transaction.beginError ?? transaction.commitError {
                return mapping(inner, during: operation)
            }
        }
        // Anything else is not the database's: the caller's own error, passed through.
        guard let psql = error as? PSQLError else { return error }
        switch psql.code {
        case .server:
            let state = psql.serverInfo?[.sqlState]
            // The server's own message only: its `detail` may quote values.
            let serverMessage = String((psql.serverInfo?[.message] ?? "the server refused").prefix(200))
            let code: Code
            switch state {
            case let state? where state.hasPrefix("08"): code = .connectionFailed
            case "57P01", "57P02", "57P03", "53300": code = .connectionFailed  // terminated, crash, starting, too many connections
            case "40001", "40P01": code = .serializationFailure
            case "55P03": code = .lockTimeout
            default: code = .database
            }
            return PostgresTokenStoreError(code, "\(operation) failed: \(serverMessage)", sqlState: state)
        case .queryCancelled:
            return CancellationError()
        case .sslUnsupported, .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            return PostgresTokenStoreError(.connectionFailed, "\(operation) failed: TLS with the database failed (\(psql.code))")
        case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            return PostgresTokenStoreError(.invalidConfiguration, "\(operation) failed: authentication with the database failed (\(psql.code))")
        default:
            return PostgresTokenStoreError(.connectionFailed, "\(operation) failed: \(psql.code)")
        }
    }
}
#endif
