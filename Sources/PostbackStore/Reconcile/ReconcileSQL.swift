import PostbackKit

/// The statements of a reconciliation, the same on both engines.
enum ReconcileSQL {
    /// The counts `reconcile_daily` stores as they are read, in its column order after the
    /// dimensions; then come `unmatched_copies` and `unmatched_forwards`.
    static var storedCounts: [(column: String, path: WritableKeyPath<ReconcileCounts, Int>)] {
        [
            ("copies", \.copies), ("forwarded_won", \.forwardedWon), ("forwarded_nonwon", \.forwardedNonwon),
            ("matched", \.matched), ("matched_identical", \.matchedIdentical), ("fine_higher", \.fineHigher),
            ("fine_lower", \.fineLower), ("coarse_higher", \.coarseHigher), ("coarse_lower", \.coarseLower),
            ("value_dropped", \.valueDropped), ("value_added", \.valueAdded), ("country_differs", \.countryDiffers),
            ("interaction_differs", \.interactionDiffers), ("impossible", \.impossible), ("early", \.early),
        ]
    }

    /// The count columns of both tables, in order: ``storedCounts``, then the unmatched postbacks.
    static let countColumns = storedCounts.map(\.column) + ["unmatched_copies", "unmatched_forwards"]

    /// `reconcile_daily`'s columns: the dimensions (as ``ReconcileDimension`` names them),
    /// ``countColumns``.
    static let columns = (ReconcileDimension.allCases.map(\.rawValue) + countColumns).joined(separator: ", ")

    /// `reconcile_daily_totals`'s columns.
    static let totalsColumns = (totalsDimensions.map(\.rawValue) + countColumns).joined(separator: ", ")

    /// The app and network filters, on columns of that name after `prefix`.
    static func filters(_ request: ReconcileRequest, prefix: String) -> [SQLQuery] {
        var filters: [SQLQuery] = []
        if !request.appIDs.isEmpty {
            filters.append("\(raw: prefix)app_id IN (\(list: request.appIDs.map { "\($0)" as SQLQuery }))")
        }
        if !request.adNetworkIDs.isEmpty {
            filters.append(
                "\(raw: prefix)ad_network_id IN (\(list: request.adNetworkIDs.map { "\($0)" as SQLQuery }))"
            )
        }
        return filters
    }

    /// `reconcile_daily` (or, by day, network and app alone, `reconcile_daily_totals`) summed by
    /// the request's dimensions and by whether the day is before the
    /// one the grace period ends on (1) or after it (0); that day itself is left out.
    ///
    /// Grouped by the columns themselves, and by that flag only without the day (with it, the flag
    /// is the day's): a sum by day and network then reads `reconcile_daily_totals` in its key's
    /// order and sorts nothing.
    static func summed(_ request: ReconcileRequest) -> SQLQuery {
        let cutoffDay = request.cutoff.day
        var filters: [SQLQuery] = request.judgesUnmatched ? ["date <> \(cutoffDay)"] : []
        if let from = request.from { filters.append("date >= \(from)") }
        if let to = request.to { filters.append("date <= \(to)") }
        filters += self.filters(request, prefix: "")
        let dimensions: [SQLQuery] = request.dimensions.map {
            $0 == .date ? SQLQuery.dayText("date") : SQLQuery(raw: $0.rawValue)
        }
        let missing: SQLQuery = "CASE WHEN date < \(cutoffDay) THEN 1 ELSE 0 END"
        let sums = countColumns.map { SQLQuery(raw: "SUM(\($0))") }
        var groups = request.dimensions.map { SQLQuery(raw: $0.rawValue) }
        // By its place in the select list (PostgreSQL matches a grouped expression by its text,
        // and the two would bind the day as parameters of different numbers).
        if !request.dimensions.contains(.date) { groups.append(SQLQuery(raw: String(dimensions.count + 1))) }
        let table =
            request.dimensions.allSatisfy(totalsDimensions.contains) ? "reconcile_daily_totals" : "reconcile_daily"
        if filters.isEmpty { filters.append("1 = 1") }
        return """
            SELECT \(list: dimensions + [missing] + sums)
            FROM \(raw: table)
            WHERE \(list: filters, separator: " AND ")
            GROUP BY \(list: groups)
            """
    }

    /// The days of the postbacks that have a reading received from `from` to `to`.
    static func daysOfSightings(from: UTCDay, to: UTCDay) -> SQLQuery {
        """
        SELECT DISTINCT \(SQLQuery.dayText(receivedDay("p"))) FROM sightings s JOIN postbacks p ON p.id = s.postback_id
        WHERE \(receivedDay("s")) >= \(from) AND \(receivedDay("s")) <= \(to) AND p.key_space = 'production'
        """
    }

    /// The UTC day of `alias`'s `received_at`, as each engine indexes it.
    static func receivedDay(_ alias: String) -> SQLQuery {
        SQLQuery.receivedDay(of: alias + ".received_at")
    }

    /// The dimensions `reconcile_daily_totals` keeps.
    static let totalsDimensions: [ReconcileDimension] = [.date, .adNetworkID, .appID]

    /// Inserts `groups` (unmatched postbacks as missing) into `table`: `reconcile_daily`, every
    /// dimension, or `reconcile_daily_totals`, ``totalsDimensions``.
    static func insert(
        _ groups: [ReconcileKey: ReconcileCounts],
        into table: String,
        _ sql: any SQLDatabase
    )
        async throws
    {
        let totals = table == "reconcile_daily_totals"
        let rows = groups.map { key, counts -> SQLQuery in
            var values: [SQLQuery] = ["\(key.date)", "\(key.adNetworkID)", "\(key.appID)"]
            if !totals {
                values += ["\(key.kind)", "\(key.sequenceIndex)", "\(key.channel)", "\(key.campaign)"]
            }
            values += storedCounts.map { "\(counts[keyPath: $0.path])" }
            values += ["\(counts.copyOnly)", "\(counts.forwardOnly)"]
            return "(\(list: values))"
        }
        // 24 values a row, 500 rows a statement: within both engines' limits on bound values.
        for start in stride(from: 0, to: rows.count, by: 500) {
            let some = Array(rows[start..<min(start + 500, rows.count)])
            try await sql.execute(
                "INSERT INTO \(raw: table) (\(raw: totals ? totalsColumns : columns)) VALUES \(list: some)"
            )
        }
    }

    /// What the forwarding channels sent in the period that was quarantined.
    static func quarantined(_ request: ReconcileRequest) -> SQLQuery {
        var filters: [SQLQuery] = ["channel <> 'device'"]
        if let from = request.from { filters.append("\(SQLQuery.receivedDay) >= \(from)") }
        if let to = request.to { filters.append("\(SQLQuery.receivedDay) <= \(to)") }
        // Read only without an app filter (a quarantined entry has no app): the network's alone.
        filters += self.filters(request, prefix: "")
        return """
            SELECT received_at, ad_network_id, kind, channel FROM quarantine
            WHERE \(list: filters, separator: " AND ")
            """
    }
}
