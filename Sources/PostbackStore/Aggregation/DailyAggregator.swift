import PostbackKit

/// Which days `postbackd aggregate` recomputes.
package enum DaySelection: Sendable, Hashable {
    /// Every day that has postbacks.
    case all
    /// `from` through `to`, inclusive (UTC days of `received_at`).
    case range(from: UTCDay, to: UTCDay)

    /// The first and last day; nil (unbounded) for ``all``.
    var bounds: (from: UTCDay?, to: UTCDay?) {
        switch self {
        case .all: (nil, nil)
        case .range(let from, let to): (from, to)
        }
    }

    /// The days of a range, in order; empty for ``all``, whose days the store knows.
    var days: [UTCDay] {
        guard case .range(let from, let to) = self, from <= to else { return [] }
        return (from.daysSinceEpoch...to.daysSinceEpoch).map(UTCDay.init(daysSinceEpoch:))
    }
}

/// What one `postbackd aggregate` did.
package struct AggregateSummary: Sendable, Hashable {
    /// The days recomputed.
    package var days: [UTCDay] = []
    /// Stored postbacks read.
    package var postbacks = 0
    /// `aggregate_daily` rows written.
    package var rows = 0
    /// Apps that have postbacks in those days but no model.
    var unmodelledApps: [Int64] = []
    package var seconds: Double = 0
    package var policy: RevenueEstimatePolicy = .midpoint

    /// For people.
    package var text: String {
        let span =
            days.isEmpty
            ? "no days" : days.count == 1 ? "\(days[0])" : "\(days.count) days, \(days[0]) to \(days[days.count - 1])"
        var line =
            "aggregated \(formatCount(postbacks)) postbacks over \(span) into \(formatCount(rows)) rows in \(formatSeconds(seconds)) (revenue estimate: \(policy.rawValue))"
        if !unmodelledApps.isEmpty {
            line +=
                "\nno conversion model for app\(unmodelledApps.count == 1 ? "" : "s") \(unmodelledApps.map(String.init).joined(separator: ", ")): their postbacks are counted as unmodelled (postbackd models add FILE)"
        }
        return line
    }

    /// As one JSON object.
    package var json: String {
        var object = JSONObjectWriter()
        object.add("days", strings: days.map(\.description))
        object.add("postbacks", postbacks)
        object.add("rows", rows)
        object.add("unmodelled_apps", strings: unmodelledApps.map(String.init))
        object.add("revenue_estimate", policy.rawValue)
        object.add("seconds", (seconds * 1000).rounded() / 1000)
        return object.text
    }
}

