import PostbackKit

/// A report row's count metrics: one number per ``ReportMetric``, or none (an `--events` row).
///
/// An array in ``ReportMetric/allCases`` order rather than a dictionary: a year's dashboard
/// reads and sums tens of thousands of rows, and hashing each metric of each row was a fifth
/// of its time.
package struct ReportCounts: Sendable, Equatable {
    /// Empty, or one value per metric in ``ReportMetric/allCases`` order.
    package private(set) var values: [Int]

    package init() { values = [] }

    /// `values` in ``ReportMetric/allCases`` order.
    package init(_ values: [Int]) {
        precondition(values.count == ReportMetric.allCases.count)
        self.values = values
    }

    /// The metric's count; nil when the row has no counts. Setting one metric of a row without
    /// counts gives the others 0.
    package subscript(metric: ReportMetric) -> Int? {
        get { values.isEmpty ? nil : values[metric.index] }
        set {
            if values.isEmpty { values = Array(repeating: 0, count: ReportMetric.allCases.count) }
            values[metric.index] = newValue ?? 0
        }
    }
}
