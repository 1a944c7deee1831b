import PostbackKit

/// Revenue sums in micros: observed, and modeled for the null values (``NullModel``), which is
/// added to the observed revenue, never in it.
struct RevenueSum: Sendable {
    var minMicros: Int64 = 0
    var maxMicros: Int64 = 0
    var modeledMinMicros: Int64 = 0
    var modeledMaxMicros: Int64 = 0

    /// The observed minimum, maximum and estimate by `policy`, in currency units, as stored.
    func observed(_ policy: RevenueEstimatePolicy) -> (min: Double, max: Double, estimate: Double) {
        (
            units(Double(minMicros)), units(Double(maxMicros)),
            units(policy.estimate(minMicros: minMicros, maxMicros: maxMicros))
        )
    }

    /// The same of the modeled revenue.
    func modeled(_ policy: RevenueEstimatePolicy) -> (min: Double, max: Double, estimate: Double) {
        (
            units(Double(modeledMinMicros)), units(Double(modeledMaxMicros)),
            units(policy.estimate(minMicros: modeledMinMicros, maxMicros: modeledMaxMicros))
        )
    }

    /// Puts `currency`, the observed minimum, maximum and estimate (a detailed row's revenue,
    /// an event's: observed only).
    func putObserved(_ currency: String, _ policy: RevenueEstimatePolicy, into row: inout some AggregateRowSink) {
        row.put(currency)
        let observed = observed(policy)
        row.put(observed.min)
        row.put(observed.max)
        row.put(observed.estimate)
    }

    /// Puts ``AggregateSQL/revenueColumns`` (of the totals): whether it is re-engagements',
    /// `currency`, the observed minimum, maximum and estimate, then the modeled ones.
    func putWithModeled(
        _ currency: String,
        _ policy: RevenueEstimatePolicy,
        reengagement: Bool,
        into row: inout some AggregateRowSink
    ) {
        row.put(reengagement)
        putObserved(currency, policy, into: &row)
        let modeled = modeled(policy)
        row.put(modeled.min)
        row.put(modeled.max)
        row.put(modeled.estimate)
    }

    mutating func add(_ other: RevenueSum) {
        minMicros += other.minMicros
        maxMicros += other.maxMicros
        modeledMinMicros += other.modeledMinMicros
        modeledMaxMicros += other.modeledMaxMicros
    }
}
