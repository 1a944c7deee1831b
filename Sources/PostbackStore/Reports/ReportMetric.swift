import PostbackKit

/// The count metrics of a report row, in the order they are shown.
package enum ReportMetric: String, Sendable, CaseIterable {
    case postbacks, installs, redownloads, reengagements
    case nonWinning = "non_winning"
    case testMode = "test_mode"
    case development
    case nullConversionValues = "null_conversion_values"
    case unmapped, unmodelled
    case modelAmbiguous = "model_ambiguous"
    /// Nulls modeled per basis (``ModeledBasis``): shown as `modeled_nulls` and `modeled_basis`,
    /// not among the counts.
    case modeledDay = "modeled_day"
    case modeledWeek = "modeled_week"
    case modeledAppWeek = "modeled_app_week"
    case modeledNone = "modeled_none"

    /// The metrics shown as counts: all but the modeled nulls.
    static let shown = allCases.filter { $0.basis == nil }

    /// For a modeled-nulls count, its basis.
    var basis: ModeledBasis? {
        switch self {
        case .modeledDay: .day
        case .modeledWeek: .week
        case .modeledAppWeek: .appWeek
        case .modeledNone: ModeledBasis.none
        default: nil
        }
    }

    /// A short header for the table format.
    var shortName: String {
        switch self {
        case .postbacks: "postbacks"
        case .installs: "installs"
        case .redownloads: "redownloads"
        case .reengagements: "re-engage"
        case .nonWinning: "non-win"
        case .testMode: "test"
        case .development: "dev"
        case .nullConversionValues: "null CV"
        case .unmapped: "unmapped"
        case .unmodelled: "unmodelled"
        case .modelAmbiguous: "ambiguous"
        case .modeledDay, .modeledWeek, .modeledAppWeek, .modeledNone: rawValue
        }
    }

    /// The metric's position in ``allCases`` (and in ``ReportCounts``).
    var index: Int {
        switch self {
        case .postbacks: 0
        case .installs: 1
        case .redownloads: 2
        case .reengagements: 3
        case .nonWinning: 4
        case .testMode: 5
        case .development: 6
        case .nullConversionValues: 7
        case .unmapped: 8
        case .unmodelled: 9
        case .modelAmbiguous: 10
        case .modeledDay: 11
        case .modeledWeek: 12
        case .modeledAppWeek: 13
        case .modeledNone: 14
        }
    }
}
