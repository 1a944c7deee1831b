import PostbackKit

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
    /// `--with-claims`: each row's claimed installs, gap and coverage (``ReportRow/claimedInstalls``).
    package var showsClaims = false
    /// A report by install date: its rows judged final as of this instant (``Maturity``); nil:
    /// not judged (a report by day received, or without `install_date`).
    package var maturityAsOf: UTCInstant?
    /// `--cohorts`: the cohorts by install date, printed instead of ``rows``.
    package var cohortRows: [CohortRow]?
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
