import PostbackKit

/// The count metrics of a report row, in the order they are shown.
package enum ReportMetric: String, Sendable, CaseIterable {
    case postbacks, installs, redownloads, reengagements
    case nonWinning = "non_winning"
    case testMode = "test_mode"
    case development
    case nullConversionValues = "null_conversion_values"
    case unmapped, unmodelled
    case modelAmbiguous = "model_ambiguous"
    /// Nulls modeled per basis (``ModeledBasis``): shown as `modeled_nulls` and `modeled_basis`,
    /// not among the counts.
    case modeledDay = "modeled_day"
    case modeledWeek = "modeled_week"
    case modeledAppWeek = "modeled_app_week"
    case modeledNone = "modeled_none"

    /// The metrics shown as counts: all but the modeled nulls.
    static let shown = allCases.filter { $0.basis == nil }

    /// For a modeled-nulls count, its basis.
    var basis: ModeledBasis? {
        switch self {
        case .modeledDay: .day
        case .modeledWeek: .week
        case .modeledAppWeek: .appWeek
        case .modeledNone: ModeledBasis.none
        default: nil
        }
    }

    /// A short header for the table format.
    var shortName: String {
        switch self {
        case .postbacks: "postbacks"
        case .installs: "installs"
        case .redownloads: "redownloads"
        case .reengagements: "re-engage"
        case .nonWinning: "non-win"
        case .testMode: "test"
        case .development: "dev"
        case .nullConversionValues: "null CV"
        case .unmapped: "unmapped"
        case .unmodelled: "unmodelled"
        case .modelAmbiguous: "ambiguous"
        case .modeledDay, .modeledWeek, .modeledAppWeek, .modeledNone: rawValue
        }
    }

    /// The metric's position in ``allCases`` (and in ``ReportCounts``).
    var index: Int {
        switch self {
        case .postbacks: 0
        case .installs: 1
        case .redownloads: 2
        case .reengagements: 3
        case .nonWinning: 4
        case .testMode: 5
        case .development: 6
        case .nullConversionValues: 7
        case .unmapped: 8
        case .unmodelled: 9
        case .modelAmbiguous: 10
        case .modeledDay: 11
        case .modeledWeek: 12
        case .modeledAppWeek: 13
        case .modeledNone: 14
        }
    }
}

/// A report row's count metrics: one number per ``ReportMetric``, or none (an `--events` row).
///
/// An array in ``ReportMetric/allCases`` order rather than a dictionary: a year's dashboard
/// reads and sums tens of thousands of rows, and hashing each metric of each row was a fifth
/// of its time.
package struct ReportCounts: Sendable, Equatable {
    /// Empty, or one value per metric in ``ReportMetric/allCases`` order.
    package private(set) var values: [Int]

    package init() { values = [] }

    /// `values` in ``ReportMetric/allCases`` order.
    package init(_ values: [Int]) {
        precondition(values.count == ReportMetric.allCases.count)
        self.values = values
    }

    /// The metric's count; nil when the row has no counts. Setting one metric of a row without
    /// counts gives the others 0.
    package subscript(metric: ReportMetric) -> Int? {
        get { values.isEmpty ? nil : values[metric.index] }
        set {
            if values.isEmpty { values = Array(repeating: 0, count: ReportMetric.allCases.count) }
            values[metric.index] = newValue ?? 0
        }
    }
}

/// Revenue in one currency: the range and the point estimate, in currency units.
package struct RevenueTotal: Sendable, Hashable {
    package var min: Double
    package var max: Double
    package var estimate: Double

    package init(min: Double, max: Double, estimate: Double) {
        self.min = min
        self.max = max
        self.estimate = estimate
    }
}

