import Logging
import NIOCore
import PostbackKit
import PostgresNIO

/// `postbackd export` on PostgreSQL. Row ids are drawn at insert and transactions commit in
/// another order, so the cursor is a transaction id (`postgres:XID`): each row records the
/// transaction that stored it (`stored_xid`), and an export reads, in one snapshot, the rows
/// of transactions older than the snapshot's oldest one of this database still running.
/// Those have all ended, so no row can later appear below the cursor; rows of transactions
/// still running then are read by the next export.
extension PostgresStore {
    package func export(_ selection: ExportSelection, _ row: (ExportRow) throws -> Void) async throws -> ExportCursor {
        let (after, afterID) = try Self.exportPagePosition(selection.after)
        let table = selection.table
        let columns = table.columns
        let logger = self.logger
        let select = Self.exportSelectList(columns)
        // Transaction ids are the cluster's: a transaction running in another database (which
        // can never write these tables) would hold the bound back. Those running now are
        // noted before the snapshot is taken, so none of them can be one of ours.
        let foreign = try await transaction("list other databases' transactions", retryingFor: 0) { connection in
            try await Self.foreignTransactions(connection, logger: logger)
        }
        // Not retried: rows already handed to `row` would be handed again.
        return try await transaction(
            "export \(table.rawValue)",
            isolation: " ISOLATION LEVEL REPEATABLE READ READ ONLY",
            retryingFor: 0
        ) { connection in
            let bound = try await Self.snapshotBound(connection, after: after, excluding: foreign, logger: logger)
            // After (XID, ID): a page's cursor is its last row's; an export's, (bound, 0).
            var sql = """
                SELECT stored_xid::text, \(select) FROM \(table.rawValue)
                WHERE stored_xid >= '\(after)'::xid8 AND stored_xid < '\(bound)'::xid8
                    AND (stored_xid > '\(after)'::xid8 OR id > \(afterID))
                """
            if let days = selection.days {
                sql += """
                     AND received_at >= '\(days.lowerBound.start.iso8601)'::timestamptz
                     AND received_at < '\(days.upperBound.next.start.iso8601)'::timestamptz
                    """
            }
            sql += selection.appCondition + " ORDER BY stored_xid, id"
            if let limit = selection.limit { sql += " LIMIT \(limit)" }
            let rows = try await connection.send(PostgresQuery(unsafeSQL: sql), logger: logger)
            var count = 0
            var last = (xid: after, id: afterID)
            for try await stored in rows {
                let exported = try Self.exportRow(stored, columns, from: 1)
                if case .integer(let id) = exported.values.first {
                    last = (try stored.makeRandomAccess()[0].decode(String.self), id)
                }
                count += 1
                try row(exported)
            }
            if let limit = selection.limit, count == limit { return ExportCursor("postgres:\(last.xid):\(last.id)") }
            // No further than the cursor given (a standby that has not replayed as far as the
            // server that made it): the same position again, its row id included.
            if bound == after, let given = selection.after { return given }
            return ExportCursor("postgres:\(bound)")
        }
    }

    /// Transaction ids are the cluster's: a transaction running in another database (which can
    /// never write these tables) would hold the bound back. Those running now are listed before
    /// the snapshot is taken, so none of them can be one of ours.
    static func foreignTransactions(_ connection: PostgresConnection, logger: Logger) async throws -> [String] {
        var ids: [String] = []
        for try await id in try await connection.send(
            """
            SELECT backend_xid::text FROM pg_stat_activity
            WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database()
            """,
            logger: logger
        ).decode(String.self) {
            if id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { ids.append(id) }
        }
        return ids
    }

