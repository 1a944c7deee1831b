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

/// A row of `aggregate_daily_references` within its day: a reference group on a basis, and its
/// revenue in one currency (none: a group without revenue, stored for its postbacks).
struct ReferenceRow: Sendable {
    var key: ReferenceKey
    var basis: ModeledBasis
    var postbacks: Int
    var currency: String?
    var minMicros: Int64 = 0
    var maxMicros: Int64 = 0

    /// Appends `sum`'s rows: one per currency, or one without a currency.
    static func append(_ key: ReferenceKey, _ basis: ModeledBasis, _ sum: ReferenceSum, to rows: inout [ReferenceRow]) {
        guard !sum.revenue.isEmpty else {
            rows.append(ReferenceRow(key: key, basis: basis, postbacks: sum.count, currency: nil))
            return
        }
        for (currency, revenue) in sum.revenue {
            rows.append(
                ReferenceRow(
                    key: key,
                    basis: basis,
                    postbacks: sum.count,
                    currency: currency,
                    minMicros: revenue.min,
                    maxMicros: revenue.max
                )
            )
        }
    }

    /// Its values after the date, in ``AggregateSQL/referenceColumns`` order.
    func put(into row: inout some AggregateRowSink) {
        row.put(key.appID)
        row.put(key.adNetworkID)
        row.put(key.sequenceIndex)
        row.put(key.reengagement)
        row.put(basis.rawValue)
        row.put(postbacks)
        row.put(currency)
        row.put(minMicros)
        row.put(maxMicros)
    }

    /// The stored `day` groups (``AggregateSQL/storedReferences(_:)``'s rows), by day.
    static func days(_ rows: [SQLRow]) throws -> [UTCDay: [ReferenceKey: ReferenceSum]] {
        var days: [UTCDay: [ReferenceKey: ReferenceSum]] = [:]
        for row in rows {
            let key = ReferenceKey(
                appID: try row.int64(1),
                adNetworkID: try row.string(2),
                sequenceIndex: try row.int(3),
                reengagement: try row.bool(4)
            )
            let day = try row.day(0)
            var sum = days[day, default: [:]][key, default: ReferenceSum()]
            sum.count = try row.int(5)
            if let currency = try row.optionalString(6) {
                sum.revenue[currency] = (try row.int64(7), try row.int64(8))
            }
            days[day, default: [:]][key] = sum
        }
        return days
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

    /// The revenue modeled for `nulls` null values from a reference group of `references`
    /// postbacks whose revenue sums to `sum` (micros), in micros: `nulls × sum ÷ references`,
    /// half a micro rounded up. ``modeledMicrosSQL(nulls:sum:references:)`` is the same in SQL,
    /// for a report of the detailed rows, and must stay so: the totals, computed here, sum what
    /// the detailed rows give there (IEEE doubles, multiplied then divided, on either side).
    static func modeledMicros(nulls: Int, sum: Int64, references: Int) -> Int64 {
        Int64((Double(nulls) * Double(sum) / Double(references) + 0.5).rounded(.down))
    }

    /// ``modeledMicros(nulls:sum:references:)`` in SQL both engines read, of three expressions.
    static func modeledMicrosSQL(nulls: String, sum: String, references: String) -> String {
        "FLOOR(CAST(\(nulls) AS DOUBLE PRECISION) * \(sum) / \(references) + 0.5)"
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

    /// Keeps the stored reference groups of the six days before `from` (``ReferenceRow/days(_:)``)
    /// and answers the days of those six with none stored, which a run reads from their
    /// postbacks: days never aggregated since references were stored (or without any).
    ///
    /// A day's stored groups are those its last run decoded; a model added for it since needs
    /// a run over it, which `models add` names.
    mutating func keepStored(_ stored: [UTCDay: [ReferenceKey: ReferenceSum]], before from: UTCDay) -> [UTCDay] {
        var missing: [UTCDay] = []
        for day in Self.daysBefore(from) {
            if let references = stored[day] { keep(day, references) } else { missing.append(day) }
        }
        return missing
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
