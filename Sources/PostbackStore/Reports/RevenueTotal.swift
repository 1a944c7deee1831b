import PostbackKit

/// Revenue in one currency: the range and the point estimate, in currency units.
package struct RevenueTotal: Sendable, Hashable {
    package var min: Double
    package var max: Double
    package var estimate: Double

    package init(min: Double, max: Double, estimate: Double) {
        self.min = min
        self.max = max
        self.estimate = estimate
    }
}
