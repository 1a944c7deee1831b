import PostbackKit

/// `postbackd check`'s reads on both engines, each statement written once. The engine's own
/// check of pages and indexes (`checkEngine`) stays each engine's: SQLite's `integrity_check`
/// and PostgreSQL's `amcheck` share nothing.
extension CheckableStore {
    package func checkRowCounts() async throws -> [CheckedTable: Int] {
        try await withSQL("count the rows", .read) { sql in
            var counts: [CheckedTable: Int] = [:]
            for table in CheckedTable.allCases {
                // The largest id: a count without reading the table.
                let row = try await sql.row("SELECT COALESCE(MAX(id), 0) FROM \(raw: table.rawValue)")
                counts[table] = try row?.int(0) ?? 0
            }
            return counts
        }
    }

    package func checkRows(_ table: CheckedTable, after: Int64, limit: Int) async throws -> [CheckedRow] {
        try await withSQL("read the \(table.rawValue)", .statement) { sql in
            var rows: [CheckedRow] = []
            rows.reserveCapacity(limit)
            try await sql.forEachRow(
                """
                SELECT \(raw: CheckSQL.rows(table)) FROM \(raw: table.rawValue)
                WHERE id > \(after) ORDER BY id LIMIT \(limit)
                """
            ) { row in
                let checked =
                    switch table {
                    case .postbacks:
                        CheckedRow(
                            id: try row.int64(0),
                            key: (
                                try row.string(1), try row.string(2), try row.string(3), try row.string(4),
                                try row.int64(5)
                            ),
                            dedupKey: try row.optionalBytes(6),
                            raw: try row.optionalBytes(7),
                            rawSHA256: try row.optionalBytes(8) ?? []
                        )
                    case .sightings, .quarantine:
                        CheckedRow(
                            id: try row.int64(0),
                            raw: try row.optionalBytes(1),
                            rawSHA256: try row.optionalBytes(2) ?? []
                        )
                    }
                rows.append(checked)
            }
            return rows
        }
    }

    package func checkReferences(limit: Int) async throws -> [CheckFinding] {
        try await withSQL("check the references", .statement) { sql in
            try await sql.rows(CheckSQL.danglingReferences(limit: limit)).map { row in
                CheckFinding(table: try row.string(0), rowID: try row.int64(1), problem: try row.string(2))
            }
        }
    }

    package func checkAggregatedDays() async throws -> [AggregatedDayCounts] {
        let tables = CheckSQL.summingTables
        return try await withSQL("sum the aggregated days", .statement) { sql in
            try await sql.rows(CheckSQL.aggregatedDays).map { row in
                AggregatedDayCounts(
                    day: try row.string(0),
                    aggregated: try row.int64(1),
                    sums: try tables.enumerated().map { index, table in (table, try row.int64(2 + index)) },
                    stored: try row.int64(2 + tables.count)
                )
            }
        }
    }

    package func unfinishedRuns() async throws -> [UnfinishedRun] {
        try await withSQL("read the run log", .statement) { sql in
            try await sql.rows(
                """
                SELECT id, \(SQLQuery.instantText("started_at")), \(SQLQuery.jsonText("inputs"))
                FROM ingest_runs WHERE status = 'running' ORDER BY id
                """
            ).map { row in
                UnfinishedRun(id: try row.int64(0), startedAt: try row.string(1), inputs: try row.string(2))
            }
        }
    }
}

/// The statements `check` runs.
enum CheckSQL {
    /// The tables of sums whose `postbacks` per day equal `aggregate_daily`'s.
    static let summingTables =
        ["aggregate_daily_totals"] + DashboardTable.all.filter { $0.basis == .received }.map(\.name)

    /// Rows `(day, aggregate_daily's sum, each summing table's sum…, stored)`, one per day with
    /// `aggregate_daily` rows. Stored counts the test and development postbacks `prune` removed
    /// (their keys kept), which the day's aggregate counted.
    static var aggregatedDays: SQLQuery {
        let sums = summingTables.enumerated().map { index, table in
            "s\(index) AS (SELECT date AS day, CAST(SUM(postbacks) AS BIGINT) AS n FROM \(table) GROUP BY date)"
        }
        let columns = summingTables.indices.map { "COALESCE(s\($0).n, 0)" }
        let joins = summingTables.indices.map { "LEFT JOIN s\($0) ON s\($0).day = a.day" }
        return """
            WITH a AS (SELECT date AS day, CAST(SUM(postbacks) AS BIGINT) AS n FROM aggregate_daily GROUP BY date),
            \(raw: sums.joined(separator: ",\n")),
            p AS (
                SELECT day, SUM(n) AS n FROM (
                    SELECT \(SQLQuery.receivedDay) AS day, COUNT(*) AS n FROM postbacks WHERE \(raw: AppsSQL.claimed) GROUP BY 1
                    UNION ALL
                    SELECT \(sqlite: "substr(first_seen, 1, 10)", postgres: "((first_seen AT TIME ZONE 'UTC')::date)"), COUNT(*)
                    FROM pruned_keys WHERE kind IN ('test', 'development') AND \(raw: AppsSQL.claimed) GROUP BY 1
                ) AS held GROUP BY day
            )
            SELECT \(SQLQuery.dayText("a.day")), a.n, \(raw: columns.joined(separator: ", ")), COALESCE(p.n, 0)
            FROM a \(raw: joins.joined(separator: " ")) LEFT JOIN p ON p.day = a.day
            ORDER BY a.day
            """
    }

    /// Rows `(table, row id, problem)` for references to nothing.
    static func danglingReferences(limit: Int) -> SQLQuery {
        """
        SELECT 'sightings', s.id, 'postback_id ' || s.postback_id || ' is not a stored postback'
        FROM sightings s WHERE NOT EXISTS (SELECT 1 FROM postbacks p WHERE p.id = s.postback_id)
        UNION ALL
        SELECT 'conflicts', c.sighting_id, 'postback_id ' || c.postback_id || ' is not a stored postback'
        FROM conflicts c WHERE NOT EXISTS (SELECT 1 FROM postbacks p WHERE p.id = c.postback_id)
        UNION ALL
        SELECT 'conflicts', c.sighting_id, 'sighting_id ' || c.sighting_id || ' is not a stored sighting'
        FROM conflicts c WHERE NOT EXISTS (SELECT 1 FROM sightings s WHERE s.id = c.sighting_id)
        UNION ALL
        SELECT 'deliveries', d.postback_id, 'the delivery to ' || d.destination || ' is of postback_id ' || d.postback_id || ', not a stored postback'
        FROM deliveries d WHERE NOT EXISTS (SELECT 1 FROM postbacks p WHERE p.id = d.postback_id)
        LIMIT \(limit)
        """
    }

    /// The columns `check` reads of `table`.
    static func rows(_ table: CheckedTable) -> String {
        switch table {
        case .postbacks:
            "id, kind, key_space, ad_network_id, transaction_id, postback_sequence_index, dedup_key, raw, raw_sha256"
        case .sightings, .quarantine:
            "id, raw, raw_sha256"
        }
    }
}
