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

    /// `check --quick`'s window: from `since` (by default the day before the newest day any
    /// row was received), each table's newest day received and the least id of its rows
    /// received from `since` on. Every read goes through the tables' indexes by day received,
    /// so it costs the window's rows, not the store's.
    package func checkWindow(since: UTCDay?) async throws -> CheckWindow {
        try await withSQL("find the recent rows", .read) { sql in
            var newest: [CheckedTable: UTCDay] = [:]
            for table in CheckedTable.allCases {
                newest[table] = try await sql.row(
                    "SELECT \(SQLQuery.dayText("MAX(\(SQLQuery.receivedDay))" as SQLQuery)) FROM \(raw: table.rawValue)"
                )?.optionalString(0).flatMap(UTCDay.init)
            }
            let start =
                since ?? newest.values.max().map { UTCDay(daysSinceEpoch: $0.daysSinceEpoch - 1) }
            var window = CheckWindow(since: start, newest: newest)
            guard let start else { return window }
            for table in CheckedTable.allCases {
                // By the index on the day received: a fence keeps the planner from looking for
                // the least id in id order instead, a walk of the table.
                window.first[table] = try await sql.row(
                    """
                    SELECT MIN(id) FROM (
                        SELECT id FROM \(raw: table.rawValue) WHERE \(SQLQuery.receivedDay) >= \(start)
                        \(sqlite: "LIMIT -1 OFFSET 0", postgres: "OFFSET 0")
                    ) AS recent
                    """
                )?.optionalInt64(0)
            }
            return window
        }
    }

    /// The rows of `table` after the id `after`, in id order: of every day, or of the day
    /// received `day` alone (by its index).
    package func checkRows(
        _ table: CheckedTable,
        after: Int64,
        limit: Int,
        day: UTCDay? = nil
    ) async throws -> [CheckedRow] {
        let ofDay: SQLQuery = day.map { "AND \(SQLQuery.receivedDay) = \($0)" } ?? ""
        return try await withSQL("read the \(table.rawValue)", .statement) { sql in
            var rows: [CheckedRow] = []
            rows.reserveCapacity(limit)
            try await sql.forEachRow(
                """
                SELECT \(raw: CheckSQL.rows(table)) FROM \(raw: table.rawValue)
                WHERE id > \(after) \(ofDay) ORDER BY id LIMIT \(limit)
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

    package func checkReferences(limit: Int, window: CheckWindow? = nil) async throws -> [CheckFinding] {
        try await withSQL("check the references", .statement) { sql in
            try await sql.rows(CheckSQL.danglingReferences(limit: limit, window: window)).map { row in
                CheckFinding(table: try row.string(0), rowID: try row.int64(1), problem: try row.string(2))
            }
        }
    }

    package func checkAggregatedDays(since: UTCDay? = nil) async throws -> [AggregatedDayCounts] {
        let tables = CheckSQL.summingTables
        return try await withSQL("sum the aggregated days", .statement) { sql in
            try await sql.rows(CheckSQL.aggregatedDays(since: since)).map { row in
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
    /// `aggregate_daily` rows (from `since` on, when given: each table read by its index on the
    /// day). Stored counts the test and development postbacks `prune` removed (their keys kept),
    /// which the day's aggregate counted.
    static func aggregatedDays(since: UTCDay?) -> SQLQuery {
        let sums: [SQLQuery] = summingTables.enumerated().map { index, table in
            """
            s\(raw: String(index)) AS (SELECT date AS day, CAST(SUM(postbacks) AS BIGINT) AS n FROM \(raw: table)
                WHERE \(AggregateSQL.within("date", (since, nil))) GROUP BY date)
            """
        }
        let columns = summingTables.indices.map { "COALESCE(s\($0).n, 0)" }
        let joins = summingTables.indices.map { "LEFT JOIN s\($0) ON s\($0).day = a.day" }
        let firstSeen: SQLQuery =
            "\(sqlite: "substr(first_seen, 1, 10)", postgres: "((first_seen AT TIME ZONE 'UTC')::date)")"
        return """
            WITH a AS (
                SELECT date AS day, CAST(SUM(postbacks) AS BIGINT) AS n FROM aggregate_daily
                WHERE \(AggregateSQL.within("date", (since, nil))) GROUP BY date
            ),
            \(list: sums, separator: ",\n"),
            p AS (
                SELECT day, SUM(n) AS n FROM (
                    SELECT \(SQLQuery.receivedDay) AS day, COUNT(*) AS n FROM postbacks
                    WHERE \(raw: AppsSQL.claimed) AND \(AggregateSQL.within(SQLQuery.receivedDay, (since, nil))) GROUP BY 1
                    UNION ALL
                    SELECT \(firstSeen), COUNT(*)
                    FROM pruned_keys WHERE kind IN ('test', 'development') AND \(raw: AppsSQL.claimed)
                        AND \(AggregateSQL.within(firstSeen, (since, nil)))
                    GROUP BY 1
                ) AS held GROUP BY day
            )
            SELECT \(SQLQuery.dayText("a.day")), a.n, \(raw: columns.joined(separator: ", ")), COALESCE(p.n, 0)
            FROM a \(raw: joins.joined(separator: " ")) LEFT JOIN p ON p.day = a.day
            ORDER BY a.day
            """
    }

    /// Rows `(table, row id, problem)` for references to nothing: of every row, or of
    /// `window`'s: its sightings (by their day received), and the conflicts and deliveries
    /// after its first sighting and postback. Deliveries are keyed by destination, then
    /// postback: their few destinations are walked one by one (each the least after the one
    /// before), and each destination's deliveries read from that postback on.
    static func danglingReferences(limit: Int, window: CheckWindow?) -> SQLQuery {
        let sightings: SQLQuery = window?.since.map { "\(SQLQuery.receivedDay) >= \($0)" } ?? "TRUE"
        let firstSighting = window.map { $0.first[.sightings] ?? Int64.max } ?? 0
        let firstPostback = window.map { $0.first[.postbacks] ?? Int64.max } ?? 0
        return """
            WITH RECURSIVE destinations (name) AS (
                SELECT MIN(destination) FROM deliveries
                UNION ALL
                SELECT (SELECT MIN(destination) FROM deliveries WHERE destination > destinations.name)
                FROM destinations WHERE destinations.name IS NOT NULL
            )
            SELECT 'sightings', s.id, 'postback_id ' || s.postback_id || ' is not a stored postback'
            FROM sightings s WHERE \(sightings) AND NOT EXISTS (SELECT 1 FROM postbacks p WHERE p.id = s.postback_id)
            UNION ALL
            SELECT 'conflicts', c.sighting_id, 'postback_id ' || c.postback_id || ' is not a stored postback'
            FROM conflicts c WHERE c.sighting_id >= \(firstSighting)
                AND NOT EXISTS (SELECT 1 FROM postbacks p WHERE p.id = c.postback_id)
            UNION ALL
            SELECT 'conflicts', c.sighting_id, 'sighting_id ' || c.sighting_id || ' is not a stored sighting'
            FROM conflicts c WHERE c.sighting_id >= \(firstSighting)
                AND NOT EXISTS (SELECT 1 FROM sightings s WHERE s.id = c.sighting_id)
            UNION ALL
            SELECT 'deliveries', d.postback_id, 'the delivery to ' || d.destination || ' is of postback_id ' || d.postback_id || ', not a stored postback'
            FROM destinations JOIN deliveries d ON d.destination = destinations.name AND d.postback_id >= \(firstPostback)
            WHERE NOT EXISTS (SELECT 1 FROM postbacks p WHERE p.id = d.postback_id)
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