/// One row of a report: its dimension values, and either the count metrics or one event's.
package struct ReportRow: Sendable {
    /// Dimension values in the report's dimension order (`nil` is SQL NULL).
    package var dimensions: [DimensionValue]
    /// Count metrics (not for `--events` rows).
    package var counts = ReportCounts()
    /// `--events` rows: the event and its sums.
    package var event: String?
    /// `--events` rows: `install` or `re-engagement`, the kind of model that decoded the event.
    package var eventModel: String?
    package var occurrencesMin: Int = 0
    package var occurrencesMax: Int = 0
    /// `--events` rows: postbacks with the event.
    package var eventPostbacks: Int = 0
    /// Revenue by currency code: downloads' and redownloads' (and rows aggregated before
    /// conversion types were kept).
    package var revenue: [String: RevenueTotal] = [:]
    /// Re-engagements' revenue (decoded by the re-engagement model) by currency code.
    package var reengagementRevenue: [String: RevenueTotal] = [:]
    /// ``revenue`` plus the revenue modeled for the null values (``NullModel``), by currency.
    package var modeledRevenue: [String: RevenueTotal] = [:]
    /// ``reengagementRevenue`` plus the revenue modeled for re-engagements' null values.
    package var reengagementModeledRevenue: [String: RevenueTotal] = [:]
    /// Columns from other measurements (``Report/extraColumns``), by name.
    var extras: [String: Int] = [:]
    /// Spend by currency code (``Report/showsSpend``): the cost rows (`postbackd costs add`)
    /// of the row's dimensions, finer ones summed.
    package var spend: [String: Double] = [:]
    /// `--currency`: a day of the row had no exchange rate for one of its currencies, so its
    /// converted amounts (revenue, spend and their ratios) are unknown and left empty.
    package var unconverted = false
    /// With `crowd_anonymity_tier` among the dimensions: this row's share of the production
    /// postbacks that have a tier (postback 0 of a winning 4.0 or AdAttributionKit
    /// attribution) among the rows with the same other dimensions; nil for the rows without a
    /// tier.
    package var tierShare: Double?

    /// `null_rate`: winning postbacks without a conversion value over winning postbacks (every
    /// key space, as `null_conversion_values` counts them); nil when there are none.
    package var nullRate: Double? {
        let winning = (counts[.postbacks] ?? 0) - (counts[.nonWinning] ?? 0)
        return winning > 0 ? Double(counts[.nullConversionValues] ?? 0) / Double(winning) : nil
    }

    /// The basis the row's null values were modeled on (``ModeledBasis``; `none`: not
    /// modeled), `mixed` when they were modeled on several (a row summing several groups), nil
    /// when it has none to model.
    package var modeledBasis: String? {
        let used = ReportMetric.allCases.compactMap { metric in
            metric.basis.flatMap { (counts[metric] ?? 0) > 0 ? $0 : nil }
        }
        switch used.count {
        case 0: return nil
        case 1: return used[0].rawValue
        default: return "mixed"
        }
    }

    /// Postbacks of production keys (not test mode, not development).
    var productionPostbacks: Int {
        (counts[.postbacks] ?? 0) - (counts[.testMode] ?? 0) - (counts[.development] ?? 0)
    }
}

extension ReportRow {
    /// Sets each row's ``tierShare``: `tier` is the position of `crowd_anonymity_tier` among
    /// the dimensions.
    static func setTierShares(_ rows: inout [ReportRow], tier: Int) {
        func others(_ row: ReportRow) -> [DimensionValue] {
            var values = row.dimensions
            values.remove(at: tier)
            return values
        }
        var totals: [[DimensionValue]: Int] = [:]
        for row in rows where row.dimensions[tier] != .null {
            totals[others(row), default: 0] += row.productionPostbacks
        }
        for index in rows.indices where rows[index].dimensions[tier] != .null {
            let total = totals[others(rows[index])] ?? 0
            rows[index].tierShare = total > 0 ? Double(rows[index].productionPostbacks) / Double(total) : nil
        }
    }
}

/// A dimension value as stored: text, integer, or NULL.
package enum DimensionValue: Sendable, Hashable, Comparable {
    case null
    case integer(Int64)
    case text(String)
}

/// `postbackd report`: sums the aggregate rows over a period, grouped by chosen dimensions.
package struct Report: Sendable {
    package var dimensions: [AggregateDimension]
    package var events: Bool
    package var rows: [ReportRow]
    /// Every currency with revenue in the report, sorted.
    package var currencies: [String]
    /// The revenue estimate policy of the aggregate runs the rows come from.
    package var policy: String?
    /// Count columns from other measurements shown after the metrics (`--with-apple-ads`).
    var extraColumns: [String] = []
    /// `--modeled`: the table and CSV show the modeled revenue (JSON always has it).
    package var showsModeled = false
    /// Every currency with re-engagement revenue, sorted.
    package var reengagementCurrencies: [String] = []
    /// Whether the period has cost rows that join the report's rows: the spend, CPI and ROAS
    /// columns are shown.
    package var showsSpend = false
    /// Every currency with spend, sorted.
    package var spendCurrencies: [String] = []
    /// `--currency`: the currency every amount was converted into.
    package var currency: String?

    package init(
        dimensions: [AggregateDimension],
        events: Bool,
        rows: [ReportRow],
        currencies: [String],
        policy: String?
    ) {
        self.dimensions = dimensions
        self.events = events
        self.rows = rows
        self.currencies = currencies
        self.policy = policy
    }
}

