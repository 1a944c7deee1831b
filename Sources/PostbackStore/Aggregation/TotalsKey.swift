import PostbackKit

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

    /// Its row's dimensions (``AggregateSQL/totalsDimensions``) on `day`.
    func put(day: UTCDay, into row: inout some AggregateRowSink) {
        row.put(day)
        row.put(appID)
        row.put(adNetworkID)
        row.put(installDate)
        row.put(crowdAnonymityTier)
    }
}
