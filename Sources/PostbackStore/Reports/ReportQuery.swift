import PostbackKit

/// What a report sums: the period and the grouping.
package struct ReportQuery: Sendable, Hashable {
    package var from: UTCDay?
    package var to: UTCDay?
    package var dimensions: [AggregateDimension]
    /// One row per group and event instead of the count metrics.
    package var events: Bool
    /// Which day `from` and `to` bound: the day received (`date`) or the install date.
    package var dateBasis: DateBasis
    /// Only these apps (all when empty).
    package var appIDs: [Int64]
    /// Only these ad networks (all when empty).
    package var adNetworkIDs: [String]
    /// Read the detailed aggregate rows even when the totals hold the dimensions (for tests
    /// that compare the two).
    package var detailedRowsOnly = false
    /// Only the count metrics: no revenue, no tier shares (the dashboard's report by day,
    /// network and tier, which it sums; it reads revenue by day alone).
    var countsOnly = false
    /// The currency every amount is converted into (`report --currency`; the dashboard's
    /// spend panel): not the store's to read, but ``ReportRequest/read(_:)``'s to apply.
    package var currency: String?

    package init(
        from: UTCDay?,
        to: UTCDay?,
        by dimensions: [AggregateDimension],
        events: Bool,
        dateBasis: DateBasis = .received,
        appIDs: [Int64] = [],
        adNetworkIDs: [String] = []
    ) {
        self.from = from
        self.to = to
        self.dimensions = dimensions
        self.events = events
        self.dateBasis = dateBasis
        self.appIDs = appIDs
        self.adNetworkIDs = adNetworkIDs
    }
}
