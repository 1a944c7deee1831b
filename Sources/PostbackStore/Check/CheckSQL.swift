/// The statements `check` runs on both engines, with the engine's expression for a postback's
/// UTC day received.
enum CheckSQL {
    /// The tables of sums whose `postbacks` per day equal `aggregate_daily`'s.
    static let summingTables =
        ["aggregate_daily_totals"] + DashboardTable.all.filter { $0.basis == .received }.map(\.name)

    /// Rows `(day, aggregate_daily's sum, each summing table's sum…, stored)`, one per day with
    /// `aggregate_daily` rows. `day` is the engine's expression for a postback's day received;
    /// `text` turns a `date` column into `YYYY-MM-DD`.
    static func aggregatedDays(day: String, text: (String) -> String) -> String {
        let sums = summingTables.enumerated().map { index, table in
            "s\(index) AS (SELECT date AS day, CAST(SUM(postbacks) AS BIGINT) AS n FROM \(table) GROUP BY date)"
        }
        let columns = summingTables.indices.map { "COALESCE(s\($0).n, 0)" }
        let joins = summingTables.indices.map { "LEFT JOIN s\($0) ON s\($0).day = a.day" }
        return """
            WITH a AS (SELECT date AS day, CAST(SUM(postbacks) AS BIGINT) AS n FROM aggregate_daily GROUP BY date),
            \(sums.joined(separator: ",\n")),
            p AS (SELECT \(day) AS day, COUNT(*) AS n FROM postbacks GROUP BY 1)
            SELECT \(text("a.day")), a.n, \(columns.joined(separator: ", ")), COALESCE(p.n, 0)
            FROM a \(joins.joined(separator: " ")) LEFT JOIN p ON p.day = a.day
            ORDER BY a.day
            """
    }

    /// Rows `(table, row id, problem)` for references to nothing.
    static func danglingReferences(limit: Int) -> String {
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

    /// Rows `(id, started_at, inputs)`; `time` and `json` turn those columns into text.
    package static func unfinishedRuns(time: (String) -> String, json: (String) -> String) -> String {
        "SELECT id, \(time("started_at")), \(json("inputs")) FROM ingest_runs WHERE status = 'running' ORDER BY id"
    }

    /// The columns `check` reads of `table`, above `?`/`$1` and limited.
    static func rows(_ table: CheckedTable) -> String {
        switch table {
        case .postbacks:
            "id, kind, key_space, ad_network_id, transaction_id, postback_sequence_index, dedup_key, raw, raw_sha256"
        case .sightings, .quarantine:
            "id, raw, raw_sha256"
        }
    }
}
