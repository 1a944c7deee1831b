import Foundation
import GRDB

/// The contents of a postbackd database as text rows, for comparing two databases.
package enum DatabaseDump {
    /// Every row of the stored-data tables, ordered by id, leaving out `run_id` (the run log)
    /// and, unless `includingTimes`, the `received_at` columns.
    package static func rows(of path: String, includingTimes: Bool = true) throws -> [String: [String]] {
        let queue = try DatabaseQueue(path: path)
        return try queue.read { db in
            var tables: [String: [String]] = [:]
            for table in ["postbacks", "sightings", "conflicts", "quarantine"] {
                let columns = try db.columns(in: table).map(\.name).filter {
                    $0 != "run_id" && (includingTimes || ($0 != "received_at" && $0 != "received_at_source"))
                }
                let order = table == "conflicts" ? "sighting_id" : "id"
                let sql = "SELECT \(columns.joined(separator: ", ")) FROM \(table) ORDER BY \(order)"
                tables[table] = try Row.fetchAll(db, sql: sql).map { row in
                    columns.map { column in
                        let value: DatabaseValue = row[column]
                        switch value.storage {
                        case .blob(let data): return "x'" + data.map { String(format: "%02x", $0) }.joined() + "'"
                        default: return value.description
                        }
                    }.joined(separator: "|")
                }
            }
            return tables
        }
    }

    /// `SELECT COUNT(*) FROM table`.
    package static func count(_ table: String, in path: String, where condition: String = "1") throws -> Int {
        try DatabaseQueue(path: path).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table) WHERE \(condition)") ?? 0
        }
    }

    /// The values of one column, in id order.
    package static func values<Value: DatabaseValueConvertible>(
        _ sql: String,
        in path: String,
        as _: Value.Type = Value.self
    ) throws -> [Value?] {
        try DatabaseQueue(path: path).read { db in
            try Row.fetchAll(db, sql: sql).map { $0[0] as Value? }
        }
    }
}
