import GRDB

/// Which days `postbackd aggregate` recomputes.
public enum DaySelection: Sendable, Hashable {
    /// Every day that has postbacks.
    case all
    /// `from` through `to`, inclusive (UTC days of `received_at`).
    case range(from: UTCDay, to: UTCDay)
}

/// What one `postbackd aggregate` did.
public struct AggregateSummary: Sendable, Hashable {
    /// The days recomputed.
    public var days: [UTCDay] = []
    /// Stored postbacks read.
    public var postbacks = 0
    /// `aggregate_daily` rows written.
    public var rows = 0
    /// Apps that have postbacks in those days but no model.
    public var unmodelledApps: [Int64] = []
    public var seconds: Double = 0
    public var policy: RevenueEstimatePolicy = .midpoint

    /// For people.
    public var text: String {
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
    public var json: String {
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

/// Recomputes the daily aggregate rows from the stored postbacks and the current models.
///
/// Every metric's meaning (`installs`, `redownloads`, …) is in ``GroupMetrics``. A run deletes
/// and rewrites the rows of its days in one transaction, so it is idempotent, a changed model
/// plus a re-run corrects history, and a reader never sees half a day.
public struct DailyAggregator {
    public let queue: DatabaseQueue

    public init(queue: DatabaseQueue) {
        self.queue = queue
    }

    public func run(_ selection: DaySelection, policy: RevenueEstimatePolicy) throws -> AggregateSummary {
        let started = UTCInstant.now()
        var summary = AggregateSummary()
        summary.policy = policy
        try queue.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                summary = AggregateSummary()
                summary.policy = policy
                let stored = try ModelStore.current(db)
                let models = ConversionModels(stored.map(\.model))
                let days = try self.days(selection, db)
                summary.days = days
                var unmodelled = Set<Int64>()
                for table in Self.tables {
                    switch selection {
                    case .all:
                        try db.execute(sql: "DELETE FROM \(table)")
                    case .range(let from, let to):
                        try db.execute(
                            sql: "DELETE FROM \(table) WHERE date >= ? AND date <= ?",
                            arguments: [from.description, to.description]
                        )
                    }
                }
                for day in days {
                    var groups: [GroupKey: GroupMetrics] = [:]
                    var histogram: [HistogramKey: Int] = [:]
                    let rows = SQLiteRowReader(
                        try db.cachedStatement(sql: Self.selectPostbacks),
                        textArguments: [day.description]
                    )
                    while try rows.next(db) {
                        let postback = AggregatedPostback(rows)
                        summary.postbacks += 1
                        let decoded = models.decode(
                            appID: postback.appID,
                            value: postback.conversionValue,
                            sequenceIndex: postback.sequenceIndex
                        )
                        if case .unmodelled = decoded { unmodelled.insert(postback.appID) }
                        groups[GroupKey(day: day, postback), default: GroupMetrics()].add(postback, decoded)
                        if postback.countsInFineValueHistogram {
                            let key = HistogramKey(
                                appID: postback.appID,
                                network: postback.adNetworkID,
                                fine: postback.conversionValue?.fine
                            )
                            histogram[key, default: 0] += 1
                        }
                    }
                    summary.rows += groups.count
                    try write(db, groups, histogram, day: day, policy: policy)
                }
                summary.unmodelledApps = unmodelled.sorted()
                try db.execute(
                    sql: """
                        INSERT INTO aggregate_runs (run_at, first_day, last_day, days, postbacks, revenue_estimate, models, postbackd_version)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        UTCInstant.now().iso8601, days.first?.description, days.last?.description, days.count,
                        summary.postbacks, policy.rawValue,
                        "{" + stored.map { "\"\($0.model.appID)\":\"\($0.sha256)\"" }.joined(separator: ",") + "}",
                        PostbackdVersion.current,
                    ]
                )
                return .commit
            }
        }
        summary.seconds = Double(UTCInstant.now().milliseconds - started.milliseconds) / 1000
        return summary
    }

    static let tables = [
        "aggregate_daily", "aggregate_daily_revenue", "aggregate_daily_events", "aggregate_daily_event_revenue",
        "aggregate_fine_values",
    ]

    static let selectPostbacks = """
        SELECT app_id, ad_network_id, kind, key_space, version, campaign_id, source_identifier, source_app_id,
            source_domain, fidelity_type, redownload, did_win, postback_sequence_index, country_code, fine_value,
            coarse_value, conversion_type, marketplace_id
        FROM postbacks WHERE substr(received_at, 1, 10) = ?
        """

    private func days(_ selection: DaySelection, _ db: Database) throws -> [UTCDay] {
        switch selection {
        case .all:
            return try String.fetchAll(db, sql: "SELECT DISTINCT substr(received_at, 1, 10) FROM postbacks ORDER BY 1")
                .compactMap(UTCDay.init)
        case .range(let from, let to):
            guard from <= to else { return [] }
            return (from.daysSinceEpoch...to.daysSinceEpoch).map(UTCDay.init(daysSinceEpoch:))
        }
    }

    private func write(
        _ db: Database,
        _ groups: [GroupKey: GroupMetrics],
        _ histogram: [HistogramKey: Int],
        day: UTCDay,
        policy: RevenueEstimatePolicy
    ) throws {
        let dimensions = AggregateDimension.columnList
        let placeholders = Array(repeating: "?", count: AggregateDimension.allCases.count).joined(separator: ", ")
        let daily = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily (\(dimensions), postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled) VALUES (\(placeholders), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        let revenue = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily_revenue (\(dimensions), currency, revenue_min, revenue_max, revenue_estimate) VALUES (\(placeholders), ?, ?, ?, ?)"
        )
        let events = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily_events (\(dimensions), event, occurrences_min, occurrences_max, postbacks) VALUES (\(placeholders), ?, ?, ?, ?)"
        )
        let eventRevenue = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily_event_revenue (\(dimensions), event, currency, revenue_min, revenue_max, revenue_estimate) VALUES (\(placeholders), ?, ?, ?, ?, ?)"
        )
        // Sorted, so that the same inputs write the same rows in the same order.
        for (key, metrics) in groups.sorted(by: { $0.key < $1.key }) {
            var row = SQLiteBinder(daily)
            key.bind(into: &row)
            for count in [
                metrics.postbacks, metrics.installs, metrics.redownloads, metrics.reengagements, metrics.nonWinning,
                metrics.testMode, metrics.development, metrics.nullConversionValues, metrics.unmapped,
                metrics.unmodelled,
            ] {
                row.bind(count)
            }
            _ = try row.step(db)
            for (currency, range) in metrics.revenue.sorted(by: { $0.key < $1.key }) {
                var row = SQLiteBinder(revenue)
                key.bind(into: &row)
                range.bind(currency, policy, into: &row)
                _ = try row.step(db)
            }
            for (name, event) in metrics.events.sorted(by: { $0.key < $1.key }) {
                var row = SQLiteBinder(events)
                key.bind(into: &row)
                row.bind(name)
                row.bind(event.occurrencesMin)
                row.bind(event.occurrencesMax)
                row.bind(event.postbacks)
                _ = try row.step(db)
                for (currency, range) in event.revenue.sorted(by: { $0.key < $1.key }) {
                    var row = SQLiteBinder(eventRevenue)
                    key.bind(into: &row)
                    row.bind(name)
                    range.bind(currency, policy, into: &row)
                    _ = try row.step(db)
                }
            }
        }
        let fine = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_fine_values (date, app_id, ad_network_id, fine_value, postbacks) VALUES (?, ?, ?, ?, ?)"
        )
        for (key, count) in histogram.sorted(by: { $0.key < $1.key }) {
            try fine.execute(arguments: [day.description, key.appID, key.network, key.fine, count])
        }
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

    /// Reads the current row of ``DailyAggregator/selectPostbacks``.
    init(_ row: SQLiteRowReader) {
        appID = row.int64(0) ?? 0
        adNetworkID = row.text(1) ?? ""
        isAAK = row.text(2, is: "aak")
        keySpace = row.text(3) ?? ""
        version = row.text(4)
        campaignID = row.int64(5)
        sourceIdentifier = row.text(6)
        sourceAppID = row.int64(7)
        sourceDomain = row.text(8)
        fidelityType = row.int64(9)
        redownload = row.int64(10).map { $0 != 0 }
        didWin = row.int64(11).map { $0 != 0 }
        sequenceIndex = Int(row.int64(12) ?? 0)
        countryCode = row.text(13)
        let fine = row.int64(14).map { Int($0) }
        let coarse = row.text(15)
        conversionValue =
            fine.map { .fine($0) } ?? coarse.flatMap(CoarseConversionValue.init(rawValue:)).map { .coarse($0) }
        conversionType = row.text(16)
        marketplaceID = row.text(17)
    }

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

/// The dimensions of one aggregate row.
struct GroupKey: Hashable, Comparable {
    var date: String
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

    init(day: UTCDay, _ postback: AggregatedPostback) {
        date = day.description
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
    }

    /// Binds the dimensions in ``AggregateDimension`` order.
    func bind(into row: inout SQLiteBinder) {
        row.bind(date)
        row.bind(appID)
        row.bind(adNetworkID)
        row.bind(sourceIdentifier)
        row.bind(sourceAppID)
        row.bind(sourceDomain)
        row.bind(version)
        row.bind(fidelityType)
        row.bind(redownload)
        row.bind(didWin)
        row.bind(sequenceIndex)
        row.bind(countryCode)
        row.bind(marketplaceID)
    }

    static func < (lhs: GroupKey, rhs: GroupKey) -> Bool {
        // Integers before strings (cheaper), nil before any value.
        var order = compare(lhs.appID, rhs.appID)
        if order == 0 { order = compare(lhs.sequenceIndex, rhs.sequenceIndex) }
        if order == 0 { order = compare(lhs.sourceAppID, rhs.sourceAppID) }
        if order == 0 { order = compare(lhs.fidelityType, rhs.fidelityType) }
        if order == 0 { order = compare(lhs.redownload.map { $0 ? 1 : 0 }, rhs.redownload.map { $0 ? 1 : 0 }) }
        if order == 0 { order = compare(lhs.didWin.map { $0 ? 1 : 0 }, rhs.didWin.map { $0 ? 1 : 0 }) }
        if order == 0 { order = compare(lhs.date, rhs.date) }
        if order == 0 { order = compare(lhs.adNetworkID, rhs.adNetworkID) }
        if order == 0 { order = compare(lhs.sourceIdentifier, rhs.sourceIdentifier) }
        if order == 0 { order = compare(lhs.sourceDomain, rhs.sourceDomain) }
        if order == 0 { order = compare(lhs.version, rhs.version) }
        if order == 0 { order = compare(lhs.countryCode, rhs.countryCode) }
        if order == 0 { order = compare(lhs.marketplaceID, rhs.marketplaceID) }
        return order < 0
    }
}

/// -1, 0 or 1 as `a` sorts before, with or after `b`; nil sorts first.
@inline(__always)
private func compare<T: Comparable>(_ a: T?, _ b: T?) -> Int {
    switch (a, b) {
    case (nil, nil): 0
    case (nil, _): -1
    case (_, nil): 1
    case (let a?, let b?): a < b ? -1 : a == b ? 0 : 1
    }
}

struct HistogramKey: Hashable, Comparable {
    var appID: Int64
    var network: String
    var fine: Int?

    static func < (lhs: HistogramKey, rhs: HistogramKey) -> Bool {
        (lhs.appID, lhs.network, lhs.fine ?? -1) < (rhs.appID, rhs.network, rhs.fine ?? -1)
    }
}

/// Revenue sums in micros.
struct RevenueSum {
    var minMicros: Int64 = 0
    var maxMicros: Int64 = 0

    /// Binds `currency`, the minimum, the maximum and the estimate, in currency units.
    func bind(_ currency: String, _ policy: RevenueEstimatePolicy, into row: inout SQLiteBinder) {
        row.bind(currency)
        row.bind(units(Double(minMicros)))
        row.bind(units(Double(maxMicros)))
        row.bind(units(policy.estimate(minMicros: minMicros, maxMicros: maxMicros)))
    }
}

/// One event's sums within a group.
struct EventSum {
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
struct GroupMetrics {
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

    mutating func add(_ postback: AggregatedPostback, _ decoded: DecodedConversionValue) {
        postbacks += 1
        if postback.didWin == false { nonWinning += 1 }
        if postback.isTestMode { testMode += 1 }
        if postback.isDevelopment { development += 1 }
        if postback.isWinning && postback.conversionValue == nil { nullConversionValues += 1 }
        switch decoded {
        case .unmapped: unmapped += 1
        case .unmodelled: unmodelled += 1
        case .mapped, .null: break
        }
        guard postback.isProduction, postback.isWinning else { return }
        if postback.sequenceIndex == 0 {
            if postback.conversionType == AAKConversionType.reengagement.rawValue {
                reengagements += 1
            } else if postback.redownload == true {
                redownloads += 1
            } else {
                installs += 1
            }
        }
        guard case .mapped(let mapped) = decoded else { return }
        var seen = Set<String>()
        for event in mapped {
            var sum = events[event.name, default: EventSum()]
            sum.occurrencesMin += event.occurrences.min
            sum.occurrencesMax += event.occurrences.max
            if seen.insert(event.name).inserted { sum.postbacks += 1 }
            if let range = event.revenue {
                sum.revenue[range.currency, default: RevenueSum()].minMicros += range.minMicros
                sum.revenue[range.currency, default: RevenueSum()].maxMicros += range.maxMicros
                revenue[range.currency, default: RevenueSum()].minMicros += range.minMicros
                revenue[range.currency, default: RevenueSum()].maxMicros += range.maxMicros
            }
            events[event.name] = sum
        }
    }
}

extension DailyAggregator {
    /// `postbackd aggregate`: opens the database and recomputes the selected days.
    public static func run(
        databasePath: String,
        _ selection: DaySelection,
        policy: RevenueEstimatePolicy
    ) throws -> AggregateSummary {
        let queue = try PostbackDatabase.open(databasePath)
        // Reading a day's postbacks jumps around the table (rows are stored in arrival order,
        // days interleave); mapping the file spares a system call and a copy per page.
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA mmap_size = 17179869184") }
        return try DailyAggregator(queue: queue).run(selection, policy: policy)
    }
}
