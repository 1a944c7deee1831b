import GRDB
import PostbackKit

/// `postbackd forward` on SQLite. Its one writer makes every claim atomic: two forward
/// processes never lease one delivery at once.
extension SQLiteStore {
    /// Rows read per discovery pass, so that the write lock is never held long.
    static let discoveryBatch = 20_000

    package func discoverDeliveries(_ route: DeliveryRoute, nowMs: Int64) throws -> (added: Int, more: Bool) {
        try queue.write { db in
            let position = try SQLiteSQL.rows(db, ExportCursorsSQL.select(consumer: route.consumer, table: .postbacks))
                .first?.string(0)
            let after = try Self.exportPosition(position.map(ExportCursor.init))
            let last = try Self.lastPostbackID(db)
            // At most a batch of rows: ids are dense enough that this bounds the work.
            let batchEnd = try Int64.fetchOne(
                db,
                sql: "SELECT id FROM postbacks WHERE id > ? ORDER BY id LIMIT 1 OFFSET ?",
                arguments: [after, Self.discoveryBatch - 1]
            )
            let bound = min(last, batchEnd ?? last)
            guard bound > after else { return (0, false) }
            var sql = """
                INSERT INTO deliveries (destination, postback_id, state, attempts, discovered_ms, next_attempt_ms)
                SELECT ?, id, 'pending', 0, ?, ? FROM postbacks WHERE id > ? AND id <= ?
                """
            var arguments: StatementArguments = [route.destination, nowMs, nowMs, after, bound]
            func restrict<Value: DatabaseValueConvertible>(_ column: String, _ values: [Value]?) {
                guard let values else { return }
                sql +=
                    " AND \(column) IN (\(values.isEmpty ? "NULL" : Array(repeating: "?", count: values.count).joined(separator: ",")))"
                arguments += StatementArguments(values)
            }
            restrict("app_id", route.appIDs)
            restrict("ad_network_id", route.adNetworkIDs)
            restrict("kind", route.kinds)
            restrict("key_space", route.keySpaces)
            sql += " AND " + AppsSQL.claimed + " ON CONFLICT DO NOTHING"
            try db.execute(sql: sql, arguments: arguments)
            let added = db.changesCount
            try SQLiteSQL.execute(
                db,
                ExportCursorsSQL.save(ExportCursor("sqlite:\(bound)"), consumer: route.consumer, table: .postbacks)
            )
            return (added, bound < last)
        }
    }

    package func claimDeliveries(
        destination: String,
        limit: Int,
        nowMs: Int64,
        leaseUntilMs: Int64,
        holder: String
    ) throws
        -> [ClaimedDelivery]
    {
        let columns = ExportTable.postbacks.columns
        // A claim lost in a power cut only lets its deliveries be claimed again: committed
        // without a flush to disk (the next flushed commit, an outcome's, flushes it too).
        return try queue.inDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
            var claimed: [ClaimedDelivery] = []
            try db.inTransaction(.immediate) {
                claimed = try Self.claim(db, destination, limit, nowMs, leaseUntilMs, holder, columns)
                return .commit
            }
            return claimed
        }
    }

    private static func claim(
        _ db: Database,
        _ destination: String,
        _ limit: Int,
        _ nowMs: Int64,
        _ leaseUntilMs: Int64,
        _ holder: String,
        _ columns: [ExportColumn]
    ) throws -> [ClaimedDelivery] {
        var claimed: [ClaimedDelivery] = []
        let rows = try Row.fetchAll(
            db,
            sql: """
                UPDATE deliveries SET leased_by = ?, lease_until_ms = ?
                WHERE destination = ? AND postback_id IN (
                    SELECT postback_id FROM deliveries
                    WHERE destination = ? AND state = 'pending' AND next_attempt_ms <= ? AND lease_until_ms <= ?
                    ORDER BY next_attempt_ms LIMIT ?)
                RETURNING postback_id, attempts, first_attempt_ms
                """,
            arguments: [holder, leaseUntilMs, destination, destination, nowMs, nowMs, limit]
        )
        for row in rows {
            claimed.append(
                ClaimedDelivery(postbackID: row[0], attempts: row[1], firstAttemptMs: row[2], row: nil)
            )
        }
        guard !claimed.isEmpty else { return [] }
        var position: [Int64: Int] = [:]
        for (index, delivery) in claimed.enumerated() { position[delivery.postbackID] = index }
        let stored = try Row.fetchCursor(
            db,
            sql: """
                SELECT \(columns.map(\.name).joined(separator: ", ")) FROM postbacks
                WHERE id IN (\(claimed.map { String($0.postbackID) }.joined(separator: ",")))
                """
        )
        while let row = try stored.next() {
            let exported = Self.exportRow(row, columns)
            if case .integer(let id)? = exported.values.first, let index = position[id] {
                claimed[index].row = exported
            }
        }
        return claimed
    }
}
