import PostbackKit

/// The aggregate tables and the statements a run executes on both engines around the rows it
/// writes its own way: deleting the days' rows, filling the intake, the fine-value totals and
/// the dashboard's tables from them, and recording the run.
package enum AggregateSQL {
    package static let tables =
        [
            "aggregate_daily", "aggregate_daily_revenue", "aggregate_daily_events", "aggregate_daily_event_revenue",
            "aggregate_fine_values", "aggregate_daily_intake", "aggregate_daily_totals",
            "aggregate_daily_totals_revenue",
            "aggregate_fine_value_totals", "aggregate_daily_references",
        ] + DashboardTable.all.filter { $0.basis == .received }.flatMap { [$0.name, $0.name + "_revenue"] }

    /// The columns of a postback that `aggregate` reads (SQLite reads them as they are), and
    /// those `pruned_postbacks` keeps of each test-mode and development postback `prune`
    /// removes, which `aggregate` reads as well: a day's report stays what it was.
    static let postbackColumns = """
        app_id, ad_network_id, kind, key_space, version, campaign_id, source_identifier, source_app_id, \
        source_domain, fidelity_type, redownload, did_win, postback_sequence_index, country_code, fine_value, \
        coarse_value, conversion_type, marketplace_id, install_date, crowd_anonymity_tier, source_identifier_digits, \
        received_at
        """

    /// The tables by install date: a run over some days received replaces their rows for the
    /// install dates those days can hold (``dashboardStatements(_:)``), not by `date`.
    package static let installTables = DashboardTable.all.filter { $0.basis == .install }.flatMap {
        [$0.name, $0.name + "_revenue"]
    }

    /// The dimensions of `aggregate_daily_totals` and `aggregate_daily_totals_revenue`: the
    /// day's groups summed over every other dimension. A report by these alone (the dashboard's,
    /// the default one) reads them: a few hundred rows a day instead of one per combination of
    /// every dimension.
    package static let totalsDimensions: [AggregateDimension] = [
        .date, .appID, .adNetworkID, .installDate, .crowdAnonymityTier,
    ]

    /// The totals columns: dimensions, then the counts.
    static var totalsColumns: String {
        totalsDimensions.map(\.column).joined(separator: ", ") + ", " + GroupMetrics.countColumns
    }

    /// The columns of a revenue table after its dimensions: whether the row is re-engagements'
    /// (decoded by the re-engagement model), the currency, the observed revenue, and the revenue
    /// modeled for the null values (``NullModel``), to add to it.
    ///
    /// `aggregate_daily_revenue` has them too, but a run writes only the first five there
    /// (``detailedRevenueColumns``): the detailed rows' modeled revenue is computed when
    /// reporting, from `aggregate_daily_references` (``detailedRevenue(_:)``).
    static let revenueColumns =
        "reengagement, currency, revenue_min, revenue_max, revenue_estimate, modeled_min, modeled_max, modeled_estimate"

    /// The columns a run writes in `aggregate_daily_revenue` after its dimensions.
    static let detailedRevenueColumns = "reengagement, currency, revenue_min, revenue_max, revenue_estimate"

    /// The columns of `aggregate_daily_events` after its dimensions.
    static let eventColumns = "event, occurrences_min, occurrences_max, postbacks"

    /// The columns of `aggregate_daily_event_revenue` after its dimensions.
    static let eventRevenueColumns = "event, currency, revenue_min, revenue_max, revenue_estimate"

    /// The columns of `aggregate_fine_values`.
    static let fineValueColumns = "date, app_id, ad_network_id, fine_value, postbacks"

    /// The totals revenue columns.
    static var totalsRevenueColumns: String {
        totalsDimensions.map(\.column).joined(separator: ", ") + ", " + revenueColumns
    }

    /// The columns of `aggregate_daily_references`: a reference group of the null model
    /// (``NullModel``) of a day, app, network, sequence index and kind of model, on its basis
    /// (`day`: that day's own, which a later run over the next days reads back; `week`,
    /// `app_week`: the wider group the nulls of that key were modeled on), its postbacks and,
    /// per currency (NULL for a group without revenue), their revenue in micros.
    static let referenceColumns =
        "date, app_id, ad_network_id, postback_sequence_index, reengagement, basis, postbacks, currency, revenue_min_micros, revenue_max_micros"

    /// The `day` reference groups stored for `days` (the days before a run's first): date, app,
    /// network, sequence index, re-engagement, postbacks, currency, minimum and maximum micros.
    static func storedReferences(_ days: [UTCDay]) -> SQLQuery {
        """
        SELECT date, app_id, ad_network_id, postback_sequence_index, reengagement, postbacks, currency,
            revenue_min_micros, revenue_max_micros
        FROM aggregate_daily_references
        WHERE basis = 'day' AND \(within("date", (days.first, days.last)))
        """
    }

    /// The detailed revenue rows as a report reads them: the stored, observed rows (and the
    /// modeled revenue of rows a run before `aggregate_daily_references` stored in them), and
    /// for each `aggregate_daily` row with modeled nulls, its modeled revenue per currency: its
    /// nulls × its reference group's revenue ÷ its postbacks (``NullModel/modeledMicros(nulls:sum:references:)``,
    /// the same as the totals sum), the estimate by `policy`. The columns are the dimensions'
    /// and ``revenueColumns``, so that a report filters and groups them as the table.
    ///
    /// Stored per row, the modeled revenue doubled the rows of `aggregate_daily_revenue` (a
    /// row per currency for every group with nulls, most of which have no observed revenue)
    /// and made `aggregate` a quarter slower; a report of the detailed rows joins instead.
    static func detailedRevenue(_ policy: RevenueEstimatePolicy) -> SQLQuery {
        let dimensions = AggregateDimension.columnList
        let qualified = AggregateDimension.stored.map { "d.\($0.column)" }.joined(separator: ", ")
        let nulls = "d.modeled_day + d.modeled_week + d.modeled_app_week"
        let minimum = NullModel.modeledMicrosSQL(nulls: nulls, sum: "r.revenue_min_micros", references: "r.postbacks")
        let maximum = NullModel.modeledMicrosSQL(nulls: nulls, sum: "r.revenue_max_micros", references: "r.postbacks")
        let estimate = policy.estimateUnitsSQL(minMicros: "min_micros", maxMicros: "max_micros")
        return """
            SELECT \(raw: dimensions), reengagement, currency, revenue_min, revenue_max, revenue_estimate,
                COALESCE(modeled_min, 0) AS modeled_min, COALESCE(modeled_max, 0) AS modeled_max,
                COALESCE(modeled_estimate, 0) AS modeled_estimate
            FROM aggregate_daily_revenue
            UNION ALL
            SELECT \(raw: dimensions), reengagement, currency, 0, 0, 0, min_micros / 1000000.0, max_micros / 1000000.0,
                \(raw: estimate)
            FROM (
                SELECT \(raw: qualified), r.reengagement, r.currency, \(raw: minimum) AS min_micros,
                    \(raw: maximum) AS max_micros
                FROM aggregate_daily AS d JOIN aggregate_daily_references AS r
                    ON r.date = d.date AND r.app_id = d.app_id AND r.ad_network_id = d.ad_network_id
                    AND r.postback_sequence_index = d.postback_sequence_index
                    AND r.reengagement = (d.conversion_type = 're-engagement')
                    AND r.basis = CASE WHEN d.modeled_day > 0 THEN 'day' WHEN d.modeled_week > 0 THEN 'week'
                        ELSE 'app_week' END
                WHERE \(raw: nulls) > 0 AND r.currency IS NOT NULL
            ) AS modeled
            """
    }

    /// `column` within the days `from...to` (either nil: unbounded on that side).
    static func within(_ column: String, _ bounds: (from: UTCDay?, to: UTCDay?)) -> SQLQuery {
        within("\(raw: column)" as SQLQuery, bounds)
    }

    /// An expression (`SQLQuery.receivedDay`) within the days `from...to`.
    static func within(_ column: SQLQuery, _ bounds: (from: UTCDay?, to: UTCDay?)) -> SQLQuery {
        switch (bounds.from, bounds.to) {
        case (nil, nil): "TRUE"
        case (let from?, nil): "\(column) >= \(from)"
        case (nil, let to?): "\(column) <= \(to)"
        case (let from?, let to?): "\(column) >= \(from) AND \(column) <= \(to)"
        }
    }

    /// What a run over `selection` deletes before it writes the days' rows: every table's rows
    /// of those days received (``tables``).
    static func deleteStatements(_ selection: DaySelection) -> [SQLQuery] {
        deleteStatements(selection.bounds)
    }

    /// Every table's rows of the days received within `bounds` (nil: unbounded).
    static func deleteStatements(_ bounds: (from: UTCDay?, to: UTCDay?)) -> [SQLQuery] {
        tables.map { table in
            bounds.from == nil && bounds.to == nil
                ? "DELETE FROM \(raw: table)" : "DELETE FROM \(raw: table) WHERE \(within("date", bounds))"
        }
    }

    /// What a run over `selection` fills from the rows it wrote, in order: the intake, the
    /// fine-value totals and the dashboard's tables (``dashboardStatements(_:)``).
    static func fillStatements(_ selection: DaySelection) -> [SQLQuery] {
        fillStatements(selection.bounds)
    }

    /// The same for the days received within `bounds` (nil: unbounded): a part of a run that
    /// commits as it goes (SQLite's runs of more than a month), whose parts' bounds follow one
    /// another and together are the run's.
    static func fillStatements(_ bounds: (from: UTCDay?, to: UTCDay?)) -> [SQLQuery] {
        [intakeStatement(bounds), fineValueTotalsStatement(bounds)] + dashboardStatements(bounds)
    }

    /// Fills `aggregate_daily_intake` for the days received within `bounds`.
    ///
    /// `quarantined` sums `received_count` (a body `serve` refused again and again is one row);
    /// a count is on the day its row was first received. What `prune` removed is counted in
    /// `pruned_intake` (and a copy of a pruned postback there too), so a day's intake stays.
    static func intakeStatement(_ bounds: (from: UTCDay?, to: UTCDay?)) -> SQLQuery {
        """
        INSERT INTO aggregate_daily_intake (date, quarantined, duplicates, conflicts)
        SELECT day, SUM(quarantined), SUM(duplicates), SUM(conflicts) FROM (
            SELECT \(SQLQuery.receivedDay) AS day, received_count AS quarantined, 0 AS duplicates, 0 AS conflicts
            FROM quarantine
            UNION ALL
            SELECT \(SQLQuery.receivedDay), 0, 1, CASE WHEN conflict THEN 1 ELSE 0 END FROM sightings
            UNION ALL
            SELECT date, quarantined, duplicates, conflicts FROM pruned_intake
        ) AS intake
        WHERE \(within("day", bounds))
        GROUP BY day
        """
    }

    /// Fills `aggregate_fine_value_totals` (the fine-value histogram per day, summed over apps
    /// and networks) from the run's `aggregate_fine_values` rows within `bounds`. The
    /// dashboard's histogram without a filter reads it: 65 rows a day at most, instead of one
    /// per app, network and fine value (a year: 23,725 rows instead of 363,126).
    static func fineValueTotalsStatement(_ bounds: (from: UTCDay?, to: UTCDay?)) -> SQLQuery {
        """
        INSERT INTO aggregate_fine_value_totals (date, fine_value, postbacks)
        SELECT date, fine_value, SUM(postbacks) FROM aggregate_fine_values
        WHERE \(within("date", bounds))
        GROUP BY date, fine_value
        """
    }

    /// The revenue columns' sums, exact (``exactSum(_:scale:)``): the minimum, the maximum and
    /// the estimate.
    static let revenueSums = [
        exactSum("revenue_min", scale: "1000000"), exactSum("revenue_max", scale: "1000000"),
        exactSum("revenue_estimate", scale: "2000000"),
    ].joined(separator: ", ")

    /// The same of the modeled columns.
    static let modeledSums = [
        exactSum("modeled_min", scale: "1000000"), exactSum("modeled_max", scale: "1000000"),
        exactSum("modeled_estimate", scale: "2000000"),
    ].joined(separator: ", ")

    /// A sum of currency amounts exact to `scale`, in SQL both engines read: micros (`1000000`)
    /// or half-micros (`2000000`, for an estimate, which a midpoint can end on).
    static func exactSum(_ column: String, scale: String) -> String {
        "CAST(SUM(CAST(ROUND(\(column) * \(scale)) AS BIGINT)) AS DOUBLE PRECISION) / \(scale).0"
    }

    /// What a run over `selection` does to the dashboard's tables, after the totals are
    /// written. By day received, the run's days (their old rows are gone with ``tables``); by
    /// install date, the install dates those days can hold, deleted and filled again.
    static func dashboardStatements(_ bounds: (from: UTCDay?, to: UTCDay?)) -> [SQLQuery] {
        let install = installBounds(bounds)
        return dashboardFills(.received, bounds)
            + installTables.map { table in
                "DELETE FROM \(raw: table) WHERE install_date IS NULL OR (\(within("install_date", install)))"
            }
            + dashboardFills(.install, install)
    }

    /// Fills the dashboard's tables of `basis` and their revenue (with the app, from the
    /// totals; without it, from those) for the days (`date` or `install_date`) within `bounds`
    /// (for the install basis, NULL install dates too). The rows of those days must be gone
    /// first.
    private static func dashboardFills(_ basis: DateBasis, _ bounds: (from: UTCDay?, to: UTCDay?)) -> [SQLQuery] {
        [true, false].flatMap { byApp in DashboardTable(basis, byApp: byApp).fillStatements(bounds) }
    }

    /// The install dates a run over the days received `from...to` must recompute in the install
    /// tables: those its postbacks can hold (``PostbackInference/installDays(forReceivedDays:_:)``)
    /// widened by a day each side; an unbounded side stays unbounded (a run over every day).
    private static func installBounds(_ bounds: (from: UTCDay?, to: UTCDay?)) -> (from: UTCDay?, to: UTCDay?) {
        func install(_ day: UTCDay) -> (from: UTCDay, to: UTCDay) {
            PostbackInference.installDays(forReceivedDays: day, day)
        }
        return (
            bounds.from.map { UTCDay(daysSinceEpoch: install($0).from.daysSinceEpoch - 1) },
            bounds.to.map { UTCDay(daysSinceEpoch: install($0).to.daysSinceEpoch + 1) }
        )
    }

    /// The run's row in `aggregate_runs`.
    static func runRecord(
        _ summary: AggregateSummary,
        stored: [StoredModel],
        selection: DaySelection
    ) -> SQLQuery {
        """
        INSERT INTO aggregate_runs (run_at, first_day, last_day, days, postbacks, revenue_estimate, models,
            postbackd_version, dimensions, whole)
        VALUES (\(UTCInstant.now()), \(summary.days.first), \(summary.days.last), \(summary.days.count),
            \(summary.postbacks), \(summary.policy.rawValue), \(modelsJSON(stored))\(sqlite: "", postgres: "::jsonb"),
            \(PostbackdVersion.current), \(AggregateDimension.columnList), \(selection == .all))
        """
    }

    /// `aggregate_runs.models`: the models the run decoded with, as a JSON object: by app, by
    /// conversion type, their digests in timeline order (`{"123":{"install":["9f2c…"]}}`).
    static func modelsJSON(_ stored: [StoredModel]) -> String {
        var apps: [Int64: [ModelConversionType: [String]]] = [:]
        for entry in stored {
            apps[entry.model.appID, default: [:]][entry.conversionType, default: []].append(entry.sha256)
        }
        let objects = apps.keys.sorted().map { app in
            let types = ModelConversionType.allCases.compactMap { type in
                apps[app]?[type].map { "\"\(type.rawValue)\":[" + $0.map { "\"\($0)\"" }.joined(separator: ",") + "]" }
            }
            return "\"\(app)\":{" + types.joined(separator: ",") + "}"
        }
        return "{" + objects.joined(separator: ",") + "}"
    }
}
