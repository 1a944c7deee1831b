import PostbackKit

/// A table of the dashboard: the totals summed over the other date, by one date (received, or
/// install), network and tier, with or without the app.
///
/// The dashboard's reports and any report by those dimensions alone read the smallest that
/// holds them: a year of the bench's four apps is 141,229 totals rows, 51,681 by day received
/// and app, 14,580 by day received alone. Without the app, a dashboard's rows do not grow with
/// the apps a network serves.
package struct DashboardTable: Hashable, Sendable {
    package let basis: DateBasis
    package let byApp: Bool

    package init(_ basis: DateBasis, byApp: Bool) {
        self.basis = basis
        self.byApp = byApp
    }

    /// With the app first: each table without it is filled from the one with it.
    package static let all = DateBasis.allCases.flatMap { basis in
        [true, false].map { DashboardTable(basis, byApp: $0) }
    }

    /// `aggregate_dashboard_received`, `aggregate_dashboard_install_by_app`, …; its revenue
    /// table is the same name with `_revenue`.
    package var name: String { "aggregate_dashboard_\(basis.rawValue)" + (byApp ? "_by_app" : "") }

    /// `date` or `install_date`.
    var day: AggregateDimension { basis == .received ? .date : .installDate }

    package var dimensions: [AggregateDimension] {
        [day] + (byApp ? [.appID] : []) + [.adNetworkID, .crowdAnonymityTier]
    }

    /// What it is summed from: the totals, or the table with the app.
    private var summedFrom: String { byApp ? "aggregate_daily_totals" : DashboardTable(basis, byApp: true).name }

    /// Whether it holds a report by `query`'s dimensions and filters.
    func holds(_ query: ReportQuery) -> Bool {
        query.dateBasis == basis && query.dimensions.allSatisfy(dimensions.contains) && (byApp || query.appIDs.isEmpty)
    }

    /// Fills it and its revenue for the days within `bounds` (see
    /// ``AggregateSQL/dashboardStatements(_:)``).
    func fillStatements(_ bounds: (from: UTCDay?, to: UTCDay?)) -> [SQLQuery] {
        let keys = dimensions.map(\.column).joined(separator: ", ")
        let within = AggregateSQL.within(day.column, bounds)
        let condition: SQLQuery = basis == .install ? "(\(raw: day.column) IS NULL OR (\(within)))" : within
        return [
            """
            INSERT INTO \(raw: name) (\(raw: keys), \(raw: GroupMetrics.countColumns))
            SELECT \(raw: keys), \(raw: GroupMetrics.countSums) FROM \(raw: summedFrom)
            WHERE \(condition) GROUP BY \(raw: keys)
            """,
            """
            INSERT INTO \(raw: name)_revenue (\(raw: keys), \(raw: AggregateSQL.revenueColumns))
            SELECT \(raw: keys), reengagement, currency, \(raw: AggregateSQL.revenueSums), \(raw: AggregateSQL.modeledSums)
            FROM \(raw: summedFrom)_revenue WHERE \(condition) GROUP BY \(raw: keys), reengagement, currency
            """,
        ]
    }
}