extension Report {
    /// The dimensions `--with-apple-ads` can group by: those both measurements have.
    static let sideBySideDimensions: [AggregateDimension] = [.date, .appID]

    /// `postbackd report --with-apple-ads`: the SKAN report (by date and/or app id) with three
    /// columns beside it, never added into its counts: `apple_ads_skan_installs`, the SKAN
    /// installs of postbacks from `com.apple.ads`; `apple_ads_installs` and
    /// `apple_ads_redownloads`, from the AdServices attribution records. A group only Apple Ads
    /// has gets a row with zero SKAN counts.
    static func sideBySide(_ store: any PostbackStorage, _ query: ReportQuery) async throws -> Report {
        precondition(query.dimensions.allSatisfy(sideBySideDimensions.contains) && !query.events)
        var report = try await store.report(query)
        var byNetwork = query
        byNetwork.dimensions.append(.adNetworkID)
        let skan = try await store.report(byNetwork)
        let appleAds = try await store.appleAdsReport(
            AppleAdsReportQuery(
                from: query.from,
                to: query.to,
                by: query.dimensions.map { $0 == .date ? AppleAdsDimension.date : AppleAdsDimension.appID }
            )
        )
        var extras: [[DimensionValue]: [String: Int]] = [:]
        for row in skan.rows where row.dimensions.last == .text(ApplePlacement.adNetworkID) {
            extras[Array(row.dimensions.dropLast()), default: [:]]["apple_ads_skan_installs", default: 0] +=
                row.counts[.installs] ?? 0
        }
        for row in appleAds.rows {
            extras[row.dimensions, default: [:]]["apple_ads_installs", default: 0] += row.counts[.installs] ?? 0
            extras[row.dimensions, default: [:]]["apple_ads_redownloads", default: 0] +=
                row.counts[.redownloads] ?? 0
        }
        report.extraColumns = ["apple_ads_skan_installs", "apple_ads_installs", "apple_ads_redownloads"]
        var known = Set<[DimensionValue]>()
        for index in report.rows.indices {
            known.insert(report.rows[index].dimensions)
            report.rows[index].extras = extras[report.rows[index].dimensions] ?? [:]
        }
        let added = extras.filter { !known.contains($0.key) }
        if !added.isEmpty {
            for (key, values) in added {
                var row = ReportRow(dimensions: key)
                for metric in ReportMetric.allCases { row.counts[metric] = 0 }
                row.extras = values
                report.rows.append(row)
            }
            report.rows.sort { $0.dimensions.lexicographicallyPrecedes($1.dimensions) }
        }
        return report
    }
}

/// The statements of a report, written once for both engines (``SQLQuery``): PostgreSQL's
/// `date` and booleans read back as SQLite's text and integers, its sums of integers as
/// `bigint`, and its order as SQLite's (NULL first, text by its bytes).
struct ReportSQL {
    var query: ReportQuery

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
    enum Source: Equatable {
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

    var source: Source {
        if query.events || query.detailedRowsOnly { return .detailed }
        // Without the app when it can: the smallest.
        let tables = DashboardTable.all.filter { !$0.byApp } + DashboardTable.all.filter(\.byApp)
        if let table = tables.first(where: { $0.holds(query) }) { return .dashboard(table) }
        return query.dimensions.allSatisfy(AggregateSQL.totalsDimensions.contains) ? .totals : .detailed
    }

