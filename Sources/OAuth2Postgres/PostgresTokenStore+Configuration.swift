#if Postgres
import Foundation
import NIOSSL
import PostgresNIO

extension PostgresTokenStore {
    /// Where in the database the store keeps its rows, and how it behaves.
    public struct Configuration: Sendable {
        /// The PostgreSQL schema that holds the store's tables (created if missing):
        /// lower-case letters, digits and `_`, at most 40 characters, not starting with a
        /// digit. Stores of different schemas share nothing, locks and notifications included.
        public var schema: String
        /// How many sessions the in-process cache keeps (oldest out first); `0` turns the
        /// cache off, and with it the notification listener (one connection fewer: right for
        /// short-lived processes such as the `oauth2` tool). The cache serves only while this
        /// replica's listener is connected, and is emptied whenever it connects or drops.
        public var cacheCapacity: Int
        /// How long an operation waits for a connection of the pool (the database down,
        /// unreachable, refusing TLS, or every connection busy) before it throws
        /// ``PostgresTokenStoreError/Code/connectionFailed``.
        public var connectionTimeout: Duration
        /// How long a read or write of a row (and a commit) may take before it throws
        /// ``PostgresTokenStoreError/Code/connectionFailed``: a connection that died without
        /// the client noticing yet never answers.
        public var queryTimeout: Duration
        /// How long ``PostgresTokenStore/withExclusiveAccess(to:_:)`` waits for a session's
        /// lock before it throws ``PostgresTokenStoreError/Code/lockTimeout``.
        public var lockTimeout: Duration
        /// How long the listener waits before it connects again after losing its connection.
        public var listenerReconnectDelay: Duration
        /// The clock that dates the rows (`updated_at`) and decides which have expired
        /// (``PostgresTokenStore/removeExpired(grace:)``); tests give their own.
        public var now: @Sendable () -> Date

        /// A configuration; every parameter has a default.
        public init(
            schema: String = "oauth2",
            cacheCapacity: Int = 1024,
            connectionTimeout: Duration = .seconds(10),
            queryTimeout: Duration = .seconds(30),
            lockTimeout: Duration = .seconds(30),
            listenerReconnectDelay: Duration = .seconds(1),
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.schema = schema
            self.cacheCapacity = cacheCapacity
            self.connectionTimeout = connectionTimeout
            self.queryTimeout = queryTimeout
            self.lockTimeout = lockTimeout
            self.listenerReconnectDelay = listenerReconnectDelay
            self.now = now
        }

        /// Throws unless the schema name is one the store can use as an identifier.
        func validate() throws {
            let bytes = Array(schema.utf8)
            let valid = !bytes.isEmpty && bytes.count <= 40
                && bytes.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
                && !(bytes[0] >= 0x30 && bytes[0] <= 0x39)
            guard valid else {
                throw PostgresTokenStoreError(
                    .invalidConfiguration, "the schema name must be lower-case letters, digits and _, at most 40, not starting with a digit")
            }
            guard cacheCapacity >= 0 else { throw PostgresTokenStoreError(.invalidConfiguration, "the cache capacity is negative") }
        }
    }

    /// The connection settings a `postgres://user:password@host:port/database` URL names (as
    /// in `OAUTH2_POSTGRES_URL`), with libpq's `sslmode` (`disable`, `require`, `verify-ca`,
    /// `verify-full`; `verify-full` when absent) and `sslrootcert` (a PEM file of the CAs to
    /// trust; the system's when absent) query parameters. The user name, password and
    /// database are percent-decoded.
    ///
    /// The pool it describes holds ``defaultPoolSize`` connections, opened when the store's
    /// service starts and kept (its minimum is its maximum), and sends no keep-alive queries.
    /// PostgresNIO's default pool grows on demand, closes idle connections after 60 s and pings
    /// idle ones every 30 s: it schedules those two timers each time a connection returns to
    /// the pool, and on Linux a cancelled timer holds its memory until it would have fired. A
    /// replica serving a few thousand requests a second then carries well over 100 MB of
    /// cancelled timers. A connection the server or the network closes is still noticed and
    /// replaced; one dropped silently (a NAT that forgets it) is noticed by its next query.
    /// To change the size, set both `options.minimumConnections` and
    /// `options.maximumConnections`.
    ///
    /// - Throws: ``PostgresTokenStoreError/Code/invalidConfiguration`` for a URL that is not
    ///   one; the message never repeats the URL or its password.
    public static func clientConfiguration(url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            ["postgres", "postgresql"].contains(scheme.lowercased())
        else { throw PostgresTokenStoreError(.invalidConfiguration, "not a postgres:// URL") }
        guard let host = components.host, !host.isEmpty else {
            throw PostgresTokenStoreError(.invalidConfiguration, "the postgres URL has no host")
        }
        guard let user = components.user.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            throw PostgresTokenStoreError(.invalidConfiguration, "the postgres URL has no user name")
        }
        let password = components.password.flatMap { $0.removingPercentEncoding }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let database = path.isEmpty ? nil : path.removingPercentEncoding
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }

        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate = query["sslrootcert"], !rootCertificate.isEmpty {
            tlsConfiguration.trustRoots = .file(rootCertificate)
        }
        let tls: PostgresClient.Configuration.TLS
        switch query["sslmode"] ?? "verify-full" {
        case "disable": tls = .disable
        case "require":
            tlsConfiguration.certificateVerification = .none
            tls = .require(tlsConfiguration)
        case "verify-ca":
            tlsConfiguration.certificateVerification = .noHostnameVerification
            tls = .require(tlsConfiguration)
        case "verify-full":
            // With an IP address for the host, the certificate must name that address.
            tlsConfiguration.certificateVerification = .fullVerification
            tls = .require(tlsConfiguration)
        default:
            throw PostgresTokenStoreError(.invalidConfiguration, "unsupported sslmode (disable, require, verify-ca or verify-full)")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: password, database: database, tls: tls)
        configuration.options.minimumConnections = defaultPoolSize
        configuration.options.maximumConnections = defaultPoolSize
        configuration.options.keepAliveBehavior = nil
        return configuration
    }

    /// The number of connections in the pool ``clientConfiguration(url:)`` describes: 8, so
    /// that a dozen replicas stay under PostgreSQL's default `max_connections` of 100.
    public static let defaultPoolSize = 8

    /// `url` with its password replaced by `***`, for logs and messages.
    public static func redacting(url: String) -> String {
        guard var components = URLComponents(string: url) else { return "(not a URL)" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "(not a URL)"
    }
}
#endif
