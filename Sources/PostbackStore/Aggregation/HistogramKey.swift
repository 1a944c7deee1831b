import PostbackKit

struct HistogramKey: Hashable, Comparable, Sendable {
    var appID: Int64
    var network: String
    var fine: Int?

    /// Its row's values after the date (`app_id, ad_network_id, fine_value, postbacks`), with
    /// `postbacks`.
    func put(_ postbacks: Int, into row: inout some AggregateRowSink) {
        row.put(appID)
        row.put(network)
        row.put(fine)
        row.put(postbacks)
    }

    static func < (lhs: HistogramKey, rhs: HistogramKey) -> Bool {
        (lhs.appID, lhs.network, lhs.fine ?? -1) < (rhs.appID, rhs.network, rhs.fine ?? -1)
    }
}
