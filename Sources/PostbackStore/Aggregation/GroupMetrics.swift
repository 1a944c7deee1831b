import PostbackKit

/// The metrics of one aggregate row, with these exact meanings:
///
/// - `postbacks`: stored (non-duplicate) postbacks in the group;
/// - `installs`: winning (`did-win` true, or no `did-win` before 3.0), sequence index 0,
///   production (not test-mode, not an AdAttributionKit development key), `redownload` false
///   or absent, and not an AdAttributionKit re-engagement;
/// - `redownloads`: the same with `redownload` true (AdAttributionKit: conversion type
///   `redownload`);
/// - `reengagements`: the same for an AdAttributionKit conversion type `re-engagement`;
/// - `non_winning`: `did-win` false;
/// - `test_mode`: test-mode postbacks (never counted in installs or revenue);
/// - `development`: AdAttributionKit development-key postbacks (never counted in installs or
///   revenue);
/// - `null_conversion_values`: winning postbacks with neither a fine nor a coarse value;
/// - `unmapped`: postbacks with a value their app's model does not map;
/// - `unmodelled`: postbacks of an app that has no model (of their conversion type) in force;
/// - `model_ambiguous`: postbacks carrying a value whose app's model in force changed within
///   the span their value could have been set in (``ConversionModels``);
/// - `modeled_day`, `modeled_week`, `modeled_app_week`, `modeled_none`: winning production
///   postbacks without a value, of an app with a model in force, by the reference group that
///   gave them a modeled revenue (``NullModel``), or none;
/// - revenue per currency, and events: from winning production postbacks of every sequence
///   index, through the app's model in force when the value was set.
struct GroupMetrics: Sendable {
    var postbacks = 0
    var installs = 0
    var redownloads = 0
    var reengagements = 0
    var nonWinning = 0
    var testMode = 0
    var development = 0
    var nullConversionValues = 0
    var unmapped = 0
    var unmodelled = 0
    var modelAmbiguous = 0
    /// Nulls modeled per basis.
    var modeled = ModeledCounts()
    /// Winning production postbacks without a value whose app has a model in force (not stored:
    /// ``modeled`` says how they were modeled).
    var modelable = 0
    /// Winning production postbacks with a decoded value: the group's part of its reference
    /// group (``NullModel``; not stored).
    var references = 0
    /// Revenue per currency; in the totals, that of downloads and redownloads (and of rows
    /// without a conversion type), with the modeled revenue beside it. A detailed group's is
    /// observed only: its modeled revenue is in ``modeledRevenue``, which no detailed row stores.
    var revenue: [String: RevenueSum] = [:]
    /// A detailed group's modeled revenue per currency (``RevenueSum/modeledMinMicros`` and
    /// ``RevenueSum/modeledMaxMicros``), summed into the totals' ``revenue``.
    var modeledRevenue: [String: RevenueSum] = [:]
    /// In the totals, the revenue of re-engagements (a detailed group's revenue is all of its
    /// conversion type).
    var reengagementRevenue: [String: RevenueSum] = [:]
    var events: [String: EventSum] = [:]

    /// Puts the counts, in the ``countColumns`` order (no array built: a day has 130,000
    /// groups).
    func putCounts(into row: inout some AggregateRowSink) {
        row.put(postbacks)
        row.put(installs)
        row.put(redownloads)
        row.put(reengagements)
        row.put(nonWinning)
        row.put(testMode)
        row.put(development)
        row.put(nullConversionValues)
        row.put(unmapped)
        row.put(unmodelled)
        row.put(modelAmbiguous)
        row.put(modeled.day)
        row.put(modeled.week)
        row.put(modeled.appWeek)
        row.put(modeled.none)
    }

