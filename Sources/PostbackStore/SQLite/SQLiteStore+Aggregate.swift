import GRDB
import GRDBSQLite
import PostbackKit

/// `aggregate` on SQLite, its own: a day's postbacks read and its rows written through SQLite's C
/// API (prepared statements bound in place); the statements around them are ``AggregateSQL``'s.
extension SQLiteStore {
    /// Reads each day's postbacks through SQLite's C API and replaces the days' rows in
    /// `BEGIN IMMEDIATE` transactions (``aggregate(_:policy:commitEvery:)``: a quarter's days,
    /// or two million postbacks, at most, each).
    package func aggregate(_ selection: DaySelection, policy: RevenueEstimatePolicy) throws -> AggregateSummary {
        try aggregate(selection, policy: policy, commitEvery: .default)
    }

    /// How much of a run one transaction holds: after a day that brings its transaction to
    /// `days` days or `postbacks` postbacks, it commits and the next day begins another.
    package struct AggregateCommits: Sendable {
        package var days: Int
        package var postbacks: Int

        package static let `default` = AggregateCommits(days: 92, postbacks: 2_000_000)

        package init(days: Int, postbacks: Int) {
            self.days = max(1, days)
            self.postbacks = max(1, postbacks)
        }
    }

    /// ``aggregate(_:policy:)``, committing after each part of `commitEvery`'s size.
    ///
    /// A run over every day of a store of 20 M postbacks, in one transaction, did not finish in
    /// 25 minutes (BENCHMARKS.md): every page it wrote stayed in the WAL, which no checkpoint
    /// could copy back while the transaction was open, and every page read searched the WAL's
    /// index (`sqlite3WalFindFrame` 72% of the time). That store also held 10.8 M postbacks on
    /// one day, and a day is never split: a part of a quarter bounds the WAL of the other days;
    /// at a year of 2 M postbacks a run in quarters took as long as one transaction (63.2 s and
    /// 63.0 s), in months 13% longer (one pair; each part fills again the install dates its days
    /// can hold, which reach five weeks before them).
    ///
    /// The parts cover the run's days one after another, with the days between them that have
    /// no postbacks (whose old rows go, and whose intake is filled); each part replaces its
    /// days' rows and fills the intake, the totals and the dashboard's tables of its days (by
    /// install date: those its days can hold, filled again by the parts after it). The
    /// week-wide reference groups reach back into the part before from memory, so the rows
    /// are those of one transaction. The models and campaign mappings are read once, by the
    /// first part; the run's record is written by the last. A reader sees every day whole, and
    /// a run of a quarter or less whole; a run killed between two parts leaves the parts before
    /// it done and the rest as they were, and is recorded only once run again to its end.
    package func aggregate(
        _ selection: DaySelection,
        policy: RevenueEstimatePolicy,
        commitEvery: AggregateCommits
    ) throws -> AggregateSummary {
        let started = UTCInstant.now()
        // Reading a day's postbacks jumps around the table (rows are stored in arrival order,
        // days interleave); mapping the file spares a system call and a copy per page.
        try queue.writeWithoutTransaction { db in try db.execute(sql: PostbackDatabase.mapsFile) }
        var summary = AggregateSummary()
        summary.policy = policy
        var run: (stored: [StoredModel], models: ConversionModels, campaigns: CampaignMappings)?
        var days: [UTCDay] = []
        var next = 0
        // The first day of the next part's bounds: the run's first (nil: every day) at first.
        var partFrom = selection.bounds.from
        var unmodelled = Set<Int64>()
        var unmodelledReengagements = Set<Int64>()
        var previousGroups = 0
        var recent = RecentReferences()
        repeat {
            try queue.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    if run == nil {
                        let stored = try SQLiteSQL.rows(db, ModelsSQL.timeline).map(ModelsSQL.stored)
                        let campaigns = CampaignMappings(
                            try SQLiteSQL.rows(db, CampaignMappingsSQL.select).map(CampaignMappingsSQL.mapping)
                        )
                        let models = stored.timelines
                        run = (stored, models, campaigns)
                        days = try Self.days(selection, db)
                        summary.days = days
                        // The week-wide reference groups of a run's first days reach back six
                        // days: as stored, else from their postbacks.
                        if case .range(let from, _) = selection {
                            let references = try ReferenceRow.days(
                                SQLiteSQL.rows(db, AggregateSQL.storedReferences(RecentReferences.daysBefore(from)))
                            )
                            for day in recent.keepStored(references, before: from) {
                                var aggregation = DayAggregation(day: day, models: models, campaigns: campaigns)
                                try Self.read(db, into: &aggregation)
                                aggregation.collectReferences()
                                recent.keep(day, aggregation.references)
                            }
                        }
                    }
                    guard case let (stored, models, campaigns)? = run else { return .rollback }
                    // This part's days: up to a quarter's, or two million postbacks'.
                    var partDays = 0
                    var partPostbacks = 0
                    while next < days.count && partDays < commitEvery.days && partPostbacks < commitEvery.postbacks {
                        let day = days[next]
                        // The day's old rows (the run's first: and those of the days before it
                        // within the run, which have no postbacks).
                        for statement in AggregateSQL.deleteStatements((next == 0 ? selection.bounds.from : day, day)) {
                            try SQLiteSQL.execute(db, statement)
                        }
                        var aggregation = DayAggregation(
                            day: day,
                            models: models,
                            campaigns: campaigns,
                            expectedGroups: previousGroups
                        )
                        try Self.read(db, into: &aggregation)
                        aggregation.finish(earlier: recent.before(day))
                        recent.keep(day, aggregation.references)
                        summary.postbacks += aggregation.postbacks
                        summary.rows += aggregation.groups.count
                        previousGroups = aggregation.groups.count
                        unmodelled.formUnion(aggregation.unmodelled)
                        unmodelledReengagements.formUnion(aggregation.unmodelledReengagements)
                        try Self.write(db, aggregation, policy: policy)
                        next += 1
                        partDays += 1
                        partPostbacks += aggregation.postbacks
                    }
                    // The part ends the day before the next part's first day, or where the run
                    // does (nil: every day), the days after its last day with postbacks too.
                    let last = next == days.count
                    let partTo = last ? selection.bounds.to : UTCDay(daysSinceEpoch: days[next].daysSinceEpoch - 1)
                    // The old rows of the part's days after its last with postbacks (a run without
                    // any: all of its days), which have none now.
                    let gapFrom = next > 0 ? UTCDay(daysSinceEpoch: days[next - 1].daysSinceEpoch + 1) : partFrom
                    let noGap = if let from = gapFrom, let to = partTo { from > to } else { false }
                    if !noGap {
                        for statement in AggregateSQL.deleteStatements((gapFrom, partTo)) {
                            try SQLiteSQL.execute(db, statement)
                        }
                    }
                    for statement in AggregateSQL.fillStatements((partFrom, partTo)) {
                        try SQLiteSQL.execute(db, statement)
                    }
                    partFrom = partTo.map { UTCDay(daysSinceEpoch: $0.daysSinceEpoch + 1) }
                    if last {
                        summary.unmodelledApps = unmodelled.sorted()
                        summary.unmodelledReengagementApps = unmodelledReengagements.sorted()
                        try SQLiteSQL.execute(db, AggregateSQL.runRecord(summary, stored: stored, selection: selection))
                    }
                    return .commit
                }
            }
        } while next < days.count
        summary.seconds = Double(UTCInstant.now().milliseconds - started.milliseconds) / 1000
        return summary
    }

    /// Reads `aggregation`'s day's postbacks into it.
    private static func read(_ db: Database, into aggregation: inout DayAggregation) throws {
        let changing = aggregation.changing
        // A day's stored postbacks, then what `prune` removed of its test and development ones.
        for select in [Self.selectPostbacks, Self.selectPrunedPostbacks] {
            let rows = SQLiteRowReader(
                try db.cachedStatement(sql: select),
                textArguments: [aggregation.day.description]
            )
            try read(rows, db, changing: changing, into: &aggregation)
        }
    }

    private static func read(
        _ rows: SQLiteRowReader,
        _ db: Database,
        changing: Set<Int64>,
        into aggregation: inout DayAggregation
    ) throws {
        let day = aggregation.day
        while try rows.next(db) {
            var postback = AggregatedPostback(rows)
            if !changing.isEmpty && changing.contains(postback.appID),
                let receivedAt = rows.text(21).flatMap(UTCInstant.init(iso8601:))
            {
                let bucket = ConversionModels.bucket(receivedAt, breakpoints: aggregation.breakpoints)
                postback.receivedAt = ConversionModels.representative(
                    bucket: bucket,
                    breakpoints: aggregation.breakpoints,
                    day: day
                )
            }
            aggregation.add(postback)
        }
    }

    package static let selectPostbacks = selectAggregated(from: "postbacks")
    static let selectPrunedPostbacks = selectAggregated(from: "pruned_postbacks")

    private static func selectAggregated(from table: String) -> String {
        """
        SELECT \(AggregateSQL.postbackColumns)
        FROM \(table) WHERE substr(received_at, 1, 10) = ? AND \(AppsSQL.claimed)
        """
    }

    private static func days(_ selection: DaySelection, _ db: Database) throws -> [UTCDay] {
        switch selection {
        case .all:
            return try String.fetchAll(
                db,
                sql: """
                    SELECT substr(received_at, 1, 10) FROM postbacks
                    UNION SELECT substr(received_at, 1, 10) FROM pruned_postbacks ORDER BY 1
                    """
            ).compactMap(UTCDay.init)
        case .range:
            return selection.days
        }
    }

    private static func write(_ db: Database, _ aggregation: DayAggregation, policy: RevenueEstimatePolicy) throws {
        let dimensions = AggregateDimension.columnList
        let placeholders = Array(repeating: "?", count: AggregateDimension.stored.count).joined(separator: ", ")
        let countPlaceholders = Array(repeating: "?", count: GroupMetrics.countColumnNames.count).joined(
            separator: ", "
        )
        let daily = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily (\(dimensions), \(GroupMetrics.countColumns)) VALUES (\(placeholders), \(countPlaceholders))"
        )
        let revenue = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily_revenue (\(dimensions), \(AggregateSQL.detailedRevenueColumns)) VALUES (\(placeholders), ?, ?, ?, ?, ?)"
        )
        let events = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily_events (\(dimensions), \(AggregateSQL.eventColumns)) VALUES (\(placeholders), ?, ?, ?, ?)"
        )
        let eventRevenue = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily_event_revenue (\(dimensions), \(AggregateSQL.eventRevenueColumns)) VALUES (\(placeholders), ?, ?, ?, ?, ?)"
        )
        // The rows go in the groups' hash order, as on PostgreSQL: a table's row order means
        // nothing to SQL, and sorting a day's groups cost a tenth of the run.
        let date = aggregation.day.description
        // The group's dimensions, the install date formatted and the mapping looked up once for
        // its rows in all four tables, their text bound where it is held (a tenth of the run
        // went to SQLite copying each string of each row).
        var key = BoundGroupKey(date: date)
        defer {
            for statement in [daily, revenue, events, eventRevenue] {
                sqlite3_clear_bindings(statement.sqliteStatement)
            }
        }
        for (group, metrics) in aggregation.groups {
            key.hold(group, aggregation.campaigns)
            try key.withText { text in
                var row = SQLiteBinder(daily)
                text.bind(into: &row)
                metrics.putCounts(into: &row)
                _ = try row.step(db)
                for (currency, range) in metrics.revenue.sorted(by: { $0.key < $1.key }) {
                    var row = SQLiteBinder(revenue)
                    text.bind(into: &row)
                    row.bind(group.isReengagement)
                    range.putObserved(currency, policy, into: &row)
                    _ = try row.step(db)
                }
                for (name, event) in metrics.events.sorted(by: { $0.key < $1.key }) {
                    var row = SQLiteBinder(events)
                    text.bind(into: &row)
                    row.bind(name)
                    row.bind(event.occurrencesMin)
                    row.bind(event.occurrencesMax)
                    row.bind(event.postbacks)
                    _ = try row.step(db)
                    for (currency, range) in event.revenue.sorted(by: { $0.key < $1.key }) {
                        var row = SQLiteBinder(eventRevenue)
                        text.bind(into: &row)
                        row.bind(name)
                        range.putObserved(currency, policy, into: &row)
                        _ = try row.step(db)
                    }
                }
            }
        }
        let totals = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily_totals (\(AggregateSQL.totalsColumns)) VALUES (?, ?, ?, ?, ?, \(countPlaceholders))"
        )
        let totalsRevenue = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily_totals_revenue (\(AggregateSQL.totalsRevenueColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        for (key, metrics) in aggregation.totals {
            var row = SQLiteBinder(totals)
            key.put(day: aggregation.day, into: &row)
            metrics.putCounts(into: &row)
            _ = try row.step(db)
            for (reengagement, revenue) in [(false, metrics.revenue), (true, metrics.reengagementRevenue)] {
                for (currency, range) in revenue.sorted(by: { $0.key < $1.key }) {
                    var row = SQLiteBinder(totalsRevenue)
                    key.put(day: aggregation.day, into: &row)
                    range.putWithModeled(currency, policy, reengagement: reengagement, into: &row)
                    _ = try row.step(db)
                }
            }
        }
        let references = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_daily_references (\(AggregateSQL.referenceColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        for reference in aggregation.referenceRows {
            var row = SQLiteBinder(references)
            row.bind(date)
            reference.put(into: &row)
            _ = try row.step(db)
        }
        let fine = try db.cachedStatement(
            sql:
                "INSERT INTO aggregate_fine_values (\(AggregateSQL.fineValueColumns)) VALUES (?, ?, ?, ?, ?)"
        )
        for (key, count) in aggregation.histogram {
            var row = SQLiteBinder(fine)
            row.bind(date)
            key.put(count, into: &row)
            _ = try row.step(db)
        }
    }
}

extension AggregatedPostback {
    /// Reads the current row of ``SQLiteStore/selectPostbacks``.
    init(_ row: SQLiteRowReader) {
        appID = row.int64(0) ?? 0
        adNetworkID = row.text(1) ?? ""
        isAAK = row.text(2, is: "aak")
        keySpace = row.text(3) ?? ""
        version = row.text(4)
        campaignID = row.int64(5)
        sourceIdentifier = row.text(6)
        sourceAppID = row.int64(7)
        sourceDomain = row.text(8)
        fidelityType = row.int64(9)
        redownload = row.int64(10).map { $0 != 0 }
        didWin = row.int64(11).map { $0 != 0 }
        sequenceIndex = Int(row.int64(12) ?? 0)
        countryCode = row.text(13)
        let fine = row.int64(14).map { Int($0) }
        let coarse = row.text(15)
        conversionValue =
            fine.map { .fine($0) } ?? coarse.flatMap(CoarseConversionValue.init(rawValue:)).map { .coarse($0) }
        conversionType = row.text(16)
        marketplaceID = row.text(17)
        installDate = row.day(18)
        crowdAnonymityTier = row.int64(19).map { Int($0) }
        sourceIdentifierDigits = row.int64(20).map { Int($0) }
    }
}

/// A group's dimensions ready to bind, one group after another: its text (the install date
/// formatted, the mapping's names looked up) held as UTF-8 in one buffer reused for every group,
/// and bound from there without SQLite copying it (``SQLiteBinder/bindStatic(_:)``).
struct BoundGroupKey {
    private let date: String
    private var key: GroupKey?
    private var bytes: [UInt8] = []
    /// Each text dimension's start and length in `bytes` (-1: NULL), in bind order.
    private var spans: [(start: Int, count: Int)] = []

    init(date: String) {
        self.date = date
    }

    /// Holds `key`'s dimensions in place of the last group's.
    mutating func hold(_ key: GroupKey, _ campaigns: CampaignMappings) {
        self.key = key
        bytes.removeAll(keepingCapacity: true)
        spans.removeAll(keepingCapacity: true)
        let mapped = key.mapping.map { campaigns.rows[$0] }
        append(date)
        append(key.adNetworkID)
        append(key.sourceIdentifier)
        append(key.sourceDomain)
        append(key.version)
        append(key.countryCode)
        append(key.marketplaceID)
        append(key.installDate?.description)
        append(mapped?.campaign)
        append(mapped?.adGroup)
        append(mapped?.creative)
        append(key.conversionType.rawValue)
    }

    private mutating func append(_ text: String?) {
        guard let text else {
            spans.append((0, -1))
            return
        }
        spans.append((bytes.count, text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    /// Runs `body` with the held group's dimensions bindable: their text is valid within it.
    func withText<Result>(_ body: (BoundText) throws -> Result) rethrows -> Result {
        guard let key else { preconditionFailure("BoundGroupKey.withText before hold") }
        return try bytes.withUnsafeBytes { try body(BoundText(key: key, bytes: $0, spans: spans)) }
    }

    /// The held group's dimensions, within ``withText(_:)``.
    struct BoundText {
        let key: GroupKey
        let bytes: UnsafeRawBufferPointer
        let spans: [(start: Int, count: Int)]

        private func text(_ index: Int) -> UnsafeRawBufferPointer? {
            let span = spans[index]
            guard span.count >= 0, let base = bytes.baseAddress else { return nil }
            return UnsafeRawBufferPointer(start: base + span.start, count: span.count)
        }

        /// Binds the stored dimensions in ``AggregateDimension`` order.
        func bind(into row: inout SQLiteBinder) {
            row.bindStatic(text(0))
            row.bind(key.appID)
            row.bindStatic(text(1))
            row.bindStatic(text(2))
            row.bind(key.sourceAppID)
            row.bindStatic(text(3))
            row.bindStatic(text(4))
            row.bind(key.fidelityType)
            row.bind(key.redownload)
            row.bind(key.didWin)
            row.bind(key.sequenceIndex)
            row.bindStatic(text(5))
            row.bindStatic(text(6))
            row.bindStatic(text(7))
            row.bind(key.crowdAnonymityTier)
            row.bind(key.sourceIdentifierDigits)
            row.bindStatic(text(8))
            row.bindStatic(text(9))
            row.bindStatic(text(10))
            row.bindStatic(text(11))
        }
    }
}

extension SQLiteBinder: AggregateRowSink {
    mutating func put(_ value: String?) { bind(value) }
    mutating func put(_ value: Int64?) { bind(value) }
    mutating func put(_ value: Int?) { bind(value) }
    mutating func put(_ value: Bool?) { bind(value) }
    mutating func put(_ value: Double?) { bind(value) }
    mutating func put(_ value: UTCDay?) { bind(value?.description) }
}
