import PostbackKit

/// What the dashboard reads beside the reports (``PostbackStorage/dashboardSeries(_:)``).
package struct DashboardSeries: Sendable, Hashable {
    /// Winning postbacks per fine value (nil: no fine value) over the period's days received,
    /// by value.
    package var fineValues: [FineValueCount] = []
    /// Quarantined, duplicate and conflicting copies per day received.
    package var intake: [DailyIntake] = []

    package init(fineValues: [FineValueCount] = [], intake: [DailyIntake] = []) {
        self.fineValues = fineValues
        self.intake = intake
    }

    /// The queries: the fine values for `query`'s period taken as received days, apps and
    /// networks; the intake for that period only.
    static func queries(_ query: ReportQuery) -> (fineValues: ReportQuery, intake: ReportQuery) {
        var fineValues = query
        fineValues.dateBasis = .received
        fineValues.dimensions = []
        fineValues.events = false
        return (fineValues, ReportQuery(from: query.from, to: query.to, by: [], events: false))
    }
}

/// Postbacks with one fine value (or none).
package struct FineValueCount: Sendable, Hashable {
    var fineValue: Int?
    package var postbacks: Int

    package init(fineValue: Int?, postbacks: Int) {
        self.fineValue = fineValue
        self.postbacks = postbacks
    }
}

/// What arrived on a day besides the postbacks stored.
package struct DailyIntake: Sendable, Hashable {
    package var day: UTCDay
    /// Bodies quarantined (a body refused repeatedly by `serve` counts each time).
    package var quarantined: Int
    /// Further copies of stored postbacks.
    package var duplicates: Int
    /// Copies among them whose unsigned values differ from the stored postback.
    package var conflicts: Int

    package init(day: UTCDay, quarantined: Int, duplicates: Int, conflicts: Int) {
        self.day = day
        self.quarantined = quarantined
        self.duplicates = duplicates
        self.conflicts = conflicts
    }
}

extension DateBasis {
    /// The aggregate column of the day it names.
    var column: String {
        switch self {
        case .received: "date"
        case .install: "install_date"
        }
    }
}