/// `postbackd aggregate`: recomputes the daily aggregate rows from the stored postbacks and
/// the current models.
///
/// Every metric's meaning (`installs`, `redownloads`, …) is in ``GroupMetrics``. A run replaces
/// the rows of its days in one transaction, so it is idempotent, a changed model plus a re-run
/// corrects history, and a reader never sees half a run. The grouping and decoding are the same
/// code for every engine (``DayAggregation``); each engine reads postbacks and writes rows its
/// own fastest way.
package enum DailyAggregator {
    package static func run(
        _ location: StoreLocation,
        _ selection: DaySelection,
        policy: RevenueEstimatePolicy
    ) async throws -> AggregateSummary {
        try await PostbackStores.with(location) { store in
            try await store.aggregate(selection, policy: policy)
        }
    }

    static let tables =
        [
            "aggregate_daily", "aggregate_daily_revenue", "aggregate_daily_events", "aggregate_daily_event_revenue",
            "aggregate_fine_values", "aggregate_daily_intake", "aggregate_daily_totals",
            "aggregate_daily_totals_revenue",
            "aggregate_fine_value_totals",
        ] + DashboardTable.all.filter { $0.basis == .received }.flatMap { [$0.name, $0.name + "_revenue"] }

    /// The tables by install date: a run over some days received replaces their rows for the
    /// install dates those days can hold (``dashboardStatements(_:)``), not by `date`.
    static let installTables = DashboardTable.all.filter { $0.basis == .install }.flatMap {
        [$0.name, $0.name + "_revenue"]
    }

    /// The dimensions of `aggregate_daily_totals` and `aggregate_daily_totals_revenue`: the
    /// day's groups summed over every other dimension. A report by these alone (the dashboard's,
    /// the default one) reads them: a few hundred rows a day instead of one per combination of
    /// every dimension.
    static let totalsDimensions: [AggregateDimension] = [
        .date, .appID, .adNetworkID, .installDate, .crowdAnonymityTier,
    ]

    /// The totals columns: dimensions, then the counts.
    static var totalsColumns: String {
        totalsDimensions.map(\.column).joined(separator: ", ") + ", " + GroupMetrics.countColumns
    }

    /// The totals revenue columns.
    static var totalsRevenueColumns: String {
        totalsDimensions.map(\.column).joined(separator: ", ")
            + ", currency, revenue_min, revenue_max, revenue_estimate"
    }

    /// `column` within the days `from...to` (either nil: unbounded on that side).
    static func within(_ column: String, _ bounds: (from: UTCDay?, to: UTCDay?)) -> SQLQuery {
        switch (bounds.from, bounds.to) {
        case (nil, nil): "TRUE"
        case (let from?, nil): "\(raw: column) >= \(from)"
        case (nil, let to?): "\(raw: column) <= \(to)"
        case (let from?, let to?): "\(raw: column) >= \(from) AND \(raw: column) <= \(to)"
        }
    }

    /// What a run over `selection` deletes before it writes the days' rows: every table's rows
    /// of those days received (``tables``).
    static func deleteStatements(_ selection: DaySelection) -> [SQLQuery] {
        tables.map { table in
            selection == .all
                ? "DELETE FROM \(raw: table)" : "DELETE FROM \(raw: table) WHERE \(within("date", selection.bounds))"
        }
    }

    /// What a run over `selection` fills from the rows it wrote, in order: the intake, the
    /// fine-value totals and the dashboard's tables (``dashboardStatements(_:)``).
    static func fillStatements(_ selection: DaySelection) -> [SQLQuery] {
        [intakeStatement(selection.bounds), fineValueTotalsStatement(selection.bounds)]
            + dashboardStatements(selection)
    }

    /// Fills `aggregate_daily_intake` for the days received within `bounds`.
    ///
    /// `quarantined` sums `received_count` (a body `serve` refused again and again is one row);
    /// a count is on the day its row was first received.
    static func intakeStatement(_ bounds: (from: UTCDay?, to: UTCDay?)) -> SQLQuery {
        """
        INSERT INTO aggregate_daily_intake (date, quarantined, duplicates, conflicts)
        SELECT day, SUM(quarantined), SUM(duplicates), SUM(conflicts) FROM (
            SELECT \(SQLQuery.receivedDay) AS day, received_count AS quarantined, 0 AS duplicates, 0 AS conflicts FROM quarantine
            UNION ALL
            SELECT \(SQLQuery.receivedDay), 0, 1, CASE WHEN conflict THEN 1 ELSE 0 END FROM sightings
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

    /// A sum of currency amounts exact to `scale`, in SQL both engines read: micros (`1000000`)
    /// or half-micros (`2000000`, for an estimate, which a midpoint can end on).
    static func exactSum(_ column: String, scale: String) -> String {
        "CAST(SUM(CAST(ROUND(\(column) * \(scale)) AS BIGINT)) AS DOUBLE PRECISION) / \(scale).0"
    }

    /// What a run over `selection` does to the dashboard's tables, after the totals are
    /// written. By day received, the run's days (their old rows are gone with ``tables``); by
    /// install date, the install dates those days can hold, deleted and filled again.
    static func dashboardStatements(_ selection: DaySelection) -> [SQLQuery] {
        let install = installBounds(selection)
        return dashboardFills(.received, selection.bounds)
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
    /// widened by a day each side. nil bounds for a run over every day.
    private static func installBounds(_ selection: DaySelection) -> (from: UTCDay?, to: UTCDay?) {
        guard case .range(let from, let to) = selection else { return (nil, nil) }
        let days = PostbackInference.installDays(forReceivedDays: from, to)
        return (
            UTCDay(daysSinceEpoch: days.from.daysSinceEpoch - 1),
            UTCDay(daysSinceEpoch: days.to.daysSinceEpoch + 1)
        )
    }

    /// The run's row in `aggregate_runs`.
    static func runRecord(
        _ summary: AggregateSummary,
        stored: [StoredModel],
        selection: DaySelection
    ) -> SQLQuery {
        """
        INSERT INTO aggregate_runs (run_at, first_day, last_day, days, postbacks, revenue_estimate, models, postbackd_version, dimensions, whole)
        VALUES (\(UTCInstant.now()), \(summary.days.first), \(summary.days.last), \(summary.days.count),
            \(summary.postbacks), \(summary.policy.rawValue), \(modelsJSON(stored))\(sqlite: "", postgres: "::jsonb"),
            \(PostbackdVersion.current), \(AggregateDimension.columnList), \(selection == .all))
        """
    }

    /// `aggregate_runs.models`: the model digest of each app, as a JSON object.
    static func modelsJSON(_ stored: [StoredModel]) -> String {
        "{" + stored.map { "\"\($0.model.appID)\":\"\($0.sha256)\"" }.joined(separator: ",") + "}"
    }
}

/// A table of the dashboard: the totals summed over the other date, by one date (received, or
/// install), network and tier, with or without the app.
///
/// The dashboard's reports and any report by those dimensions alone read the smallest that
/// holds them: a year of the bench's four apps is 141,229 totals rows, 51,681 by day received
/// and app, 14,580 by day received alone. Without the app, a dashboard's rows do not grow with
/// the apps a network serves.
struct DashboardTable: Hashable, Sendable {
    let basis: DateBasis
    let byApp: Bool

    init(_ basis: DateBasis, byApp: Bool) {
        self.basis = basis
        self.byApp = byApp
    }

    /// With the app first: each table without it is filled from the one with it.
    static let all = DateBasis.allCases.flatMap { basis in [true, false].map { DashboardTable(basis, byApp: $0) } }

    /// `aggregate_dashboard_received`, `aggregate_dashboard_install_by_app`, …; its revenue
    /// table is the same name with `_revenue`.
    var name: String { "aggregate_dashboard_\(basis.rawValue)" + (byApp ? "_by_app" : "") }

    /// `date` or `install_date`.
    var day: AggregateDimension { basis == .received ? .date : .installDate }

    var dimensions: [AggregateDimension] { [day] + (byApp ? [.appID] : []) + [.adNetworkID, .crowdAnonymityTier] }

    /// What it is summed from: the totals, or the table with the app.
    private var summedFrom: String { byApp ? "aggregate_daily_totals" : DashboardTable(basis, byApp: true).name }

    /// Whether it holds a report by `query`'s dimensions and filters.
    func holds(_ query: ReportQuery) -> Bool {
        query.dateBasis == basis && query.dimensions.allSatisfy(dimensions.contains) && (byApp || query.appIDs.isEmpty)
    }

    /// Fills it and its revenue for the days within `bounds` (see
    /// ``DailyAggregator/dashboardStatements(_:)``).
    func fillStatements(_ bounds: (from: UTCDay?, to: UTCDay?)) -> [SQLQuery] {
        let keys = dimensions.map(\.column).joined(separator: ", ")
        let within = DailyAggregator.within(day.column, bounds)
        let condition: SQLQuery = basis == .install ? "(\(raw: day.column) IS NULL OR (\(within)))" : within
        return [
            """
            INSERT INTO \(raw: name) (\(raw: keys), \(raw: GroupMetrics.countColumns))
            SELECT \(raw: keys), \(raw: GroupMetrics.countSums) FROM \(raw: summedFrom) WHERE \(condition) GROUP BY \(raw: keys)
            """,
            """
            INSERT INTO \(raw: name)_revenue (\(raw: keys), currency, revenue_min, revenue_max, revenue_estimate)
            SELECT \(raw: keys), currency, \(raw: DailyAggregator.exactSum("revenue_min", scale: "1000000")), \(raw: DailyAggregator.exactSum("revenue_max", scale: "1000000")), \(raw: DailyAggregator.exactSum("revenue_estimate", scale: "2000000"))
            FROM \(raw: summedFrom)_revenue WHERE \(condition) GROUP BY \(raw: keys), currency
            """,
        ]
    }
}

/// One day's groups and fine-value histogram, computed from its stored postbacks.
struct DayAggregation: Sendable {
    let day: UTCDay
    let models: ConversionModels
    let campaigns: CampaignMappings
    var groups: [GroupKey: GroupMetrics] = [:]
    var histogram: [HistogramKey: Int] = [:]
    /// Postbacks added.
    var postbacks = 0
    /// Apps whose postbacks had no model.
    var unmodelled = Set<Int64>()

    /// `expectedGroups`: room to reserve (e.g. the previous day's group count), sparing the
    /// dictionary's regrowth, which rehashes every key.
    init(day: UTCDay, models: ConversionModels, campaigns: CampaignMappings, expectedGroups: Int = 0) {
        self.day = day
        self.models = models
        self.campaigns = campaigns
        groups.reserveCapacity(expectedGroups)
    }

    /// Adds `postback` (`postback.count` identical ones, when the engine grouped them).
    mutating func add(_ postback: AggregatedPostback) {
        postbacks += postback.count
        let decoded = models.decode(
            appID: postback.appID,
            value: postback.conversionValue,
            sequenceIndex: postback.sequenceIndex
        )
        if case .unmodelled = decoded { unmodelled.insert(postback.appID) }
        let mapping = postback.installDate.flatMap {
            campaigns.lookup(
                network: postback.adNetworkID,
                identifier: postback.sourceIdentifierDimension,
                installDate: $0
            )
        }
        groups[GroupKey(postback, mapping: mapping), default: GroupMetrics()].add(postback, decoded)
        if postback.countsInFineValueHistogram {
            let key = HistogramKey(
                appID: postback.appID,
                network: postback.adNetworkID,
                fine: postback.conversionValue?.fine
            )
            histogram[key, default: 0] += postback.count
        }
    }

    var sortedHistogram: [(key: HistogramKey, value: Int)] { histogram.sorted { $0.key < $1.key } }

    /// The groups summed over every dimension but ``DailyAggregator/totalsDimensions``: the
    /// rows of `aggregate_daily_totals` (counts, revenue; no events). Revenue sums micros, so the
    /// totals equal the sums of the detailed rows exactly, and every estimate policy is linear.
    func totals() -> [TotalsKey: GroupMetrics] {
        var totals: [TotalsKey: GroupMetrics] = [:]
        for (key, metrics) in groups {
            totals[TotalsKey(key), default: GroupMetrics()].merge(metrics)
        }
        return totals
    }
}

/// A row of `aggregate_daily_totals` within its day.
struct TotalsKey: Hashable, Sendable {
    var appID: Int64
    var adNetworkID: String
    var installDate: UTCDay?
    var crowdAnonymityTier: Int?

    init(_ key: GroupKey) {
        appID = key.appID
        adNetworkID = key.adNetworkID
        installDate = key.installDate
        crowdAnonymityTier = key.crowdAnonymityTier
    }
}

/// The columns of a stored postback that aggregation reads.
struct AggregatedPostback {
    var appID: Int64
    var adNetworkID: String
    var isAAK: Bool
    var keySpace: String
    var version: String?
    var campaignID: Int64?
    var sourceIdentifier: String?
    var sourceAppID: Int64?
    var sourceDomain: String?
    var fidelityType: Int64?
    var redownload: Bool?
    var didWin: Bool?
    var sequenceIndex: Int
    var countryCode: String?
    var conversionValue: ConversionValue?
    var conversionType: String?
    var marketplaceID: String?
    /// The stored inferences (``PostbackInference``).
    var installDate: UTCDay?
    var crowdAnonymityTier: Int?
    var sourceIdentifierDigits: Int?
    /// How many identical postbacks this row stands for (an engine may group them in SQL).
    var count = 1

    var isProduction: Bool { keySpace == KeySpace.production.rawValue }
    var isTestMode: Bool { keySpace == KeySpace.test.rawValue }
    var isDevelopment: Bool { keySpace == KeySpace.development.rawValue }

    /// `did-win` true, or no `did-win` at all (before 3.0, every postback is the winner's).
    var isWinning: Bool { didWin ?? true }

    /// The `source_identifier` dimension: the 4.0 or AdAttributionKit source identifier, or
    /// the campaign id as a string before 4.0.
    var sourceIdentifierDimension: String? {
        sourceIdentifier ?? campaignID.map { String($0) }
    }

    /// Whether the fine-value histogram counts it: winning production postbacks without a
    /// coarse value, bucketed by fine value (NULL for no value at all).
    var countsInFineValueHistogram: Bool {
        isProduction && isWinning && conversionValue?.coarse == nil
    }
}

/// The dimensions of one aggregate row within its day (``DayAggregation/day`` is its date).
struct GroupKey: Hashable, Sendable {
    var appID: Int64
    var adNetworkID: String
    var sourceIdentifier: String?
    var sourceAppID: Int64?
    var sourceDomain: String?
    var version: String?
    var fidelityType: Int64?
    var redownload: Bool?
    var didWin: Bool?
    var sequenceIndex: Int
    var countryCode: String?
    var marketplaceID: String?
    var installDate: UTCDay?
    var crowdAnonymityTier: Int?
    var sourceIdentifierDigits: Int?
    /// The campaign mapping row (an index into ``CampaignMappings/rows``), if any.
    var mapping: Int?

    init(_ postback: AggregatedPostback, mapping: Int?) {
        appID = postback.appID
        adNetworkID = postback.adNetworkID
        sourceIdentifier = postback.sourceIdentifierDimension
        sourceAppID = postback.sourceAppID
        sourceDomain = postback.sourceDomain
        version = postback.version
        fidelityType = postback.fidelityType
        redownload = postback.redownload
        didWin = postback.didWin
        sequenceIndex = postback.sequenceIndex
        countryCode = postback.countryCode
        marketplaceID = postback.marketplaceID
        installDate = postback.installDate
        crowdAnonymityTier = postback.crowdAnonymityTier
        sourceIdentifierDigits = postback.sourceIdentifierDigits
        self.mapping = mapping
    }
}

struct HistogramKey: Hashable, Comparable, Sendable {
    var appID: Int64
    var network: String
    var fine: Int?

    static func < (lhs: HistogramKey, rhs: HistogramKey) -> Bool {
        (lhs.appID, lhs.network, lhs.fine ?? -1) < (rhs.appID, rhs.network, rhs.fine ?? -1)
    }
}

/// Revenue sums in micros.
struct RevenueSum: Sendable {
    var minMicros: Int64 = 0
    var maxMicros: Int64 = 0
}

/// One event's sums within a group.
struct EventSum: Sendable {
    var occurrencesMin: Int64 = 0
    var occurrencesMax: Int64 = 0
    var postbacks = 0
    var revenue: [String: RevenueSum] = [:]
}

/// The metrics of one aggregate row, with these exact meanings:
///
/// - `postbacks`: stored (non-duplicate) postbacks in the group;
/// - `installs`: winning (`did-win` true, or no `did-win` before 3.0), sequence index 0,
///   production (not test-mode, not an AdAttributionKit development key), `redownload` false
///   or absent, and not an AdAttributionKit re-engagement;
/// - `redownloads`: the same with `redownload` true (AdAttributionKit: conversion type
///   `redownload`);
/// - `reengagements`: the same for an AdAttributionKit conversion type `re-engagement`;
/// - `non_winning`: `did-win` false;
/// - `test_mode`: test-mode postbacks (never counted in installs or revenue);
/// - `development`: AdAttributionKit development-key postbacks (never counted in installs or
///   revenue);
/// - `null_conversion_values`: winning postbacks with neither a fine nor a coarse value;
/// - `unmapped`: postbacks with a value their app's model does not map;
/// - `unmodelled`: postbacks of an app that has no model;
/// - revenue per currency, and events: from winning production postbacks of every sequence
///   index, through the app's model.
struct GroupMetrics: Sendable {
    var postbacks = 0
    var installs = 0
    var redownloads = 0
    var reengagements = 0
    var nonWinning = 0
    var testMode = 0
    var development = 0
    var nullConversionValues = 0
    var unmapped = 0
    var unmodelled = 0
    var revenue: [String: RevenueSum] = [:]
    var events: [String: EventSum] = [:]

    /// The counts in the `aggregate_daily` column order after the dimensions.
    var counts: [Int] {
        [
            postbacks, installs, redownloads, reengagements, nonWinning, testMode, development, nullConversionValues,
            unmapped, unmodelled,
        ]
    }

    /// Adds `other`'s counts and revenue (not its events).
    mutating func merge(_ other: GroupMetrics) {
        postbacks += other.postbacks
        installs += other.installs
        redownloads += other.redownloads
        reengagements += other.reengagements
        nonWinning += other.nonWinning
        testMode += other.testMode
        development += other.development
        nullConversionValues += other.nullConversionValues
        unmapped += other.unmapped
        unmodelled += other.unmodelled
        for (currency, sum) in other.revenue {
            revenue[currency, default: RevenueSum()].minMicros += sum.minMicros
            revenue[currency, default: RevenueSum()].maxMicros += sum.maxMicros
        }
    }

    /// The `aggregate_daily` count columns, in ``counts`` order.
    static let countColumns =
        "postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled"

    /// The count columns one by one.
    private static var countColumnNames: [String] {
        countColumns.split(separator: ",").map { String($0.withoutSurroundingSpaces) }
    }

    /// `SUM(postbacks), SUM(installs), …`: the count columns summed, in order.
    static var countSums: String { countColumnNames.map { "SUM(\($0))" }.joined(separator: ", ") }

    /// Adds `postback.count` copies of `postback`, whose value decodes to `decoded`.
    mutating func add(_ postback: AggregatedPostback, _ decoded: DecodedConversionValue) {
        let count = postback.count
        postbacks += count
        if postback.didWin == false { nonWinning += count }
        if postback.isTestMode { testMode += count }
        if postback.isDevelopment { development += count }
        if postback.isWinning && postback.conversionValue == nil { nullConversionValues += count }
        switch decoded {
        case .unmapped: unmapped += count
        case .unmodelled: unmodelled += count
        case .mapped, .null: break
        }
        guard postback.isProduction, postback.isWinning else { return }
        if postback.sequenceIndex == 0 {
            if postback.conversionType == AAKConversionType.reengagement.rawValue {
                reengagements += count
            } else if postback.redownload == true {
                redownloads += count
            } else {
                installs += count
            }
        }
        guard case .mapped(let mapped) = decoded else { return }
        let times = Int64(count)
        var seen = Set<String>()
        for event in mapped {
            var sum = events[event.name, default: EventSum()]
            sum.occurrencesMin += Int64(event.occurrences.min) * times
            sum.occurrencesMax += Int64(event.occurrences.max) * times
            if seen.insert(event.name).inserted { sum.postbacks += count }
            if let range = event.revenue {
                sum.revenue[range.currency, default: RevenueSum()].minMicros += range.minMicros * times
                sum.revenue[range.currency, default: RevenueSum()].maxMicros += range.maxMicros * times
                revenue[range.currency, default: RevenueSum()].minMicros += range.minMicros * times
                revenue[range.currency, default: RevenueSum()].maxMicros += range.maxMicros * times
            }
            events[event.name] = sum
        }
    }
}
