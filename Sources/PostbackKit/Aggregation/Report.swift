import GRDB

/// The count metrics of a report row, in the order they are shown.
public enum ReportMetric: String, Sendable, CaseIterable {
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
}

/// Revenue in one currency: the range and the point estimate, in currency units.
public struct RevenueTotal: Sendable, Hashable {
    public var min: Double
    public var max: Double
    public var estimate: Double

    public init(min: Double, max: Double, estimate: Double) {
        self.min = min
        self.max = max
        self.estimate = estimate
    }
}

/// One row of a report: its dimension values, and either the count metrics or one event's.
public struct ReportRow: Sendable {
    /// Dimension values in the report's dimension order (`nil` is SQL NULL).
    public var dimensions: [DimensionValue]
    /// Count metrics (not for `--events` rows).
    public var counts: [ReportMetric: Int] = [:]
    /// `--events` rows: the event and its sums.
    public var event: String?
    public var occurrencesMin: Int = 0
    public var occurrencesMax: Int = 0
    /// `--events` rows: postbacks with the event.
    public var eventPostbacks: Int = 0
    /// Revenue by currency code.
    public var revenue: [String: RevenueTotal] = [:]
}

/// A dimension value as stored: text, integer, or NULL.
public enum DimensionValue: Sendable, Hashable, Comparable {
    case null
    case integer(Int64)
    case text(String)

    init(_ value: DatabaseValue) {
        switch value.storage {
        case .int64(let number): self = .integer(number)
        case .string(let text): self = .text(text)
        case .double(let number): self = .integer(Int64(number))
        default: self = .null
        }
    }
}

/// `postbackd report`: sums the aggregate rows over a period, grouped by chosen dimensions.
public struct Report: Sendable {
    public var dimensions: [AggregateDimension]
    public var events: Bool
    public var rows: [ReportRow]
    /// Every currency with revenue in the report, sorted.
    public var currencies: [String]
    /// The revenue estimate policy of the aggregate runs the rows come from.
    public var policy: String?

    /// Reads the report from the database.
    public static func read(
        _ queue: DatabaseQueue,
        from: UTCDay?,
        to: UTCDay?,
        by dimensions: [AggregateDimension],
        events: Bool
    ) throws -> Report {
        try queue.read { db in
            var conditions: [String] = []
            var arguments: [(any DatabaseValueConvertible)?] = []
            if let from {
                conditions.append("date >= ?")
                arguments.append(from.description)
            }
            if let to {
                conditions.append("date <= ?")
                arguments.append(to.description)
            }
            let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            let dimensionColumns = dimensions.map(\.column)
            let groupColumns = dimensionColumns + (events ? ["event"] : [])
            let select = groupColumns.joined(separator: ", ")
            let group = groupColumns.isEmpty ? "" : "GROUP BY " + select
            let order = groupColumns.isEmpty ? "" : "ORDER BY " + select
            let prefix = select.isEmpty ? "" : select + ", "

            var rows: [[DimensionValue]: ReportRow] = [:]
            var keys: [[DimensionValue]] = []
            func key(_ row: Row, _ count: Int) -> [DimensionValue] {
                (0..<count).map { DimensionValue(row[$0] as DatabaseValue) }
            }
            let metrics = ReportMetric.allCases
            if events {
                let sql = """
                    SELECT \(prefix)SUM(occurrences_min), SUM(occurrences_max), SUM(postbacks)
                    FROM aggregate_daily_events \(filter) \(group) \(order)
                    """
                for row in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)) {
                    let rowKey = key(row, groupColumns.count)
                    var reportRow = ReportRow(dimensions: Array(rowKey.prefix(dimensions.count)))
                    if case .text(let name) = rowKey.last { reportRow.event = name }
                    reportRow.occurrencesMin = row[groupColumns.count]
                    reportRow.occurrencesMax = row[groupColumns.count + 1]
                    reportRow.eventPostbacks = row[groupColumns.count + 2]
                    rows[rowKey] = reportRow
                    keys.append(rowKey)
                }
            } else {
                let sums = metrics.map { "SUM(\($0.rawValue))" }.joined(separator: ", ")
                let sql = "SELECT \(prefix)\(sums) FROM aggregate_daily \(filter) \(group) \(order)"
                for row in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)) {
                    let rowKey = key(row, groupColumns.count)
                    // SUM over no rows is NULL: a report over an empty period has no rows.
                    if (row[groupColumns.count] as Int?) == nil { continue }
                    var reportRow = ReportRow(dimensions: rowKey)
                    for (index, metric) in metrics.enumerated() {
                        reportRow.counts[metric] = row[groupColumns.count + index]
                    }
                    rows[rowKey] = reportRow
                    keys.append(rowKey)
                }
            }
            var currencies = Set<String>()
            let revenueTable = events ? "aggregate_daily_event_revenue" : "aggregate_daily_revenue"
            let revenueSQL = """
                SELECT \(prefix)currency, SUM(revenue_min), SUM(revenue_max), SUM(revenue_estimate)
                FROM \(revenueTable) \(filter) GROUP BY \(prefix)currency
                """
            for row in try Row.fetchAll(db, sql: revenueSQL, arguments: StatementArguments(arguments)) {
                let rowKey = key(row, groupColumns.count)
                let currency: String = row[groupColumns.count]
                currencies.insert(currency)
                rows[rowKey]?.revenue[currency] = RevenueTotal(
                    min: row[groupColumns.count + 1],
                    max: row[groupColumns.count + 2],
                    estimate: row[groupColumns.count + 3]
                )
            }
            let policies = try String.fetchAll(
                db,
                sql: "SELECT DISTINCT revenue_estimate FROM aggregate_runs ORDER BY id DESC LIMIT 1"
            )
            return Report(
                dimensions: dimensions,
                events: events,
                rows: keys.compactMap { rows[$0] },
                currencies: currencies.sorted(),
                policy: policies.first
            )
        }
    }

    /// A warning when postbacks were ingested after the last aggregate run (or never
    /// aggregated), so the report may be out of date.
    public static func stalenessWarning(_ queue: DatabaseQueue) throws -> String? {
        try queue.read { db in
            let lastAggregate = try String.fetchOne(db, sql: "SELECT MAX(run_at) FROM aggregate_runs")
            let lastIngest = try String.fetchOne(db, sql: "SELECT MAX(finished_at) FROM ingest_runs WHERE accepted > 0")
            guard let lastIngest else { return nil }
            guard let lastAggregate else {
                return "no aggregate rows yet: run postbackd aggregate first"
            }
            return lastIngest > lastAggregate
                ? "postbacks were ingested after the last aggregate run (\(lastAggregate)); run postbackd aggregate to include them"
                : nil
        }
    }
}

extension Report {
    /// `postbackd report`: the report and, when the aggregates may be out of date, a warning.
    public static func read(
        databasePath: String,
        from: UTCDay?,
        to: UTCDay?,
        by dimensions: [AggregateDimension],
        events: Bool
    ) throws -> (report: Report, warning: String?) {
        let queue = try PostbackDatabase.open(databasePath)
        return (try read(queue, from: from, to: to, by: dimensions, events: events), try stalenessWarning(queue))
    }
}
