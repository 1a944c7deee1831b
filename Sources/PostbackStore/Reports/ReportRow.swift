import PostbackKit

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
    /// The installs networks claim for the row's group (`report --with-claims`); nil: no
    /// claim row joins it.
    package var claimedInstalls: Int?

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

extension ReportRow {
    /// A row of these dimensions with nothing counted yet.
    package init(dimensions: [DimensionValue]) {
        self.dimensions = dimensions
    }
}

extension ReportRow {
    /// Claimed installs minus verified ones (``ReportMetric/installs``): nil without a claim.
    package var claimGap: Int? { claimedInstalls.map { $0 - (counts[.installs] ?? 0) } }

    /// Verified installs over claimed ones: nil without a claim, or a claim of 0.
    package var claimCoverage: Double? {
        guard let claimed = claimedInstalls, claimed > 0 else { return nil }
        return Double(counts[.installs] ?? 0) / Double(claimed)
    }
}
