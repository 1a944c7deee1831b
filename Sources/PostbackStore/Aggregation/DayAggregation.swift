import PostbackKit

/// Where an engine's aggregate writer puts a row's values, in column order: SQLite binds them
/// (``SQLiteBinder``), PostgreSQL writes them as COPY text (``PostgresCopyRows``). A row both
/// engines write alike puts its values through it, so that its column order is written once.
protocol AggregateRowSink {
    mutating func put(_ value: String?)
    mutating func put(_ value: Int64?)
    mutating func put(_ value: Int?)
    mutating func put(_ value: Bool?)
    mutating func put(_ value: Double?)
    /// A day as `date` columns hold it (SQLite: `YYYY-MM-DD` text).
    mutating func put(_ value: UTCDay?)
}

/// One day's groups and fine-value histogram, computed from its stored postbacks.
struct DayAggregation: Sendable {
    let day: UTCDay
    let models: ConversionModels
    let campaigns: CampaignMappings
    var groups: [GroupKey: GroupMetrics] = [:]
    var histogram: [HistogramKey: Int] = [:]
    /// Postbacks added.
    var postbacks = 0
    /// Apps whose postbacks had no model: installs (downloads and redownloads), and
    /// re-engagements (no re-engagement model).
    var unmodelled = Set<Int64>()
    var unmodelledReengagements = Set<Int64>()
    /// The day's reference groups for modeled null values (``NullModel``): the winning
    /// production postbacks with a decoded value, and their revenue; summed from the groups
    /// once the day is read (``collectReferences()``).
    private(set) var references: [ReferenceKey: ReferenceSum] = [:]
    /// The wider reference groups (``ModeledBasis/week``, ``ModeledBasis/appWeek``) the day's
    /// nulls were modeled on, by the key of the groups they modeled: stored beside
    /// ``references`` (`aggregate_daily_references`), from which a report of the detailed rows
    /// computes their modeled revenue.
    private(set) var widened: [ReferenceKey: (basis: ModeledBasis, sum: ReferenceSum)] = [:]
    /// The groups summed over every dimension but ``AggregateSQL/totalsDimensions`` (by
    /// ``finish(earlier:)``): the rows of `aggregate_daily_totals` (counts, revenue by model
    /// kind, observed and modeled; no events). Revenue sums micros, so the totals equal the sums
    /// of the detailed rows exactly, and every estimate policy is linear.
    private(set) var totals: [TotalsKey: GroupMetrics] = [:]
    /// The apps whose postbacks received this day decode differently with their `received_at`
    /// (``ConversionModels/breakpoints(in:)``): only theirs need it, as their bucket among
    /// ``breakpoints``; any instant of the day decodes the others alike.
    let changing: Set<Int64>
    /// Where within the day the decoding of `changing`'s postbacks can change (milliseconds).
    let breakpoints: [Int64]
    private let dayStart: UTCInstant

    /// `expectedGroups`: room to reserve (e.g. the previous day's group count), sparing the
    /// dictionary's regrowth, which rehashes every key.
    init(day: UTCDay, models: ConversionModels, campaigns: CampaignMappings, expectedGroups: Int = 0) {
        self.day = day
        self.models = models
        self.campaigns = campaigns
        (changing, breakpoints) = models.changesOverTime ? models.breakpoints(in: day) : ([], [])
        dayStart = day.start
        groups.reserveCapacity(expectedGroups)
    }

    /// Adds `postback` (`postback.count` identical ones, when the engine grouped them).
    mutating func add(_ postback: AggregatedPostback) {
        postbacks += postback.count
        let (decoded, ambiguous) = models.decode(
            appID: postback.appID,
            value: postback.conversionValue,
            sequenceIndex: postback.sequenceIndex,
            conversionType: postback.modelConversionType,
            receivedAt: postback.receivedAt ?? dayStart,
            version: postback.isAAK ? nil : postback.version
        )
        if case .unmodelled = decoded {
            if postback.modelConversionType == .install {
                unmodelled.insert(postback.appID)
            } else {
                unmodelledReengagements.insert(postback.appID)
            }
        }
        let mapping = postback.installDate.flatMap {
            campaigns.lookup(
                network: postback.adNetworkID,
                identifier: postback.sourceIdentifierDimension,
                installDate: $0
            )
        }
        groups[GroupKey(postback, mapping: mapping), default: GroupMetrics()].add(
            postback,
            decoded,
            ambiguous: ambiguous
        )
        if postback.countsInFineValueHistogram {
            let key = HistogramKey(
                appID: postback.appID,
                network: postback.adNetworkID,
                fine: postback.conversionValue?.fine
            )
            histogram[key, default: 0] += postback.count
        }
    }