    /// Whether the report reads sums of the detailed rows (the totals or a dashboard table).
    var readsTotals: Bool { source != .detailed }

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
    var fineValues: SQLQuery {
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

/// Reading a report and the dashboard's series, on both engines.
extension PostbackStorage {
    /// Reads the report in one read-only transaction: its statements see one snapshot, so a
    /// concurrent `aggregate` is seen whole or not at all.
    package func report(_ query: ReportQuery) async throws -> Report {
        let sql = ReportSQL(query: query)
        let groups = sql.groupColumns.count
        return try await withSQL("read the report", .read) { db in
            var assembler = ReportAssembler(query)
            let policy = try await db.row(ReportSQL.policy)?.optionalString(0)
            var key: [DimensionValue] = []
            var sums: [Int64?] = []
            try await db.forEachRow(sql.metrics) { row in
                key.removeAll(keepingCapacity: true)
                sums.removeAll(keepingCapacity: true)
                for index in 0..<groups { key.append(DimensionValue(row.values[index])) }
                for index in groups..<row.values.count { sums.append(try row.optionalInt64(index)) }
                assembler.addMetrics(key, sums)
            }
            if !query.countsOnly {
                let estimate = policy.flatMap(RevenueEstimatePolicy.init(rawValue:)) ?? .midpoint
                try await db.forEachRow(sql.revenue(policy: estimate)) { row in
                    let key = (0..<groups).map { DimensionValue(row.values[$0]) }
                    func total(_ first: Int) throws -> RevenueTotal {
                        RevenueTotal(
                            min: try row.double(first),
                            max: try row.double(first + 1),
                            estimate: try row.double(first + 2)
                        )
                    }
                    if query.events {
                        assembler.addRevenue(key, currency: try row.string(groups), try total(groups + 1))
                    } else {
                        assembler.addRevenue(
                            key,
                            reengagement: try row.int(groups) != 0,
                            currency: try row.string(groups + 1),
                            observed: try total(groups + 2),
                            modeled: try total(groups + 5)
                        )
                    }
                }
            }
            return assembler.report(policy: policy)
        }
    }

    /// Reads the fine values and the intake in one read-only transaction.
    package func dashboardSeries(_ query: ReportQuery, fineValues: Bool) async throws -> DashboardSeries {
        let (fineQuery, intakeQuery) = DashboardSeries.queries(query)
        return try await withSQL("read the dashboard series", .read) { db in
            var series = DashboardSeries()
            if fineValues {
                try await db.forEachRow(ReportSQL(query: fineQuery).fineValues) { row in
                    series.fineValues.append(
                        FineValueCount(fineValue: try row.optionalInt(0), postbacks: try row.int(1))
                    )
                }
            }
            try await db.forEachRow(ReportSQL(query: intakeQuery).intake) { row in
                guard let day = UTCDay(try row.string(0)) else { return }
                series.intake.append(
                    DailyIntake(
                        day: day,
                        quarantined: try row.int(1),
                        duplicates: try row.int(2),
                        conflicts: try row.int(3)
                    )
                )
            }
            return series
        }
    }
}

extension DimensionValue {
    /// A report's group value as either engine answered it.
    init(_ value: SQLValue) {
        switch value {
        case .integer(let number): self = .integer(number)
        case .text(let text): self = .text(text)
        case .real(let number): self = .integer(Int64(number))
        case .boolean(let flag): self = .integer(flag ? 1 : 0)
        case .day(let day): self = .text(day.description)
        case .instant(let instant): self = .text(instant.iso8601)
        case .null, .blob: self = .null
        }
    }
}

/// Builds a report from its rows as the engines read them.
///
/// The metrics rows arrive once per group, in order: kept in an array, looked up by their
/// group only when revenue arrives (a counts-only report hashes nothing; the year by a
/// dashboard table's whole key is 15,000 such rows).
struct ReportAssembler {
    let query: ReportQuery
    private var rows: [ReportRow] = []
    /// Each row's group (its dimensions, then its event).
    private var keys: [[DimensionValue]] = []
    /// The position of each group in `rows`, built at the first revenue row.
    private var positions: [[DimensionValue]: Int]?
    private var currencies = Set<String>()
    private var reengagementCurrencies = Set<String>()

    init(_ query: ReportQuery) {
        self.query = query
    }

    /// A row of ``ReportSQL/metrics``: the group's values, then the sums (nil: SUM over no rows).
    mutating func addMetrics(_ key: [DimensionValue], _ sums: [Int64?]) {
        if query.events {
            var row = ReportRow(dimensions: Array(key.prefix(query.dimensions.count)))
            if case .text(let name) = key[query.dimensions.count] { row.event = name }
            if case .text(let model) = key.last { row.eventModel = model }
            row.occurrencesMin = Int(sums[0] ?? 0)
            row.occurrencesMax = Int(sums[1] ?? 0)
            row.eventPostbacks = Int(sums[2] ?? 0)
            rows.append(row)
        } else {
            // SUM over no rows is NULL: a report over an empty period has no rows.
            guard sums.first.flatMap({ $0 }) != nil else { return }
            var row = ReportRow(dimensions: key)
            row.counts = ReportCounts(sums.map { Int($0 ?? 0) })
            rows.append(row)
        }
        keys.append(key)
        positions = nil
    }

    /// A row of ``ReportSQL/revenue`` of a report of counts: `observed`, and `modeled` to add to
    /// it for the modeled revenue.
    mutating func addRevenue(
        _ key: [DimensionValue],
        reengagement: Bool,
        currency: String,
        observed: RevenueTotal,
        modeled: RevenueTotal
    ) {
        guard let position = position(key) else { return }
        let withModeled = RevenueTotal(
            min: observed.min + modeled.min,
            max: observed.max + modeled.max,
            estimate: observed.estimate + modeled.estimate
        )
        if reengagement {
            reengagementCurrencies.insert(currency)
            rows[position].reengagementRevenue[currency] = observed
            rows[position].reengagementModeledRevenue[currency] = withModeled
        } else {
            currencies.insert(currency)
            rows[position].revenue[currency] = observed
            rows[position].modeledRevenue[currency] = withModeled
        }
    }

    /// A row of ``ReportSQL/revenue`` of an events report.
    mutating func addRevenue(_ key: [DimensionValue], currency: String, _ total: RevenueTotal) {
        currencies.insert(currency)
        guard let position = position(key) else { return }
        rows[position].revenue[currency] = total
    }

    /// The position of `key`'s row.
    private mutating func position(_ key: [DimensionValue]) -> Int? {
        if positions == nil {
            var built: [[DimensionValue]: Int] = [:]
            built.reserveCapacity(keys.count)
            for (position, key) in keys.enumerated() { built[key] = position }
            positions = built
        }
        return positions?[key]
    }

    func report(policy: String?) -> Report {
        var ordered = rows
        if !query.events, !query.countsOnly, let tier = query.dimensions.firstIndex(of: .crowdAnonymityTier) {
            ReportRow.setTierShares(&ordered, tier: tier)
        }
        var report = Report(
            dimensions: query.dimensions,
            events: query.events,
            rows: ordered,
            currencies: currencies.sorted(),
            policy: policy
        )
        report.reengagementCurrencies = reengagementCurrencies.sorted()
        return report
    }
}

/// The staleness warning from the times of the last ingest that accepted something, of the
/// last aggregate run, of the last campaign mapping change and of the last aggregate run over
/// every day (ISO 8601 text, or nil when there is none), and whether aggregate rows written
/// before the section 9 dimensions remain (`staleRows`).
package func stalenessWarning(
    lastIngest: String?,
    lastAggregate: String?,
    lastMappingChange: String? = nil,
    lastWholeAggregate: String? = nil,
    staleRows: Bool = false,
    lastModelChange: String? = nil
) -> String? {
    guard let lastAggregate else {
        return lastIngest == nil ? nil : "no aggregate rows yet: run postbackd aggregate first"
    }
    var warnings: [String] = []
    if let lastIngest, lastIngest > lastAggregate {
        warnings.append(
            "postbacks were ingested after the last aggregate run (\(lastAggregate)); run postbackd aggregate to include them"
        )
    }
    if staleRows {
        warnings.append(
            "some aggregate rows were computed before install dates, crowd-anonymity tiers, campaigns and conversion types were stored; run postbackd aggregate (every day) to recompute them"
        )
    }
    // A mapping applies to every day: only a run over every day since applies it everywhere.
    if let lastMappingChange, lastMappingChange > (lastWholeAggregate ?? "") {
        warnings.append(
            "campaign mappings changed after the last aggregate run over every day; run postbackd aggregate to apply them"
        )
    }
    if let lastModelChange, lastModelChange > lastAggregate {
        warnings.append(
            "a conversion model in force from before it was added came after the last aggregate run; run postbackd aggregate over the days postbackd models add named"
        )
    }
    return warnings.isEmpty ? nil : warnings.joined(separator: "\n")
}
