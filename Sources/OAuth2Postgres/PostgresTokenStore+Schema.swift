#if Postgres
import Crypto
import Foundation
import Logging
import PostgresNIO

/// The store's tables, and the migrations that make them.
///
/// Version 1: `oauth2_sessions(issuer, client_id, account, version, document, expires_at,
/// updated_at)`, where `document` was a JSON envelope `{"alg", "kid", "data"}` around the
/// sealed token document. Version 2 moves the key id into a column of its own (`key_id`,
/// indexed, so that rotation finds the rows of an old key) and the ciphertext into `sealed`
/// (`bytea`), converting every row in place. Version 3 adds `oauth2_replay_records(key,
/// expires_at)`, the one-time values an API has seen (``PostgresReplayStore``). Version 4
/// adds `oauth2_web_sessions` and `oauth2_web_pending_sign_ins`, a web app's browser sessions
/// and pending sign-ins (``PostgresWebSessionStore``). Version 5 adds
/// `oauth2_registrations(issuer, client_id, key_id, sealed, updated_at)`, the client
/// registrations (`RegistrationStore`), sealed like the sessions' rows. Registrations that
/// earlier versions kept as session rows (account `.registration`) cannot be converted in
/// SQL (they are sealed): each moves to the new table the first time it is loaded. Version 6
/// gives both web tables a `key_id` column (indexed), so that key rotation counts and reseals
/// their rows: it is read, in SQL, from the sealed value, which names its key in its first
/// bytes (see `RowCipher.sealEnvelope`); a row whose value names no key is no sealed value,
/// never opens, and goes. Version 7 adds `oauth2_downstream_tokens(key_hash, session_hash,
/// key_id, sealed, expires_at, updated_at)`, the tokens a service got for other audiences
/// (``PostgresDownstreamTokenStore``), sealed like the sessions' rows and bound to their key.
/// Version 8 adds `oauth2_dpop_nonces(origin, nonce, expires_at, updated_at)`, the latest
/// DPoP nonce of each server the fleet talks to (``PostgresDPoPNonceStore``; a nonce is no
/// secret: not sealed).
///
/// Migrations run in one transaction under an advisory lock of the schema, so replicas
/// that start together migrate once; the applied versions are rows of
/// `oauth2_schema_migrations`.
enum StoreSchema {
    /// The newest schema version this library knows.
    static let currentVersion = 8

    struct Migration: Sendable {
        let version: Int
        let description: String
        let statements: @Sendable (String) -> [String]
    }

    static let migrations: [Migration] = [
        Migration(version: 1, description: "sessions table") { schema in
            [
                """
                CREATE TABLE \(schema).oauth2_sessions (
                    issuer text NOT NULL,
                    client_id text NOT NULL,
                    account text NOT NULL,
                    version bigint NOT NULL,
                    document text NOT NULL,
                    expires_at timestamptz,
                    updated_at timestamptz NOT NULL,
                    PRIMARY KEY (issuer, client_id, account))
                """,
                "CREATE INDEX oauth2_sessions_expires_at ON \(schema).oauth2_sessions (expires_at) WHERE expires_at IS NOT NULL",
            ]
        },
        Migration(version: 2, description: "key id column, ciphertext as bytea") { schema in
            [
                "ALTER TABLE \(schema).oauth2_sessions ADD COLUMN key_id text, ADD COLUMN sealed bytea",
                """
                UPDATE \(schema).oauth2_sessions
                SET key_id = document::jsonb ->> 'kid', sealed = decode(document::jsonb ->> 'data', 'base64')
                """,
                """
                ALTER TABLE \(schema).oauth2_sessions
                    ALTER COLUMN key_id SET NOT NULL, ALTER COLUMN sealed SET NOT NULL, DROP COLUMN document
                """,
                "CREATE INDEX oauth2_sessions_key_id ON \(schema).oauth2_sessions (key_id)",
            ]
        },
        Migration(version: 3, description: "replay records") { schema in
            [
                "CREATE TABLE \(schema).oauth2_replay_records (key text PRIMARY KEY, expires_at timestamptz NOT NULL)",
                "CREATE INDEX oauth2_replay_records_expires_at ON \(schema).oauth2_replay_records (expires_at)",
            ]
        },
        Migration(version: 4, description: "web sessions") { schema in
            [
                """
                CREATE TABLE \(schema).oauth2_web_sessions (
                    id_hash text PRIMARY KEY,
                    issuer text NOT NULL,
                    subject text NOT NULL,
                    provider_session_id text,
                    record bytea NOT NULL,
                    last_seen_at timestamptz NOT NULL,
                    absolute_expiry timestamptz NOT NULL)
                """,
                "CREATE INDEX oauth2_web_sessions_provider_session ON \(schema).oauth2_web_sessions (issuer, provider_session_id)",
                "CREATE INDEX oauth2_web_sessions_subject ON \(schema).oauth2_web_sessions (issuer, subject)",
                "CREATE INDEX oauth2_web_sessions_absolute_expiry ON \(schema).oauth2_web_sessions (absolute_expiry)",
                """
                CREATE TABLE \(schema).oauth2_web_pending_sign_ins (
                    state_hash text PRIMARY KEY,
                    record bytea NOT NULL,
                    expires_at timestamptz NOT NULL)
                """,
                "CREATE INDEX oauth2_web_pending_sign_ins_expires_at ON \(schema).oauth2_web_pending_sign_ins (expires_at)",
            ]
        },
        Migration(version: 5, description: "client registrations") { schema in
            [
                """
                CREATE TABLE \(schema).oauth2_registrations (
                    issuer text NOT NULL,
                    client_id text NOT NULL,
                    key_id text NOT NULL,
                    sealed bytea NOT NULL,
                    updated_at timestamptz NOT NULL,
                    PRIMARY KEY (issuer, client_id))
                """,
                "CREATE INDEX oauth2_registrations_key_id ON \(schema).oauth2_registrations (key_id)",
            ]
        },
        Migration(version: 6, description: "key id column of the web tables") { schema in
            ["oauth2_web_sessions", "oauth2_web_pending_sign_ins"].flatMap { table in
                [
                    "ALTER TABLE \(schema).\(table) ADD COLUMN key_id text",
                    // The sealed value: 1, the key id's length n, the key id (printable
                    // ASCII), then at least one byte more. CASE keeps each test behind the
                    // ones that make it safe.
                    """
                    UPDATE \(schema).\(table) SET key_id = CASE
                        WHEN length(record) < 3 THEN NULL
                        WHEN get_byte(record, 0) <> 1 OR get_byte(record, 1) = 0 OR length(record) <= 2 + get_byte(record, 1) THEN NULL
                        WHEN encode(substring(record FROM 3 FOR get_byte(record, 1)), 'hex') !~ '^(2[1-9a-f]|[3-6][0-9a-f]|7[0-9a-e])+$' THEN NULL
                        ELSE convert_from(substring(record FROM 3 FOR get_byte(record, 1)), 'UTF8') END
                    """,
                    "DELETE FROM \(schema).\(table) WHERE key_id IS NULL",
                    "ALTER TABLE \(schema).\(table) ALTER COLUMN key_id SET NOT NULL",
                    "CREATE INDEX \(table)_key_id ON \(schema).\(table) (key_id)",
                ]
            }
        },
        Migration(version: 7, description: "downstream tokens") { schema in
            [
                """
                CREATE TABLE \(schema).oauth2_downstream_tokens (
                    key_hash text PRIMARY KEY,
                    session_hash text,
                    key_id text NOT NULL,
                    sealed bytea NOT NULL,
                    expires_at timestamptz NOT NULL,
                    updated_at timestamptz NOT NULL)
                """,
                "CREATE INDEX oauth2_downstream_tokens_session ON \(schema).oauth2_downstream_tokens (session_hash)",
                "CREATE INDEX oauth2_downstream_tokens_key_id ON \(schema).oauth2_downstream_tokens (key_id)",
                "CREATE INDEX oauth2_downstream_tokens_expires_at ON \(schema).oauth2_downstream_tokens (expires_at)",
            ]
        },
        Migration(version: 8, description: "DPoP nonces") { schema in
            [
                """
                CREATE TABLE \(schema).oauth2_dpop_nonces (
                    origin text PRIMARY KEY,
                    nonce text NOT NULL,
                    expires_at timestamptz NOT NULL,
                    updated_at timestamptz NOT NULL)
                """,
                "CREATE INDEX oauth2_dpop_nonces_expires_at ON \(schema).oauth2_dpop_nonces (expires_at)",
            ]
        },
    ]

