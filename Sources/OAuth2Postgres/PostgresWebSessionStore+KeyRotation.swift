#if Postgres
import Foundation
import NIOCore
import PostgresNIO

extension PostgresWebSessionStore {
    /// Seals again with the current key up to `limit` rows of the web tables (sessions
    /// first, then pending sign-ins) sealed with a previous key of the ring; returns how
    /// many rows it sealed again or removed.
    ///
    /// A row written meanwhile is left as its writer left it (the update names the record
    /// it read); a row that does not open with its key is no session, and is removed. Rows of
    /// a key the ring no longer holds are not touched: they go when read.
    func resealRows(limit: Int) async throws -> Int {
        let sessions = try await reseal(table: sessionsTable, column: "id_hash", what: Self.sessionKind, limit: limit)
        let pending = try await reseal(table: pendingTable, column: "state_hash", what: Self.pendingKind, limit: limit - sessions)
        return sessions + pending
    }

    /// ``resealRows(limit:)`` for one table, whose rows are named by `column`.
    private func reseal(table: String, column: String, what: String, limit: Int) async throws -> Int {
        let older = store.cipher.ring.previous.map(\.id)
        guard limit > 0, !older.isEmpty else { return 0 }
        let select: PostgresQuery = """
            SELECT \(unescaped: column), record FROM \(unescaped: table) WHERE key_id = ANY(\(older)) ORDER BY 1 LIMIT \(Int64(limit))
            """
        return try await store.withPooledConnection("sealing the \(what)s again", idempotent: false) { [logger = store.logger, self] connection in
            var rows: [(String, ByteBuffer)] = []
            for try await row in try await connection.rows(select, logger: logger).decode((String, ByteBuffer).self) {
                rows.append(row)
            }
            var moved = 0
            for (id, record) in rows {
                let change: PostgresQuery
                do {
                    let binding = ["swift-oauth2 postgres \(what)"]
                    let plaintext = try store.cipher.openEnvelope(record.readableBytesView, binding: binding, row: "a stored \(what)")
                    let (keyID, sealed) = try store.cipher.sealEnvelope(plaintext, binding: binding)
                    change = """
                        UPDATE \(unescaped: table) SET key_id = \(keyID), record = \(ByteBuffer(bytes: sealed))
                        WHERE \(unescaped: column) = \(id) AND record = \(record) RETURNING 1
                        """
                } catch let error as PostgresTokenStoreError {
                    Self.logUnopenable(error, logger: logger)
                    change = "DELETE FROM \(unescaped: table) WHERE \(unescaped: column) = \(id) AND record = \(record) RETURNING 1"
                }
                for try await _ in try await connection.rows(change, logger: logger) { moved += 1 }
            }
            return moved
        }
    }
}
#endif
