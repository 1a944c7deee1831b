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
