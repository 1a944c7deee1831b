import Foundation
import GRDB
import PostbackKit

extension SQLiteStore {
    package func checkEngine(quick: Bool) throws -> EngineCheck {
        let name = quick ? "quick_check" : "integrity_check"
        let messages = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA \(name)(100)") }
        if messages == ["ok"] { return EngineCheck(name: name, outcome: .sound, messages: []) }
        return EngineCheck(name: name, outcome: .problems, messages: messages)
    }

    package func checkRowCounts() throws -> [CheckedTable: Int] {
        try queue.read { db in
            var counts: [CheckedTable: Int] = [:]
            for table in CheckedTable.allCases {
                // The largest id: a count without reading the table.
                counts[table] = try Int.fetchOne(db, sql: "SELECT COALESCE(MAX(id), 0) FROM \(table.rawValue)") ?? 0
            }
            return counts
        }
    }

    package func checkRows(_ table: CheckedTable, after: Int64, limit: Int) throws -> [CheckedRow] {
        try queue.read { db in
            let rows = try Row.fetchCursor(
                db,
                sql: "SELECT \(CheckSQL.rows(table)) FROM \(table.rawValue) WHERE id > ? ORDER BY id LIMIT ?",
                arguments: [after, limit]
            )
            var checked: [CheckedRow] = []
            checked.reserveCapacity(limit)
            while let row = try rows.next() {
                switch table {
                case .postbacks:
                    checked.append(
                        CheckedRow(
                            id: row[0],
                            key: (row[1], row[2], row[3], row[4], row[5]),
                            dedupKey: (row[6] as Data?).map { [UInt8]($0) },
                            raw: (row[7] as Data?).map { [UInt8]($0) },
                            rawSHA256: [UInt8]((row[8] as Data?) ?? Data())
                        )
                    )
                case .sightings, .quarantine:
                    checked.append(
                        CheckedRow(
                            id: row[0],
                            raw: (row[1] as Data?).map { [UInt8]($0) },
                            rawSHA256: [UInt8]((row[2] as Data?) ?? Data())
                        )
                    )
                }
            }
            return checked
        }
    }

    package func checkReferences(limit: Int) throws -> [CheckFinding] {
        try queue.read { db in
            try Row.fetchAll(db, sql: CheckSQL.danglingReferences(limit: limit)).map { row in
                CheckFinding(table: row[0], rowID: row[1], problem: row[2])
            }
        }
    }

    package func checkAggregatedDays() throws -> [AggregatedDayCounts] {
        let tables = CheckSQL.summingTables
        return try queue.read { db in
            try Row.fetchAll(
                db,
                sql: CheckSQL.aggregatedDays(day: "substr(received_at, 1, 10)", text: { $0 })
            ).map { row in
                AggregatedDayCounts(
                    day: row[0],
                    aggregated: row[1],
                    sums: tables.enumerated().map { ($1, row[2 + $0]) },
                    stored: row[2 + tables.count]
                )
            }
        }
    }

    package func unfinishedRuns() throws -> [UnfinishedRun] {
        try queue.read { db in
            try Row.fetchAll(db, sql: CheckSQL.unfinishedRuns(time: { $0 }, json: { $0 })).map { row in
                UnfinishedRun(id: row[0], startedAt: row[1], inputs: row[2])
            }
        }
    }
}
