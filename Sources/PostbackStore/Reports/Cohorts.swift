import PostbackKit

/// One cohort of `report --cohorts`: the postbacks of a group's install date by conversion
/// window (0: days 0–2, 1: days 3–7, 2: days 8–35), as received so far.
package struct CohortRow: Sendable {
    /// The group: the install date, then the other dimensions asked for.
    package var dimensions: [DimensionValue]
    /// Installs (``ReportMetric/installs``: winning production postbacks 0, not re-downloads or
    /// re-engagements).
    package var installs = 0
    /// Winning production postbacks of each window (0, 1, 2), every conversion type.
    package var postbacks = [0, 0, 0]
    /// The revenue their values decode to, per window and currency (window 0: fine or coarse
    /// values; 1 and 2: coarse).
    package var revenue: [[String: RevenueTotal]] = [[:], [:], [:]]

    /// Postbacks of `window` over postbacks 0: nil without postbacks 0.
    package func rate(_ window: Int) -> Double? {
        postbacks[0] > 0 ? Double(postbacks[window]) / Double(postbacks[0]) : nil
    }
}

extension Report {
    /// The cohorts of a report read by its dimensions and `postback_sequence_index` last: each
    /// group's rows of windows 0, 1 and 2 side by side, as a report of cohorts by the other
    /// dimensions.
    func cohorts() -> Report {
        var positions: [[DimensionValue]: Int] = [:]
        var cohorts: [CohortRow] = []
        var currencies = Set<String>()
        for row in rows {
            guard case .integer(let index) = row.dimensions.last, (0...2).contains(index) else { continue }
            let window = Int(index)
            let key = Array(row.dimensions.dropLast())
            let position: Int
            if let found = positions[key] {
                position = found
            } else {
                position = cohorts.count
                positions[key] = position
                cohorts.append(CohortRow(dimensions: key))
            }
            let winning = row.productionPostbacks - (row.counts[.nonWinning] ?? 0)
            cohorts[position].postbacks[window] += max(winning, 0)
            if window == 0 { cohorts[position].installs += row.counts[.installs] ?? 0 }
            for (currency, total) in row.revenue {
                currencies.insert(currency)
                var sum = cohorts[position].revenue[window][currency] ?? RevenueTotal(min: 0, max: 0, estimate: 0)
                sum.min += total.min
                sum.max += total.max
                sum.estimate += total.estimate
                cohorts[position].revenue[window][currency] = sum
            }
        }
        var report = Report(
            dimensions: Array(dimensions.dropLast()),
            events: false,
            rows: [],
            currencies: currencies.sorted(),
            policy: policy
        )
        report.cohortRows = cohorts.sorted { $0.dimensions.lexicographicallyPrecedes($1.dimensions) }
        return report
    }

    /// The maturity of a cohort (nil: not judged, or no install date).
    package func maturity(_ cohort: CohortRow) -> Maturity? {
        guard let asOf = maturityAsOf, let position = dimensions.firstIndex(of: .installDate),
            case .text(let text) = cohort.dimensions[position], let day = UTCDay(text)
        else { return nil }
        return Maturity(day: day, asOf: asOf)
    }
}
