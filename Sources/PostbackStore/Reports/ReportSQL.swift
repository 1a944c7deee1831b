import PostbackKit

/// The statements of a report, written once for both engines (``SQLQuery``): PostgreSQL's
/// `date` and booleans read back as SQLite's text and integers, its sums of integers as
/// `bigint`, and its order as SQLite's (NULL first, text by its bytes).
package struct ReportSQL {
    package var query: ReportQuery

    package init(query: ReportQuery) { self.query = query }

    /// The groups: the dimensions, then `event` for an events report.
    var groupColumns: [String] { query.dimensions.map(\.column) + (query.events ? ["event", "model_type"] : []) }

    /// An events report's `model_type`: re-engagements' events apart from installs' (rows
    /// without a conversion type, aggregated before it was kept, are installs').
    static let modelType: SQLQuery =
        "CASE WHEN conversion_type = 're-engagement' THEN 're-engagement' ELSE 'install' END"

    /// A dimension as a report selects it: text, or an integer (booleans as 0 and 1), as
    /// SQLite stores it. Days as they are stored: SQLite's text, PostgreSQL's `date` (read back
    /// as the same text, ``DimensionValue/init(_:)``). Formatted in SQL, PostgreSQL made each
    /// row's `date` a `timestamptz` in the session's time zone and then text, and grouped by
    /// that text: 14,500 rows of the dashboard's year by install date cost it 15 ms more.
    static func expression(_ dimension: AggregateDimension) -> SQLQuery {
        switch dimension {
        case .date, .installDate: SQLQuery(raw: dimension.column)
        case .redownload, .didWin:
            "\(sqlite: dimension.column, postgres: "\(dimension.column)::integer::bigint")"
        case .appID, .sourceAppID, .fidelityType, .postbackSequenceIndex, .crowdAnonymityTier, .sourceIdentifierDigits:
            "\(sqlite: dimension.column, postgres: "\(dimension.column)::bigint")"
        case .adNetworkID, .sourceIdentifier, .sourceDomain, .version, .countryCode, .marketplaceID, .campaign,
            .adGroup, .creative, .placement, .conversionType:
            SQLQuery(raw: dimension.selectExpression)
        }
    }

    /// The sum of an integer column (PostgreSQL sums `bigint` into `numeric`).
    static func integerSum(_ column: String) -> SQLQuery {
        "SUM(\(raw: column))\(sqlite: "", postgres: "::bigint")"
    }

    /// An `ORDER BY` term sorting as SQLite does: NULL first, text by its bytes.
    private static func orderTerm(_ expression: SQLQuery, isText: Bool) -> SQLQuery {
        "\(expression)\(sqlite: "", postgres: (isText ? " COLLATE \"C\"" : "") + " NULLS FIRST")"
    }

    /// The conditions: `date` (received) or `install_date` within `from...to`, then the apps and
    /// networks. An install date bound also bounds `date` by the days that can hold such
    /// installs (``PostbackInference/receivedDays(forInstallDays:_:)``), so that the `date`
    /// index narrows the rows read.
    /// The dashboard table by install date has no `date`: its install date bounds alone.
    private var conditions: [SQLQuery] {
        var conditions: [SQLQuery] = []
        let boundsReceivedDays: Bool
        if case .dashboard(let table) = source {
            boundsReceivedDays = table.basis == .received
        } else {
            boundsReceivedDays = true
        }
        switch query.dateBasis {
        case .received:
            if let from = query.from { conditions.append("date >= \(from)") }
            if let to = query.to { conditions.append("date <= \(to)") }
        case .install:
            if let from = query.from {
                conditions.append("install_date >= \(from)")
                if boundsReceivedDays {
                    conditions.append("date >= \(PostbackInference.receivedDays(forInstallDays: from, from).from)")
                }
            }
            if let to = query.to {
                conditions.append("install_date <= \(to)")
                if boundsReceivedDays {
                    conditions.append("date <= \(PostbackInference.receivedDays(forInstallDays: to, to).to)")
                }
            }
        }
        if !query.appIDs.isEmpty {
            conditions.append("app_id IN (\(list: query.appIDs.map { "\($0)" }))")
        }
        if !query.adNetworkIDs.isEmpty {
            conditions.append("ad_network_id IN (\(list: query.adNetworkIDs.map { "\($0)" }))")
        }
        return conditions
    }

    private var filter: SQLQuery {
        let conditions = conditions
        return conditions.isEmpty ? "" : "WHERE \(list: conditions, separator: " AND ")"
    }

    /// `SELECT` list prefix, `GROUP BY` and `ORDER BY` of the groups.
    private var grouping: (prefix: SQLQuery, group: SQLQuery, order: SQLQuery) {
        let selected = query.dimensions.map(Self.expression) + (query.events ? ["event", Self.modelType] : [])
        guard !selected.isEmpty else { return ("", "", "") }
        let positions = groupColumns.indices.map { String($0 + 1) }.joined(separator: ", ")
        let order =
            query.dimensions.map { Self.orderTerm(Self.expression($0), isText: $0.sqlType == "TEXT" && !$0.isDay) }
            + (query.events
                ? [Self.orderTerm("event", isText: true), Self.orderTerm(Self.modelType, isText: true)] : [])
        return ("\(list: selected), ", "GROUP BY \(raw: positions)", "ORDER BY \(list: order)")
    }

    /// Where a report's counts and revenue come from: the smallest tables that hold its
    /// dimensions and filters (apps and networks are in every one).
    package enum Source: Equatable {
        /// `aggregate_daily` (`aggregate_daily_events` for an events report): every dimension.
        case detailed
        /// `aggregate_daily_totals`: date, app, network, install date, tier.
        case totals
        /// A table of the dashboard: one date, network, tier, perhaps the app; bounded by its
        /// date alone.
        case dashboard(DashboardTable)

        /// The counts table; its revenue table is the same name with `_revenue`.
        var table: String {
            switch self {
            case .detailed: "aggregate_daily"
            case .totals: "aggregate_daily_totals"
            case .dashboard(let table): table.name
            }
        }
    }

    package var source: Source {
        if query.events || query.detailedRowsOnly { return .detailed }
        // Without the app when it can: the smallest.
        let tables = DashboardTable.all.filter { !$0.byApp } + DashboardTable.all.filter(\.byApp)
        if let table = tables.first(where: { $0.holds(query) }) { return .dashboard(table) }
        return query.dimensions.allSatisfy(AggregateSQL.totalsDimensions.contains) ? .totals : .detailed
    }

    /// Whether the report reads sums of the detailed rows (the totals or a dashboard table).
    package var readsTotals: Bool { source != .detailed }

    /// The count metrics (or, for events, occurrences and postbacks) per group.
    var metrics: SQLQuery {
        let (prefix, group, order) = grouping
        if query.events {
            return """
                SELECT \(prefix)\(Self.integerSum("occurrences_min")), \(Self.integerSum("occurrences_max")),
                    \(Self.integerSum("postbacks"))
                FROM aggregate_daily_events \(filter) \(group) \(order)
                """
        }
        // A dashboard table holds one row per key (its fill groups by it, after deleting the
        // days it fills): a report by its whole key reads the rows as they are. Summing them
        // again, a group per row, cost PostgreSQL 0.45 s of a year by install date, network and
        // tier (28,803 rows of 16 networks, 14 sums each, spilled to disk past `work_mem`; the
        // dashboard read that report until it summed by day and network, and by tier, instead).
        if case .dashboard(let table) = source, Set(query.dimensions) == Set(table.dimensions),
            query.dimensions.count == table.dimensions.count
        {
            let columns = ReportMetric.allCases.map { "\(raw: $0.rawValue)" as SQLQuery }
            return "SELECT \(prefix)\(list: columns) FROM \(raw: source.table) \(filter) \(order)"
        }
        let sums = ReportMetric.allCases.map { Self.integerSum($0.rawValue) }
        return "SELECT \(prefix)\(list: sums) FROM \(raw: source.table) \(filter) \(group) \(order)"
    }

    /// Revenue per group and currency.
    ///
    /// Summed as integers (micros; half-micros for the estimate, which a midpoint can end on)
    /// and only then made decimal: a sum of doubles depends on the order of its rows, which
    /// differs between engines and runs, and a total near half a cent then rounds either way.
    ///
    /// A report of counts and revenue reads, after the groups, whether the revenue is
    /// re-engagements', the currency, the observed revenue and the modeled one; an events
    /// report, the currency and the observed revenue. Of the detailed rows, the modeled revenue
    /// is computed (``AggregateSQL/detailedRevenue(_:)``), its estimate by `policy`, the last
    /// run's.
    func revenue(policy: RevenueEstimatePolicy) -> SQLQuery {
        let (prefix, _, _) = grouping
        if query.events {
            let positions = (0...groupColumns.count).map { String($0 + 1) }.joined(separator: ", ")
            return """
                SELECT \(prefix)currency, \(raw: AggregateSQL.revenueSums)
                FROM aggregate_daily_event_revenue \(filter) GROUP BY \(raw: positions)
                """
        }
        let positions = (0...groupColumns.count + 1).map { String($0 + 1) }.joined(separator: ", ")
        let rows: SQLQuery =
            source == .detailed
            ? "(\(AggregateSQL.detailedRevenue(policy))) AS revenue_rows" : "\(raw: source.table)_revenue"
        return """
            SELECT \(prefix)\(sqlite: "reengagement", postgres: "reengagement::integer::bigint"), currency,
                \(raw: AggregateSQL.revenueSums), \(raw: AggregateSQL.modeledSums)
            FROM \(rows) \(filter) GROUP BY \(raw: positions)
            """
    }

    static let policy: SQLQuery = "SELECT revenue_estimate FROM aggregate_runs ORDER BY id DESC LIMIT 1"

    /// The fine-value histogram over the period's days received: fine value (NULL: none),
    /// postbacks. For a query on the received basis (the tables have no install date). Without
    /// an app or network filter it reads `aggregate_fine_value_totals`, the same sums over
    /// every app and network.
    package var fineValues: SQLQuery {
        precondition(query.dateBasis == .received)
        let table =
            query.appIDs.isEmpty && query.adNetworkIDs.isEmpty && !query.detailedRowsOnly
            ? "aggregate_fine_value_totals" : "aggregate_fine_values"
        return """
            SELECT fine_value, \(Self.integerSum("postbacks")) FROM \(raw: table) \(filter) GROUP BY 1 ORDER BY 1
            """
    }

    /// The intake per day received in the query's period (its apps and networks do not apply).
    var intake: SQLQuery {
        precondition(query.dateBasis == .received && query.appIDs.isEmpty && query.adNetworkIDs.isEmpty)
        return """
            SELECT \(Self.expression(.date)), \(Self.integerSum("quarantined")), \(Self.integerSum("duplicates")),
                \(Self.integerSum("conflicts"))
            FROM aggregate_daily_intake \(filter) GROUP BY 1 ORDER BY 1
            """
    }
}
