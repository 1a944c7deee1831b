import Foundation
import GRDB
import PostbackKit

/// `postbackd export` on SQLite: one writer commits row ids in order, so a cursor is the
/// highest id a snapshot held (`sqlite:ID`).
extension SQLiteStore {
    package func export(_ selection: ExportSelection, _ row: (ExportRow) throws -> Void) throws -> ExportCursor {
        let after = try Self.exportPosition(selection.after)
        let table = selection.table
        let columns = table.columns
        // One pass over the table: a large page cache would only hold pages never read again,
        // and make memory grow with the table up to its size.
        try queue.inDatabase { db in try db.execute(sql: "PRAGMA cache_size = -8192") }
        return try queue.read { db in
            // One read transaction: the snapshot the rows and the bound both come from.
            let bound = try Int64.fetchOne(db, sql: "SELECT coalesce(max(id), 0) FROM \(table.rawValue)") ?? 0
            var sql =
                "SELECT \(columns.map(\.name).joined(separator: ", ")) FROM \(table.rawValue) WHERE id > ? AND id <= ?"
            var arguments: StatementArguments = [after, bound]
            if let days = selection.days {
                sql += " AND received_at >= ? AND received_at < ?"
                arguments += [days.lowerBound.start.iso8601, days.upperBound.next.start.iso8601]
            }
            sql += selection.appCondition + " ORDER BY id"
            if let limit = selection.limit { sql += " LIMIT \(limit)" }
            let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            var count = 0
            var last = after
            while let stored = try rows.next() {
                let exported = Self.exportRow(stored, columns)
                if case .integer(let id) = exported.values.first { last = id }
                count += 1
                try row(exported)
            }
            // A full page ends at its last row; otherwise everything up to the bound was read.
            if let limit = selection.limit, count == limit { return ExportCursor("sqlite:\(last)") }
            return ExportCursor("sqlite:\(max(after, bound))")
        }
    }

    /// A row selected with `columns`' names, in order.
    static func exportRow(_ stored: Row, _ columns: [ExportColumn]) -> ExportRow {
        var values: [ExportValue] = []
        values.reserveCapacity(columns.count)
        var raw: [UInt8] = []
        for (index, column) in columns.enumerated() {
            let value = stored[index] as DatabaseValue
            if value.isNull {
                values.append(.null)
                continue
            }
            switch column.type {
            case .integer:
                values.append((Int64.fromDatabaseValue(value)).map { .integer($0) } ?? .null)
            case .text, .time, .day:
                values.append((String.fromDatabaseValue(value)).map { .text($0) } ?? .null)
            case .bool:
                values.append((Int64.fromDatabaseValue(value)).map { .bool($0 != 0) } ?? .null)
            case .rawText:
                raw = Data.fromDatabaseValue(value).map { Array($0) } ?? []
                values.append(.text(String(decoding: raw, as: UTF8.self)))
            case .hex:
                values.append((Data.fromDatabaseValue(value)).map { .text(hexString($0)) } ?? .null)
            }
        }
        return ExportRow(values: values, raw: raw)
    }

    static func exportPosition(_ cursor: ExportCursor?) throws -> Int64 {
        guard let cursor else { return 0 }
        guard cursor.position.hasPrefix("sqlite:"), let id = Int64(cursor.position.dropFirst("sqlite:".count)) else {
            throw StoreError(
                .otherEngine,
                "the cursor \(cursor) was not made by an SQLite store; export without --consumer, or with a new one"
            )
        }
        return id
    }
}