    /// The rows of `aggregate_daily_references` (``AggregateSQL/referenceColumns``): the day's
    /// reference groups (``references``), then the wider ones its nulls were modeled on
    /// (``widened``).
    var referenceRows: [ReferenceRow] {
        var rows: [ReferenceRow] = []
        rows.reserveCapacity(references.count + widened.count)
        for (key, sum) in references { ReferenceRow.append(key, .day, sum, to: &rows) }
        for (key, reference) in widened { ReferenceRow.append(key, reference.basis, reference.sum, to: &rows) }
        return rows
    }

    /// Sums the groups' references into ``references``: a group's revenue is that of its
    /// references (winning production postbacks with a decoded value), before any is modeled.
    mutating func collectReferences() {
        references = [:]
        for (key, metrics) in groups where metrics.references > 0 {
            references[ReferenceKey(key), default: ReferenceSum()].add(metrics.references, metrics.revenue)
        }
    }

    /// Finishes the day once its postbacks are read: gives each group's null values a modeled
    /// revenue (``NullModel``), from this day's references and `earlier`'s (the reference groups
    /// of the six days before it, fewer when some had no postbacks), and sums the groups into
    /// ``totals``, in one pass over them.
    mutating func finish(earlier: [[ReferenceKey: ReferenceSum]]) {
        collectReferences()
        let model = NullModel(day: references, earlier: earlier)
        // Each reference key's group chosen once: many groups share it.
        var chosen: [ReferenceKey: (basis: ModeledBasis, sum: ReferenceSum)] = [:]
        totals = [:]
        // In place, by index: assigning through a key while iterating the dictionary would copy
        // it whole (it is still shared with the iterator), and hash each key again.
        var index = groups.startIndex
        while index != groups.endIndex {
            let key = groups.keys[index]
            if groups.values[index].modelable > 0 {
                let reference = ReferenceKey(key)
                let chosenReference: (basis: ModeledBasis, sum: ReferenceSum)
                if let known = chosen[reference] {
                    chosenReference = known
                } else {
                    chosenReference = model.reference(reference)
                    chosen[reference] = chosenReference
                }
                groups.values[index].model(chosenReference)
            }
            totals[TotalsKey(key), default: GroupMetrics()].merge(
                groups.values[index],
                reengagement: key.isReengagement
            )
            groups.formIndex(after: &index)
        }
        widened = chosen.filter { $0.value.basis == .week || $0.value.basis == .appWeek }
    }
}

/// A row of `aggregate_daily_totals` within its day.
struct TotalsKey: Hashable, Sendable {
    var appID: Int64
    var adNetworkID: String
    var installDate: UTCDay?
    var crowdAnonymityTier: Int?

    init(_ key: GroupKey) {
        appID = key.appID
        adNetworkID = key.adNetworkID
        installDate = key.installDate
        crowdAnonymityTier = key.crowdAnonymityTier
    }

    /// Its row's dimensions (``AggregateSQL/totalsDimensions``) on `day`.
    func put(day: UTCDay, into row: inout some AggregateRowSink) {
        row.put(day)
        row.put(appID)
        row.put(adNetworkID)
        row.put(installDate)
        row.put(crowdAnonymityTier)
    }
}

/// The columns of a stored postback that aggregation reads.
struct AggregatedPostback {
    var appID: Int64
    var adNetworkID: String
    var isAAK: Bool
    var keySpace: String
    var version: String?
    var campaignID: Int64?
    var sourceIdentifier: String?
    var sourceAppID: Int64?
    var sourceDomain: String?
    var fidelityType: Int64?
    var redownload: Bool?
    var didWin: Bool?
    var sequenceIndex: Int
    var countryCode: String?
    var conversionValue: ConversionValue?
    var conversionType: String?
    var marketplaceID: String?
    /// The stored inferences (``PostbackInference``).
    var installDate: UTCDay?
    var crowdAnonymityTier: Int?
    var sourceIdentifierDigits: Int?
    /// An instant that decodes it as its `received_at` does: read only for the apps whose
    /// decoding changes within its day (``DayAggregation/changing``), as the breakpoint before
    /// it; nil for the others, which any instant of the day decodes.
    var receivedAt: UTCInstant?
    /// On PostgreSQL, the bucket of its `received_at` among the day's breakpoints, which the
    /// server computes (``DayAggregation/breakpoints``).
    var receivedBucket: Int?
    /// How many identical postbacks this row stands for (an engine may group them in SQL).
    var count = 1

