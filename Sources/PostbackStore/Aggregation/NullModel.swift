import PostbackKit

/// How a group's null conversion values were given a modeled revenue: by which reference group.
package enum ModeledBasis: String, Sendable, CaseIterable {
    /// The same day, app, ad network, sequence index and kind of model.
    case day
    /// The same app, network, index and kind over the 7 days ending on the day.
    case week
    /// The same app, index and kind over every network in those 7 days.
    case appWeek = "app_week"
    /// Fewer than ``NullModel/threshold`` references even so: nothing modeled.
    case none

    /// Its position in ``allCases`` and in ``GroupMetrics/modeled``; wider bases come later.
    var index: Int {
        switch self {
        case .day: 0
        case .week: 1
        case .appWeek: 2
        case .none: 3
        }
    }
}

/// A reference group: the winning production postbacks with a decoded value of one app, ad
/// network and sequence index, decoded by one kind of model (install: downloads and
/// redownloads; re-engagement), on one day.
struct ReferenceKey: Hashable, Sendable {
    var appID: Int64
    var adNetworkID: String
    var sequenceIndex: Int
    var reengagement: Bool

    init(appID: Int64, adNetworkID: String, sequenceIndex: Int, reengagement: Bool) {
        self.appID = appID
        self.adNetworkID = adNetworkID
        self.sequenceIndex = sequenceIndex
        self.reengagement = reengagement
    }

    init(_ key: GroupKey) {
        self.init(
            appID: key.appID,
            adNetworkID: key.adNetworkID,
            sequenceIndex: key.sequenceIndex,
            reengagement: key.isReengagement
        )
    }

    /// The same over every network (``ModeledBasis/appWeek``).
    var overNetworks: ReferenceKey {
        ReferenceKey(appID: appID, adNetworkID: "", sequenceIndex: sequenceIndex, reengagement: reengagement)
    }
}

/// A reference group's postbacks and their revenue per currency (micros; a postback's revenue
/// is the sum of its events' revenue, zero when they have none).
struct ReferenceSum: Sendable {
    var count = 0
    var revenue: [String: (min: Int64, max: Int64)] = [:]

    /// Adds a group's `count` references and their revenue (observed, in micros).
    mutating func add(_ count: Int, _ revenue: [String: RevenueSum]) {
        self.count += count
        for (currency, sum) in revenue {
            var total = self.revenue[currency] ?? (0, 0)
            total.min += sum.minMicros
            total.max += sum.maxMicros
            self.revenue[currency] = total
        }
    }

    mutating func add(_ other: ReferenceSum) {
        count += other.count
        for (currency, sum) in other.revenue {
            var total = revenue[currency] ?? (0, 0)
            total.min += sum.min
            total.max += sum.max
            revenue[currency] = total
        }
    }
}

/// Modeled revenue for null conversion values.
///
/// Apple withholds a postback's value below its privacy thresholds, so revenue summed over the
/// postbacks that carry one is low by the revenue of those that do not. Each winning production
/// postback without a value, of an app with a model in force, is given the mean revenue of its
/// reference group: the same day, app, ad network, sequence index and kind of model, when that
/// group has at least ``threshold`` postbacks with a decoded value; else the same over the 7
/// days ending on its day; else the app's over every network in those 7 days; else nothing.
/// The mean is per currency, of the minimum and of the maximum; a modeled revenue is stored
/// beside the observed one, never in it. Postbacks with an unmapped value, or of an app without
/// a model in force, are neither references nor modeled.
///
/// The assumption: nulls behave like the postbacks of the same network and day. Privacy
/// thresholds withhold values where campaigns are small, which makes that optimistic for
/// small campaigns.
struct NullModel {
    /// The fewest references a group must have to model from.
    static let threshold = 30
    /// The days a week-wide reference group spans, the day itself included.
    static let weekDays = 7

    let day: [ReferenceKey: ReferenceSum]
    let week: [ReferenceKey: ReferenceSum]
    /// Keyed by ``ReferenceKey/overNetworks``.
    let appWeek: [ReferenceKey: ReferenceSum]

    /// `earlier`: the reference groups of up to six days before `day`'s.
    init(day: [ReferenceKey: ReferenceSum], earlier: [[ReferenceKey: ReferenceSum]]) {
        self.day = day
        var week = day
        for references in earlier {
            for (key, sum) in references { week[key, default: ReferenceSum()].add(sum) }
        }
        var appWeek: [ReferenceKey: ReferenceSum] = [:]
        for (key, sum) in week { appWeek[key.overNetworks, default: ReferenceSum()].add(sum) }
        self.week = week
        self.appWeek = appWeek
    }

    /// The reference group for the nulls of `key`, and its basis.
    func reference(_ key: ReferenceKey) -> (basis: ModeledBasis, sum: ReferenceSum) {
        if let sum = day[key], sum.count >= Self.threshold { return (.day, sum) }
        if let sum = week[key], sum.count >= Self.threshold { return (.week, sum) }
        if let sum = appWeek[key.overNetworks], sum.count >= Self.threshold { return (.appWeek, sum) }
        return (.none, ReferenceSum())
    }
}

/// The reference groups of the days an aggregate run has read, for the week-wide groups of the
/// days after them.
struct RecentReferences {
    private var days: [UTCDay: [ReferenceKey: ReferenceSum]] = [:]

    /// The six days before `day` a run reads for their reference groups when it does not
    /// aggregate them: those of a run starting on `day`.
    static func daysBefore(_ day: UTCDay) -> [UTCDay] {
        (1..<NullModel.weekDays).reversed().map { UTCDay(daysSinceEpoch: day.daysSinceEpoch - Int64($0)) }
    }

    mutating func keep(_ day: UTCDay, _ references: [ReferenceKey: ReferenceSum]) {
        days[day] = references
        days = days.filter { $0.key.daysSinceEpoch > day.daysSinceEpoch - Int64(NullModel.weekDays) }
    }

    /// The reference groups of the six days before `day` that were kept.
    func before(_ day: UTCDay) -> [[ReferenceKey: ReferenceSum]] {
        Self.daysBefore(day).compactMap { days[$0] }
    }
}