    /// The oldest transaction of this database still running in the current snapshot (or,
    /// with none, the snapshot's end): every row stored by a transaction below it is final.
    /// Never below `after`.
    ///
    /// On a standby the snapshot lists no running transaction (PostgreSQL keeps those replayed
    /// as running in its subtransaction array, which `pg_current_snapshot()` leaves out): the
    /// bound is then the snapshot's `xmin`, the oldest transaction of the cluster still running
    /// on the primary as far as replayed, another database's too (which only delays rows).
    /// Its end would skip, for good, the rows of a transaction still running below it.
    static func snapshotBound(
        _ connection: PostgresConnection,
        after: String,
        excluding foreign: [String],
        logger: Logger
    )
        async throws -> String
    {
        let excluded =
            foreign.isEmpty ? "" : " WHERE (x::text::numeric % 4294967296) NOT IN (\(foreign.joined(separator: ",")))"
        var bound = after
        for try await text in try await connection.send(
            PostgresQuery(
                unsafeSQL: """
                    WITH s AS (SELECT pg_current_snapshot() AS snapshot)
                    SELECT CASE WHEN pg_is_in_recovery() THEN (SELECT pg_snapshot_xmin(snapshot)::text FROM s)
                    ELSE coalesce(
                        (SELECT min(x)::text FROM s, pg_snapshot_xip(s.snapshot) AS x\(excluded)),
                        (SELECT pg_snapshot_xmax(snapshot)::text FROM s))
                    END
                    """
            ),
            logger: logger
        ).decode(String.self) {
            bound = text
        }
        guard let found = UInt64(bound), let given = UInt64(after), found > given else { return after }
        return bound
    }

    /// The select list that reads `columns` for ``exportRow(_:_:)``.
    static func exportSelectList(_ columns: [ExportColumn], prefix: String = "") -> String {
        columns.map { column -> String in
            let name = prefix + column.name
            return switch column.type {
            case .integer: "\(name)::bigint"
            case .text: name
            case .bool: name
            case .time: SQLQuery.instantText(name).rendered(for: .postgres).sql
            case .day: SQLQuery.dayText(name).rendered(for: .postgres).sql
            case .rawText: name
            case .hex: "encode(\(name), 'hex')"
            }
        }.joined(separator: ", ")
    }

    /// A row selected with ``exportSelectList(_:prefix:)``, its columns from `first` on.
    static func exportRow(_ stored: PostgresRow, _ columns: [ExportColumn], from first: Int = 0) throws -> ExportRow {
        let cells = stored.makeRandomAccess()
        var values: [ExportValue] = []
        values.reserveCapacity(columns.count)
        var raw: [UInt8] = []
        for (index, column) in columns.enumerated() {
            let cell = cells[first + index]
            switch column.type {
            case .integer:
                values.append(try cell.decode(Int64?.self).map { .integer($0) } ?? .null)
            case .text, .time, .day:
                values.append(try cell.decode(String?.self).map { .text($0) } ?? .null)
            case .bool:
                values.append(try cell.decode(Bool?.self).map { .bool($0) } ?? .null)
            case .rawText:
                let buffer = try cell.decode(ByteBuffer?.self)
                raw = buffer.map { Array($0.readableBytesView) } ?? []
                values.append(buffer == nil ? .null : .text(String(decoding: raw, as: UTF8.self)))
            case .hex:
                values.append(try cell.decode(String?.self).map { .text($0) } ?? .null)
            }
        }
        return ExportRow(values: values, raw: raw)
    }

    /// The transaction id and row id in `cursor` (`postgres:XID`, or a page's `postgres:XID:ID`),
    /// or (0, 0).
    static func exportPagePosition(_ cursor: ExportCursor?) throws -> (xid: String, id: Int64) {
        guard let cursor else { return ("0", 0) }
        let parts = cursor.position.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 3, parts[0] == "postgres", let id = Int64(parts[2]), id >= 0 {
            return (try exportPosition(ExportCursor("postgres:" + parts[1])), id)
        }
        return (try exportPosition(cursor), 0)
    }

    /// The transaction id in `cursor` (digits only), or 0.
    static func exportPosition(_ cursor: ExportCursor?) throws -> String {
        guard let cursor else { return "0" }
        let digits = cursor.position.dropFirst("postgres:".count)
        guard cursor.position.hasPrefix("postgres:"), !digits.isEmpty,
            digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else {
            throw StoreError(
                .otherEngine,
                "the cursor \(cursor) was not made by a PostgreSQL store; export without --consumer, or with a new one"
            )
        }
        return String(digits)
    }
}