    /// The timeline that decodes it: AdAttributionKit re-engagements have their own.
    var modelConversionType: ModelConversionType {
        isAAK && conversionType == AAKConversionType.reengagement.rawValue ? .reengagement : .install
    }

    var isProduction: Bool { keySpace == KeySpace.production.rawValue }
    var isTestMode: Bool { keySpace == KeySpace.test.rawValue }
    var isDevelopment: Bool { keySpace == KeySpace.development.rawValue }

    /// `did-win` true, or no `did-win` at all (before 3.0, every postback is the winner's).
    var isWinning: Bool { didWin ?? true }

    /// The `source_identifier` dimension: the 4.0 or AdAttributionKit source identifier, or
    /// the campaign id as a string before 4.0.
    var sourceIdentifierDimension: String? {
        sourceIdentifier ?? campaignID.map { String($0) }
    }

    /// The `conversion_type` dimension: AdAttributionKit's conversion type, or for SKAdNetwork
    /// `redownload` when `redownload` is true and `download` otherwise.
    var conversionTypeDimension: AAKConversionType {
        if isAAK, let conversionType, let type = AAKConversionType(rawValue: conversionType) { return type }
        return redownload == true ? .redownload : .download
    }

    /// Whether the fine-value histogram counts it: winning production postbacks without a
    /// coarse value, bucketed by fine value (NULL for no value at all).
    var countsInFineValueHistogram: Bool {
        isProduction && isWinning && conversionValue?.coarse == nil
    }
}

/// The dimensions of one aggregate row within its day (``DayAggregation/day`` is its date).
struct GroupKey: Hashable, Sendable {
    var appID: Int64
    var adNetworkID: String
    var sourceIdentifier: String?
    var sourceAppID: Int64?
    var sourceDomain: String?
    var version: String?
    var fidelityType: Int64?
    var redownload: Bool?
    var didWin: Bool?
    var sequenceIndex: Int
    var countryCode: String?
    var marketplaceID: String?
    var installDate: UTCDay?
    var crowdAnonymityTier: Int?
    var sourceIdentifierDigits: Int?
    /// The campaign mapping row (an index into ``CampaignMappings/rows``), if any.
    var mapping: Int?
    /// `download`, `redownload` or `re-engagement` (``AggregatedPostback/conversionTypeDimension``).
    var conversionType: AAKConversionType

    /// Whether its postbacks decode with the re-engagement model.
    var isReengagement: Bool { conversionType == .reengagement }

    init(_ postback: AggregatedPostback, mapping: Int?) {
        appID = postback.appID
        adNetworkID = postback.adNetworkID
        sourceIdentifier = postback.sourceIdentifierDimension
        sourceAppID = postback.sourceAppID
        sourceDomain = postback.sourceDomain
        version = postback.version
        fidelityType = postback.fidelityType
        redownload = postback.redownload
        didWin = postback.didWin
        sequenceIndex = postback.sequenceIndex
        countryCode = postback.countryCode
        marketplaceID = postback.marketplaceID
        installDate = postback.installDate
        crowdAnonymityTier = postback.crowdAnonymityTier
        sourceIdentifierDigits = postback.sourceIdentifierDigits
        self.mapping = mapping
        conversionType = postback.conversionTypeDimension
    }
}

struct HistogramKey: Hashable, Comparable, Sendable {
    var appID: Int64
    var network: String
    var fine: Int?

    /// Its row's values after the date (`app_id, ad_network_id, fine_value, postbacks`), with
    /// `postbacks`.
    func put(_ postbacks: Int, into row: inout some AggregateRowSink) {
        row.put(appID)
        row.put(network)
        row.put(fine)
        row.put(postbacks)
    }

    static func < (lhs: HistogramKey, rhs: HistogramKey) -> Bool {
        (lhs.appID, lhs.network, lhs.fine ?? -1) < (rhs.appID, rhs.network, rhs.fine ?? -1)
    }
}

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

/// One event's sums within a group.
struct EventSum: Sendable {
    var occurrencesMin: Int64 = 0
    var occurrencesMax: Int64 = 0
    var postbacks = 0
    var revenue: [String: RevenueSum] = [:]
}

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
