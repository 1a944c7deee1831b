import PostbackKit

/// The count metrics of a report row, in the order they are shown.
package enum ReportMetric: String, Sendable, CaseIterable {
    case postbacks, installs, redownloads, reengagements
    case nonWinning = "non_winning"
    case testMode = "test_mode"
    case development
    case nullConversionValues = "null_conversion_values"
    case unmapped, unmodelled

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
    package var occurrencesMin: Int = 0
    package var occurrencesMax: Int = 0
    /// `--events` rows: postbacks with the event.
    package var eventPostbacks: Int = 0
    /// Revenue by currency code.
    package var revenue: [String: RevenueTotal] = [:]
    /// Columns from other measurements (``Report/extraColumns``), by name.
    var extras: [String: Int] = [:]
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

    /// Postbacks of production keys (not test mode, not development).
    var productionPostbacks: Int {
        (counts[.postbacks] ?? 0) - (counts[.testMode] ?? 0) - (counts[.development] ?? 0)
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
    /// `postbackd report`: the report and, when the aggregates may be out of date, a warning.
    package static func read(
        _ location: StoreLocation,
        _ query: ReportQuery
    ) async throws -> (report: Report, warning: String?) {
        try await ReportRequest(query: query, withAppleAds: false).read(location)
    }

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

/// The SQL type of a report parameter.
enum ReportParameterType {
    case date, integer, text
}

/// The SQL of a report, for either engine: the same statements, with each engine's spelling
/// of a dimension (PostgreSQL's `date` and booleans come back as SQLite's text and integers)
/// and of a sum (PostgreSQL sums integers into `numeric`).
struct ReportSQL {
    var query: ReportQuery
    /// How the engine spells a dimension column in the select list.
    var dimension: (AggregateDimension) -> String
    /// How the engine spells the sum of an integer column.
    var integerSum: (String) -> String
    /// How the engine spells the n-th (1-based) parameter of a type.
    var parameter: (Int, ReportParameterType) -> String
    /// How the engine sorts by a group's select expression as SQLite does (NULL first, text by
    /// its bytes), given whether it is text.
    var orderTerm: (_ expression: String, _ isText: Bool) -> String

    /// The groups: the dimensions, then `event` for an events report.
    var groupColumns: [String] { query.dimensions.map(\.column) + (query.events ? ["event"] : []) }

    /// The conditions: `date` (received) or `install_date` within `from...to`, then the apps and
    /// networks. An install date bound also bounds `date` by the days that can hold such
    /// installs (``PostbackInference/receivedDays(forInstallDays:_:)``), so that the `date`
    /// index narrows the rows read.
    /// The dashboard table by install date has no `date`: its install date bounds alone.
    private var bounds: [(condition: String, values: [String], type: ReportParameterType)] {
        var bounds: [(String, [String], ReportParameterType)] = []
        let boundsReceivedDays: Bool
        if case .dashboard(let table) = source {
            boundsReceivedDays = table.basis == .received
        } else {
            boundsReceivedDays = true
        }
        switch query.dateBasis {
        case .received:
            if let from = query.from { bounds.append(("date >=", [from.description], .date)) }
            if let to = query.to { bounds.append(("date <=", [to.description], .date)) }
        case .install:
            if let from = query.from {
                bounds.append(("install_date >=", [from.description], .date))
                if boundsReceivedDays {
                    bounds.append(
                        (
                            "date >=", [PostbackInference.receivedDays(forInstallDays: from, from).from.description],
                            .date
                        )
                    )
                }
            }
            if let to = query.to {
                bounds.append(("install_date <=", [to.description], .date))
                if boundsReceivedDays {
                    bounds.append(
                        ("date <=", [PostbackInference.receivedDays(forInstallDays: to, to).to.description], .date)
                    )
                }
            }
        }
        if !query.appIDs.isEmpty { bounds.append(("app_id IN", query.appIDs.map(String.init), .integer)) }
        if !query.adNetworkIDs.isEmpty { bounds.append(("ad_network_id IN", query.adNetworkIDs, .text)) }
        return bounds
    }

    /// The parameters, in order, as text (PostgreSQL casts each to its type).
    var arguments: [String] { bounds.flatMap(\.values) }

    /// The parameters, in order, with their types.
    var typedArguments: [(value: String, type: ReportParameterType)] {
        bounds.flatMap { bound in bound.values.map { ($0, bound.type) } }
    }

    private var filter: String {
        var number = 0
        let conditions = bounds.map { bound in
            let placeholders = bound.values.map { _ in
                number += 1
                return parameter(number, bound.type)
            }
            return bound.condition.hasSuffix(" IN")
                ? "\(bound.condition) (\(placeholders.joined(separator: ", ")))"
                : "\(bound.condition) \(placeholders[0])"
        }
        return conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
    }

    private var orderTerms: [String] {
        query.dimensions.map { orderTerm(dimension($0), $0.sqlType == "TEXT") }
            + (query.events ? [orderTerm("event", true)] : [])
    }

    private var selectList: String {
        (query.dimensions.map(dimension) + (query.events ? ["event"] : [])).joined(separator: ", ")
    }

    private var grouping: (group: String, order: String, prefix: String) {
        let positions = groupColumns.indices.map { String($0 + 1) }.joined(separator: ", ")
        let select = selectList
        return (
            positions.isEmpty ? "" : "GROUP BY " + positions,
            positions.isEmpty ? "" : "ORDER BY " + orderTerms.joined(separator: ", "),
            select.isEmpty ? "" : select + ", "
        )
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
        return query.dimensions.allSatisfy(DailyAggregator.totalsDimensions.contains) ? .totals : .detailed
    }

    /// Whether the report reads sums of the detailed rows (the totals or a dashboard table).
    var readsTotals: Bool { source != .detailed }

    /// The count metrics (or, for events, occurrences and postbacks) per group.
    var metrics: String {
        let (group, order, prefix) = grouping
        if query.events {
            return """
                SELECT \(prefix)\(integerSum("occurrences_min")), \(integerSum("occurrences_max")), \(integerSum("postbacks"))
                FROM aggregate_daily_events \(filter) \(group) \(order)
                """
        }
        let sums = ReportMetric.allCases.map { integerSum($0.rawValue) }.joined(separator: ", ")
        return "SELECT \(prefix)\(sums) FROM \(source.table) \(filter) \(group) \(order)"
    }

    /// Revenue per group and currency.
    ///
    /// Summed as integers (micros; half-micros for the estimate, which a midpoint can end on)
    /// and only then made decimal: a sum of doubles depends on the order of its rows, which
    /// differs between engines and runs, and a total near half a cent then rounds either way.
    var revenue: String {
        let (_, _, prefix) = grouping
        let table = query.events ? "aggregate_daily_event_revenue" : source.table + "_revenue"
        let positions = (0...groupColumns.count).map { String($0 + 1) }.joined(separator: ", ")
        return """
            SELECT \(prefix)currency, \(DailyAggregator.exactSum("revenue_min", scale: "1000000")), \(DailyAggregator.exactSum("revenue_max", scale: "1000000")), \(DailyAggregator.exactSum("revenue_estimate", scale: "2000000"))
            FROM \(table) \(filter) GROUP BY \(positions)
            """
    }

    static let policy = "SELECT revenue_estimate FROM aggregate_runs ORDER BY id DESC LIMIT 1"

    /// The fine-value histogram over the period's days received: fine value (NULL: none),
    /// postbacks. For a query on the received basis (the tables have no install date). Without
    /// an app or network filter it reads `aggregate_fine_value_totals`, the same sums over
    /// every app and network.
    var fineValues: String {
        precondition(query.dateBasis == .received)
        let table =
            query.appIDs.isEmpty && query.adNetworkIDs.isEmpty && !query.detailedRowsOnly
            ? "aggregate_fine_value_totals" : "aggregate_fine_values"
        return """
            SELECT fine_value, \(integerSum("postbacks")) FROM \(table) \(filter) GROUP BY 1 ORDER BY 1
            """
    }

    /// The intake per day received in the query's period (its apps and networks do not apply).
    var intake: String {
        precondition(query.dateBasis == .received && query.appIDs.isEmpty && query.adNetworkIDs.isEmpty)
        return """
            SELECT \(dimension(.date)), \(integerSum("quarantined")), \(integerSum("duplicates")), \(integerSum("conflicts"))
            FROM aggregate_daily_intake \(filter) GROUP BY 1 ORDER BY 1
            """
    }
}

/// Builds a report from its rows as the engines read them.
///
/// The metrics rows arrive once per group, in order: kept in an array, looked up by their
/// group only when revenue arrives (a counts-only report hashes nothing; a year's dashboard
/// reads 15,000 such rows).
struct ReportAssembler {
    let query: ReportQuery
    private var rows: [ReportRow] = []
    /// Each row's group (its dimensions, then its event).
    private var keys: [[DimensionValue]] = []
    /// The position of each group in `rows`, built at the first revenue row.
    private var positions: [[DimensionValue]: Int]?
    private var currencies = Set<String>()

    init(_ query: ReportQuery) {
        self.query = query
    }

    /// A row of ``ReportSQL/metrics``: the group's values, then the sums (nil: SUM over no rows).
    mutating func addMetrics(_ key: [DimensionValue], _ sums: [Int64?]) {
        if query.events {
            var row = ReportRow(dimensions: Array(key.prefix(query.dimensions.count)))
            if case .text(let name) = key.last { row.event = name }
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

    /// A row of ``ReportSQL/revenue``.
    mutating func addRevenue(_ key: [DimensionValue], currency: String, _ total: RevenueTotal) {
        currencies.insert(currency)
        if positions == nil {
            var built: [[DimensionValue]: Int] = [:]
            built.reserveCapacity(keys.count)
            for (position, key) in keys.enumerated() { built[key] = position }
            positions = built
        }
        guard let position = positions?[key] else { return }
        rows[position].revenue[currency] = total
    }

    func report(policy: String?) -> Report {
        var ordered = rows
        if !query.events, !query.countsOnly, let tier = query.dimensions.firstIndex(of: .crowdAnonymityTier) {
            func others(_ row: ReportRow) -> [DimensionValue] {
                var values = row.dimensions
                values.remove(at: tier)
                return values
            }
            var totals: [[DimensionValue]: Int] = [:]
            for row in ordered where row.dimensions[tier] != .null {
                totals[others(row), default: 0] += row.productionPostbacks
            }
            for index in ordered.indices where ordered[index].dimensions[tier] != .null {
                let total = totals[others(ordered[index])] ?? 0
                ordered[index].tierShare = total > 0 ? Double(ordered[index].productionPostbacks) / Double(total) : nil
            }
        }
        return Report(
            dimensions: query.dimensions,
            events: query.events,
            rows: ordered,
            currencies: currencies.sorted(),
            policy: policy
        )
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
    staleRows: Bool = false
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
            "some aggregate rows were computed before install dates, crowd-anonymity tiers and campaigns were stored; run postbackd aggregate (every day) to recompute them"
        )
    }
    // A mapping applies to every day: only a run over every day since applies it everywhere.
    if let lastMappingChange, lastMappingChange > (lastWholeAggregate ?? "") {
        warnings.append(
            "campaign mappings changed after the last aggregate run over every day; run postbackd aggregate to apply them"
        )
    }
    return warnings.isEmpty ? nil : warnings.joined(separator: "\n")
}
