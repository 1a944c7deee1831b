import PostbackKit

/// A group's nulls modeled per basis (``ModeledBasis``): four counts in the group itself, not
/// an array each group would allocate.
struct ModeledCounts: Sendable {
    var day = 0
    var week = 0
    var appWeek = 0
    var none = 0

    subscript(basis: ModeledBasis) -> Int {
        get {
            switch basis {
            case .day: day
            case .week: week
            case .appWeek: appWeek
            case .none: none
            }
        }
        set {
            switch basis {
            case .day: day = newValue
            case .week: week = newValue
            case .appWeek: appWeek = newValue
            case .none: none = newValue
            }
        }
    }

    mutating func add(_ other: ModeledCounts) {
        day += other.day
        week += other.week
        appWeek += other.appWeek
        none += other.none
    }
}
