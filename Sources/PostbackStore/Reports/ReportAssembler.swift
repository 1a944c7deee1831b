import PostbackKit

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
