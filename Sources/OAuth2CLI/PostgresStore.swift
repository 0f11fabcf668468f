import Foundation
import Logging
import OAuth2

#if Postgres
import OAuth2Internals
import OAuth2Postgres
import PostgresNIO
#endif

/// `--store postgres`: one `PostgresTokenStore` for the process, so that CI jobs on many
/// machines share one sign-in and renew it once. The connection comes from
/// `OAUTH2_POSTGRES_URL` (a `postgres://` URL; its password is never printed), the keys that
/// seal the rows from `OAUTH2_POSTGRES_KEYS` (``PostgresTokenStore/EncryptionKeys/init(parsing:)``),
/// the schema from `OAUTH2_POSTGRES_SCHEMA` (default `oauth2`).
enum PostgresStore {
    /// The store of this process, opened (and its connection pool started) on first use.
    static func shared(logger: Logger) throws -> any CLIStore {
        #if Postgres
        try opened.withLock { opened in
            if let store = opened { return store }
            let store = try open(ProcessInfo.processInfo.environment, logger: logger)
            // The pool runs until the process ends; a process of this tool is short.
            Task.detached { try? await store.run() }
            opened = store
            return store
        }
        #else
        throw CLIError.usage(
            "This oauth2 was built without PostgreSQL support", hint: "build it with `--traits Postgres` to use `--store postgres`")
        #endif
    }

    #if Postgres
    private static let opened = Locked<PostgresTokenStore?>(nil)

    /// A store for a short-lived process: no cache (so no listener), two connections at most.
    static func open(_ environment: [String: String], logger: Logger) throws -> PostgresTokenStore {
        guard let url = environment["OAUTH2_POSTGRES_URL"], !url.isEmpty else {
            throw CLIError.usage(
                "--store postgres needs OAUTH2_POSTGRES_URL", hint: "set it to postgres://user:password@host:5432/database?sslmode=verify-full")
        }
        guard let keys = environment["OAUTH2_POSTGRES_KEYS"], !keys.isEmpty else {
            throw CLIError.usage(
                "--store postgres needs OAUTH2_POSTGRES_KEYS, the keys that encrypt the tokens at rest",
                hint: "every machine needs the same: make one with `echo \"k1:$(head -c 32 /dev/urandom | base64)\"`")
        }
        var postgres = try PostgresTokenStore.clientConfiguration(url: url)
        // One short-lived command: at most two connections, opened when needed.
        postgres.options.minimumConnections = 0
        postgres.options.maximumConnections = 2
        let schema = environment["OAUTH2_POSTGRES_SCHEMA"].flatMap { $0.isEmpty ? nil : $0 } ?? "oauth2"
        return try PostgresTokenStore(
            postgres: postgres, configuration: .init(schema: schema, cacheCapacity: 0),
            encryptionKeys: .init(parsing: keys), logger: logger)
    }
    #endif
}