    /// Gives the ``modelable`` nulls the revenue of `reference` (none: counted as not modeled).
    mutating func model(_ reference: (basis: ModeledBasis, sum: ReferenceSum)) {
        modeled[reference.basis] += modelable
        let references = reference.sum.count
        guard reference.basis != .none, references > 0 else { return }
        for (currency, sum) in reference.sum.revenue {
            var modeled = modeledRevenue[currency, default: RevenueSum()]
            modeled.modeledMinMicros += NullModel.modeledMicros(nulls: modelable, sum: sum.min, references: references)
            modeled.modeledMaxMicros += NullModel.modeledMicros(nulls: modelable, sum: sum.max, references: references)
            modeledRevenue[currency] = modeled
        }
    }

    /// Adds `other`'s counts and revenue (not its events), its revenue as re-engagements' when
    /// `reengagement`.
    mutating func merge(_ other: GroupMetrics, reengagement: Bool) {
        postbacks += other.postbacks
        installs += other.installs
        redownloads += other.redownloads
        reengagements += other.reengagements
        nonWinning += other.nonWinning
        testMode += other.testMode
        development += other.development
        nullConversionValues += other.nullConversionValues
        unmapped += other.unmapped
        unmodelled += other.unmodelled
        modelAmbiguous += other.modelAmbiguous
        modeled.add(other.modeled)
        if reengagement {
            Self.add(other.revenue, to: &reengagementRevenue)
            Self.add(other.modeledRevenue, to: &reengagementRevenue)
        } else {
            Self.add(other.revenue, to: &revenue)
            Self.add(other.modeledRevenue, to: &revenue)
        }
    }

    private static func add(_ sums: [String: RevenueSum], to total: inout [String: RevenueSum]) {
        for (currency, sum) in sums { total[currency, default: RevenueSum()].add(sum) }
    }

    /// The `aggregate_daily` count columns, in ``putCounts(into:)`` order.
    static let countColumns =
        "postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled, model_ambiguous, modeled_day, modeled_week, modeled_app_week, modeled_none"

    /// The count columns one by one.
    static var countColumnNames: [String] {
        countColumns.split(separator: ",").map { String($0.withoutSurroundingSpaces) }
    }

    /// `SUM(postbacks), SUM(installs), …`: the count columns summed, in order.
    static var countSums: String { countColumnNames.map { "SUM(\($0))" }.joined(separator: ", ") }

    /// Adds `postback.count` copies of `postback`, whose value decodes to `decoded` (through a
    /// model that changed within its value's span when `ambiguous`).
    mutating func add(_ postback: AggregatedPostback, _ decoded: DecodedConversionValue, ambiguous: Bool) {
        let count = postback.count
        postbacks += count
        if ambiguous { modelAmbiguous += count }
        if postback.didWin == false { nonWinning += count }
        if postback.isTestMode { testMode += count }
        if postback.isDevelopment { development += count }
        if postback.isWinning && postback.conversionValue == nil { nullConversionValues += count }
        if case .null = decoded, postback.isProduction, postback.isWinning { modelable += count }
        switch decoded {
        case .unmapped: unmapped += count
        case .unmodelled: unmodelled += count
        case .mapped, .null: break
        }
        guard postback.isProduction, postback.isWinning else { return }
        if postback.sequenceIndex == 0 {
            if postback.conversionType == AAKConversionType.reengagement.rawValue {
                reengagements += count
            } else if postback.redownload == true {
                redownloads += count
            } else {
                installs += count
            }
        }
        guard case .mapped(let mapped) = decoded else { return }
        references += count
        let times = Int64(count)
        var seen = Set<String>()
        for event in mapped {
            var sum = events[event.name, default: EventSum()]
            sum.occurrencesMin += Int64(event.occurrences.min) * times
            sum.occurrencesMax += Int64(event.occurrences.max) * times
            if seen.insert(event.name).inserted { sum.postbacks += count }
            if let range = event.revenue {
                sum.revenue[range.currency, default: RevenueSum()].minMicros += range.minMicros * times
                sum.revenue[range.currency, default: RevenueSum()].maxMicros += range.maxMicros * times
                revenue[range.currency, default: RevenueSum()].minMicros += range.minMicros * times
                revenue[range.currency, default: RevenueSum()].maxMicros += range.maxMicros * times
            }
            events[event.name] = sum
        }
    }
}