    /// Creates the schema or brings it to ``currentVersion``; returns the versions applied.
    ///
    /// - Throws: ``PostgresTokenStoreError/Code/unsupportedSchema`` when the database is
    ///   newer than this library.
    static func migrate(schema: String, connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        try await connection.run("BEGIN", logger: logger)
        do {
            try await connection.run("SELECT pg_advisory_xact_lock(\(lockID(schema: schema, name: "migrations")))", logger: logger)
            try await connection.run("CREATE SCHEMA IF NOT EXISTS \(unescaped: schema)", logger: logger)
            try await connection.run(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: schema).oauth2_schema_migrations (
                    version integer PRIMARY KEY,
                    description text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            var found = 0
            for try await version in try await connection.rows(
                "SELECT coalesce(max(version), 0) FROM \(unescaped: schema).oauth2_schema_migrations", logger: logger
            ).decode(Int.self) {
                found = version
            }
            guard found <= currentVersion else {
                throw PostgresTokenStoreError(
                    .unsupportedSchema,
                    "schema \(schema) is at version \(found), written by a newer swift-oauth2; this one knows up to \(currentVersion)")
            }
            var applied: [Int] = []
            for migration in migrations where migration.version > found {
                for statement in migration.statements(schema) {
                    try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.run(
                    """
                    INSERT INTO \(unescaped: schema).oauth2_schema_migrations (version, description)
                    VALUES (\(migration.version), \(migration.description))
                    """, logger: logger)
                applied.append(migration.version)
            }
            try await connection.run("COMMIT", logger: logger)
            return applied
        } catch {
            try? await connection.run("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// A 64-bit advisory-lock id for `name` in `schema`: the first 8 bytes of a SHA-256 of
    /// both, so stores of different schemas never share a lock.
    static func lockID(schema: String, name: String) -> Int64 {
        lockID(["swift-oauth2 lock", schema, name])
    }

    /// The advisory-lock id of a session key in `schema`.
    static func lockID(schema: String, issuer: String, clientID: String, account: String) -> Int64 {
        lockID(["swift-oauth2 session lock", schema, issuer, clientID, account])
    }

    private static func lockID(_ parts: [String]) -> Int64 {
        var hasher = SHA256()
        for part in parts {
            // Length-prefixed: no two different lists hash the same bytes.
            withUnsafeBytes(of: UInt32(part.utf8.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: Data(part.utf8))
        }
        return hasher.finalize().withUnsafeBytes { raw in
            raw.prefix(8).reduce(Int64(0)) { ($0 << 8) | Int64($1) }
        }
    }
}
#endif
