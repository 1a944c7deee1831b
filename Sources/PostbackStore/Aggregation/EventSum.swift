import PostbackKit

/// One event's sums within a group.
struct EventSum: Sendable {
    var occurrencesMin: Int64 = 0
    var occurrencesMax: Int64 = 0
    var postbacks = 0
    var revenue: [String: RevenueSum] = [:]
}
