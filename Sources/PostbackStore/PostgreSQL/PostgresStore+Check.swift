import PostbackKit
import PostgresNIO

extension PostgresStore {
    /// `amcheck`'s `bt_index_check` on each B-tree index of postbackd's schema, where the
    /// extension is installed and this user may run it; otherwise skipped, saying why.
    /// PostgreSQL has no check of its own a user without superuser rights can run on tables.
    package func checkEngine(quick: Bool) async throws -> EngineCheck {
        let name = "amcheck bt_index_check"
        return try await transaction("check the indexes", isolation: " READ ONLY") { connection in
            let installed = try await connection.value(
                "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'amcheck')",
                as: Bool.self,
                logger: logger
            )
            guard installed == true else {
                return EngineCheck(
                    name: name,
                    outcome: .skipped,
                    messages: [
                        "the amcheck extension is not installed in this database (a superuser can run CREATE EXTENSION amcheck and grant EXECUTE ON FUNCTION bt_index_check(regclass) to this user)"
                    ]
                )
            }
            var indexes: [String] = []
            for try await index in try await connection.send(
                """
                SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                JOIN pg_class t ON t.oid = i.indrelid JOIN pg_am am ON am.oid = c.relam
                WHERE am.amname = 'btree' AND t.relnamespace = current_schema()::regnamespace ORDER BY 1
                """,
                logger: logger
            ).decode(String.self) {
                indexes.append(index)
            }
            var problems: [String] = []
            for index in indexes {
                try await connection.send("SAVEPOINT index_check", logger: logger)
                do {
                    try await connection.send(
                        PostgresQuery(unsafeSQL: "SELECT bt_index_check('\(index)'::regclass)::text"),
                        logger: logger
                    )
                    try await connection.send("RELEASE SAVEPOINT index_check", logger: logger)
                } catch let error as PSQLError {
                    try await connection.send("ROLLBACK TO SAVEPOINT index_check", logger: logger)
                    if error.serverInfo?[.sqlState] == "42501" {
                        return EngineCheck(
                            name: name,
                            outcome: .skipped,
                            messages: [
                                "this user may not run bt_index_check (\(describePostgresError(error))); a superuser can GRANT EXECUTE ON FUNCTION bt_index_check(regclass) to it"
                            ]
                        )
                    }
                    problems.append("index \(index): \(describePostgresError(error))")
                }
            }
            return EngineCheck(name: name, outcome: problems.isEmpty ? .sound : .problems, messages: problems)
        }
    }

    package func checkRowCounts() async throws -> [CheckedTable: Int] {
        try await transaction("count the rows", isolation: " READ ONLY") { connection in
            var counts: [CheckedTable: Int] = [:]
            for table in CheckedTable.allCases {
                let count = try await connection.value(
                    PostgresQuery(unsafeSQL: "SELECT COALESCE(MAX(id), 0)::bigint FROM \(table.rawValue)"),
                    as: Int64.self,
                    logger: logger
                )
                counts[table] = count.map { Int($0) }
            }
            return counts
        }
    }

    package func checkRows(_ table: CheckedTable, after: Int64, limit: Int) async throws -> [CheckedRow] {
        try await transaction("read the \(table.rawValue)", isolation: " READ ONLY", oneStatement: true) { connection in
            var query = PostgresQuery(
                unsafeSQL: "SELECT \(CheckSQL.rows(table)) FROM \(table.rawValue) WHERE id > $1 ORDER BY id LIMIT $2"
            )
            query.binds.append(after)
            query.binds.append(Int64(limit))
            var checked: [CheckedRow] = []
            checked.reserveCapacity(limit)
            func bytes(_ buffer: ByteBuffer?) -> [UInt8]? { buffer.map { Array($0.readableBytesView) } }
            let rows = try await connection.send(query, logger: logger)
            switch table {
            case .postbacks:
                for try await row in rows.decode(
                    (Int64, String, String, String, String, Int64, ByteBuffer?, ByteBuffer?, ByteBuffer?).self
                ) {
                    checked.append(
                        CheckedRow(
                            id: row.0,
                            key: (row.1, row.2, row.3, row.4, row.5),
                            dedupKey: bytes(row.6),
                            raw: bytes(row.7),
                            rawSHA256: bytes(row.8) ?? []
                        )
                    )
                }
            case .sightings, .quarantine:
                for try await row in rows.decode((Int64, ByteBuffer?, ByteBuffer?).self) {
                    checked.append(CheckedRow(id: row.0, raw: bytes(row.1), rawSHA256: bytes(row.2) ?? []))
                }
            }
            return checked
        }
    }

    package func checkReferences(limit: Int) async throws -> [CheckFinding] {
        try await transaction("check the references", isolation: " READ ONLY", oneStatement: true) { connection in
            var findings: [CheckFinding] = []
            for try await row in try await connection.send(
                PostgresQuery(unsafeSQL: CheckSQL.danglingReferences(limit: limit)),
                logger: logger
            ).decode((String, Int64, String).self) {
                findings.append(CheckFinding(table: row.0, rowID: row.1, problem: row.2))
            }
            return findings
        }
    }

    package func checkAggregatedDays() async throws -> [AggregatedDayCounts] {
        let tables = CheckSQL.summingTables
        return try await transaction(
            "sum the aggregated days",
            isolation: " ISOLATION LEVEL REPEATABLE READ READ ONLY"
        ) { connection in
            var days: [AggregatedDayCounts] = []
            let sql = CheckSQL.aggregatedDays(
                day: "(received_at AT TIME ZONE 'UTC')::date",
                text: { "to_char(\($0), 'YYYY-MM-DD')" }
            )
            for try await row in try await connection.send(PostgresQuery(unsafeSQL: sql), logger: logger) {
                let cells = row.makeRandomAccess()
                var sums: [(table: String, sum: Int64)] = []
                for (index, table) in tables.enumerated() {
                    sums.append((table, try cells[2 + index].decode(Int64.self)))
                }
                days.append(
                    AggregatedDayCounts(
                        day: try cells[0].decode(String.self),
                        aggregated: try cells[1].decode(Int64.self),
                        sums: sums,
                        stored: try cells[2 + tables.count].decode(Int64.self)
                    )
                )
            }
            return days
        }
    }

    package func unfinishedRuns() async throws -> [UnfinishedRun] {
        try await transaction("read the run log", isolation: " READ ONLY", oneStatement: true) { connection in
            var runs: [UnfinishedRun] = []
            for try await row in try await connection.send(
                PostgresQuery(unsafeSQL: CheckSQL.unfinishedRuns(time: isoText, json: { "\($0)::text" })),
                logger: logger
            ).decode((Int64, String, String).self) {
                runs.append(UnfinishedRun(id: row.0, startedAt: row.1, inputs: row.2))
            }
            return runs
        }
    }
}
