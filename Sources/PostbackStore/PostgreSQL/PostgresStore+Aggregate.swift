import NIOCore
import PostbackKit
import PostgresNIO

/// `aggregate` on PostgreSQL, its own: a day's postbacks read on a second connection while the
/// first writes the day before, as multi-row array inserts; the statements around them are
/// ``AggregateSQL``'s.
extension PostgresStore {
    /// Recomputes the days in one transaction, serialized with other `aggregate` runs by an
    /// advisory lock. The server groups identical postbacks (every column aggregation reads)
    /// and counts them, so each distinct combination is decoded once; the rows go back as one
    /// multi-row insert per table and day.
    ///
    /// The postbacks are read on a second connection, in a read-only snapshot taken once the
    /// lock is held, while the writing connection inserts the previous day's rows: the server
    /// reads one day and writes another at once, and this process decodes meanwhile (at a
    /// million postbacks, 34 s one step after another; see BENCHMARKS.md). Postbacks stored
    /// during the run are counted by the next run, as on SQLite.
    package func aggregate(_ selection: DaySelection, policy: RevenueEstimatePolicy) async throws -> AggregateSummary {
        let started = UTCInstant.now()
        let logger = self.logger
        var summary = try await transaction("aggregate") { connection in
            try await connection.send(
                "SELECT pg_advisory_xact_lock(\(PostgresSchema.aggregateLock))",
                logger: logger
            )
            let stored = try await PostgresSQL(connection: connection, logger: logger).rows(ModelsSQL.timeline)
                .map(ModelsSQL.stored)
            let models = stored.timelines
            let campaigns = CampaignMappings(
                try await PostgresSQL(connection: connection, logger: logger).rows(CampaignMappingsSQL.select)
                    .map(CampaignMappingsSQL.mapping)
            )
            try await Self.deleteRows(selection, connection, logger: logger)
            var summary = try await client.withConnection(waitingAtMost: Self.retrySeconds) { reader in
                try await Self.readOnly(reader, logger: logger) {
                    try await Self.aggregateDays(
                        selection,
                        models: models,
                        campaigns: campaigns,
                        policy: policy,
                        reader: reader,
                        writer: connection,
                        logger: logger
                    )
                }
            }
            summary.policy = policy
            let sql = PostgresSQL(connection: connection, logger: logger)
            for statement in AggregateSQL.fillStatements(selection) {
                try await sql.execute(statement)
            }
            try await sql.execute(AggregateSQL.runRecord(summary, stored: stored, selection: selection))
            return summary
        }
        summary.seconds = Double(UTCInstant.now().milliseconds - started.milliseconds) / 1000
        return summary
    }

    /// Runs `body` in a read-only snapshot on `connection`, ending it whatever happens.
    private static func readOnly<Result>(
        _ connection: PostgresConnection,
        logger: Logger,
        _ body: () async throws -> Result
    ) async throws -> Result {
        try await connection.send("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
        do {
            try await connection.send(
                "SELECT set_config('jit', 'off', true), set_config('max_parallel_workers_per_gather', '0', true), set_config('work_mem', '64MB', true)",
                logger: logger
            )
            let result = try await body()
            try await connection.send("COMMIT", logger: logger)
            return result
        } catch {
            if !connection.isClosed { _ = try? await connection.send("ROLLBACK", logger: logger) }
            throw error
        }
    }

    /// The selected days' old rows, deleted in the writing transaction.
    private static func deleteRows(
        _ selection: DaySelection,
        _ connection: PostgresConnection,
        logger: Logger
    ) async throws {
        let sql = PostgresSQL(connection: connection, logger: logger)
        for statement in AggregateSQL.deleteStatements(selection) {
            try await sql.execute(statement)
        }
    }

    /// Reads and decodes each day on `reader` while `writer` inserts the day before.
    private static func aggregateDays(
        _ selection: DaySelection,
        models: ConversionModels,
        campaigns: CampaignMappings,
        policy: RevenueEstimatePolicy,
        reader: PostgresConnection,
        writer: PostgresConnection,
        logger: Logger
    ) async throws -> AggregateSummary {
        var summary = AggregateSummary()
        var days = selection.days
        if case .all = selection {
            // The distinct days by the `postbacks_received_day` index, one probe per day,
            // rather than a scan of every postback.
            for try await text in try await reader.send(
                """
                WITH RECURSIVE days (day) AS (
                    SELECT min((received_at AT TIME ZONE 'UTC')::date) FROM postbacks
                    UNION ALL
                    SELECT (SELECT min((received_at AT TIME ZONE 'UTC')::date) FROM postbacks
                            WHERE (received_at AT TIME ZONE 'UTC')::date > days.day)
                    FROM days WHERE days.day IS NOT NULL
                )
                SELECT to_char(day, 'YYYY-MM-DD') FROM days WHERE day IS NOT NULL ORDER BY 1
                """,
                logger: logger
            ).decode(String.self) {
                if let day = UTCDay(text) { days.append(day) }
            }
        }
        summary.days = days
        var unmodelled = Set<Int64>()
        var unmodelledReengagements = Set<Int64>()
        var previous: DayAggregation?
        // The week-wide reference groups of a run's first days reach back six days: as stored,
        // else from their postbacks.
        var recent = RecentReferences()
        if case .range(let from, _) = selection {
            let stored = try ReferenceRow.days(
                try await PostgresSQL(connection: reader, logger: logger).rows(
                    AggregateSQL.storedReferences(RecentReferences.daysBefore(from))
                )
            )
            for day in recent.keepStored(stored, before: from) {
                var aggregation = DayAggregation(day: day, models: models, campaigns: campaigns)
                try await read(reader, into: &aggregation, logger: logger)
                aggregation.collectReferences()
                recent.keep(day, aggregation.references)
            }
        }
        for day in days {
            let finished = previous
            async let written: Void = write(finished, policy: policy, writer, logger: logger)
            var aggregation = DayAggregation(
                day: day,
                models: models,
                campaigns: campaigns,
                expectedGroups: finished?.groups.count ?? 0
            )
            try await read(reader, into: &aggregation, logger: logger)
            aggregation.finish(earlier: recent.before(day))
            recent.keep(day, aggregation.references)
            try await written
            summary.postbacks += aggregation.postbacks
            summary.rows += aggregation.groups.count
            unmodelled.formUnion(aggregation.unmodelled)
            unmodelledReengagements.formUnion(aggregation.unmodelledReengagements)
            previous = aggregation
        }
        try await write(previous, policy: policy, writer, logger: logger)
        summary.unmodelledApps = unmodelled.sorted()
        summary.unmodelledReengagementApps = unmodelledReengagements.sorted()
        return summary
    }

    /// Reads `aggregation`'s day's postbacks into it.
    private static func read(
        _ reader: PostgresConnection,
        into aggregation: inout DayAggregation,
        logger: Logger
    ) async throws {
        var binds = PostgresBindings()
        binds.append(aggregation.day.description)
        binds.append(aggregation.changing.sorted())
        binds.append(aggregation.breakpoints)
        for try await row in try await reader.send(
            PostgresQuery(unsafeSQL: selectPostbacks, binds: binds),
            logger: logger
        ) {
            var postback = try AggregatedPostback(row)
            if let bucket = postback.receivedBucket {
                postback.receivedAt = ConversionModels.representative(
                    bucket: bucket,
                    breakpoints: aggregation.breakpoints,
                    day: aggregation.day
                )
            }
            aggregation.add(postback)
        }
    }

    /// A day's postbacks, identical ones counted together. For the apps in `$2`, whose decoding
    /// changes within the day (``DayAggregation/changing``), the bucket of `received_at` among
    /// the day's breakpoints `$3`: their postbacks group by it, the others' as before.
    static let selectPostbacks = """
        SELECT app_id, ad_network_id, kind, key_space, version, campaign_id, source_identifier, source_app_id,
            source_domain, fidelity_type, redownload, did_win, postback_sequence_index, country_code, fine_value,
            coarse_value, conversion_type, marketplace_id, (install_date - DATE '1970-01-01')::integer,
            crowd_anonymity_tier, source_identifier_digits,
            CASE WHEN app_id = ANY($2::bigint[])
                THEN width_bucket(floor(extract(epoch FROM received_at) * 1000)::bigint, $3::bigint[]) END,
            COUNT(*)::bigint
        FROM postbacks WHERE (received_at AT TIME ZONE 'UTC')::date = $1::date
        GROUP BY app_id, ad_network_id, kind, key_space, version, campaign_id, source_identifier, source_app_id,
            source_domain, fidelity_type, redownload, did_win, postback_sequence_index, country_code, fine_value,
            coarse_value, conversion_type, marketplace_id, install_date, crowd_anonymity_tier, source_identifier_digits,
            22
        """

    /// Inserts a day's rows (nothing for nil). The rows go in the groups' hash order: a table's
    /// row order means nothing to SQL, and sorting 130,000 groups a day cost a tenth of the
    /// client's time.
    private static func write(
        _ aggregation: DayAggregation?,
        policy: RevenueEstimatePolicy,
        _ connection: PostgresConnection,
        logger: Logger
    ) async throws {
        guard let aggregation, !aggregation.groups.isEmpty || !aggregation.histogram.isEmpty else { return }
        let groups = aggregation.groups
        let capacity = groups.count
        var daily = AggregateRows(
            metrics: Array(repeating: .int8, count: GroupMetrics().counts.count),
            capacity: capacity
        )
        var revenue = AggregateRows(metrics: [.bool, .text, .float8, .float8, .float8], capacity: capacity)
        var events = AggregateRows(metrics: [.text, .int8, .int8, .int8], capacity: capacity)
        var eventRevenue = AggregateRows(metrics: [.text, .text, .float8, .float8, .float8], capacity: capacity)
        for (key, metrics) in groups {
            // The mapping's names, looked up once for the group's rows in all four tables.
            let mapped = key.mapping.map { aggregation.campaigns.rows[$0] }
            daily.appendKey(key, day: aggregation.day, mapped: mapped)
            for (index, count) in metrics.counts.enumerated() { daily.metrics[index].append(count) }
            for (currency, range) in metrics.revenue.sorted(by: { $0.key < $1.key }) {
                revenue.appendKey(key, day: aggregation.day, mapped: mapped)
                revenue.metrics[0].append(key.isReengagement)
                revenue.appendRevenue(currency, range, policy, from: 1)
            }
            for (name, event) in metrics.events.sorted(by: { $0.key < $1.key }) {
                events.appendKey(key, day: aggregation.day, mapped: mapped)
                events.metrics[0].append(name)
                events.metrics[1].append(event.occurrencesMin)
                events.metrics[2].append(event.occurrencesMax)
                events.metrics[3].append(event.postbacks)
                for (currency, range) in event.revenue.sorted(by: { $0.key < $1.key }) {
                    eventRevenue.appendKey(key, day: aggregation.day, mapped: mapped)
                    eventRevenue.metrics[0].append(name)
                    eventRevenue.appendRevenue(currency, range, policy, from: 1)
                }
            }
        }
        let dimensions = AggregateDimension.columnList
        for (table, rows, metricColumns) in [
            ("aggregate_daily", daily, GroupMetrics.countColumns),
            ("aggregate_daily_revenue", revenue, AggregateSQL.detailedRevenueColumns),
            ("aggregate_daily_events", events, "event, occurrences_min, occurrences_max, postbacks"),
            (
                "aggregate_daily_event_revenue", eventRevenue,
                "event, currency, revenue_min, revenue_max, revenue_estimate"
            ),
        ] where rows.count > 0 {
            try await connection.send(
                unnestInsert("INSERT INTO \(table) (\(dimensions), \(metricColumns))", rows.columns),
                logger: logger
            )
        }
        let totals = aggregation.totals
        if !totals.isEmpty {
            func keyColumns() -> [PostgresArrayColumn] {
                [
                    PostgresArrayColumn(.date), PostgresArrayColumn(.int8), PostgresArrayColumn(.text),
                    PostgresArrayColumn(.date), PostgresArrayColumn(.int4),
                ]
            }
            func appendKey(_ key: TotalsKey, to columns: inout [PostgresArrayColumn]) {
                columns[0].append(aggregation.day)
                columns[1].append(key.appID)
                columns[2].append(key.adNetworkID)
                columns[3].append(key.installDate)
                columns[4].append(key.crowdAnonymityTier)
            }
            var counts = keyColumns() + GroupMetrics().counts.map { _ in PostgresArrayColumn(.int8) }
            var revenue =
                keyColumns() + [PostgresArrayColumn(.bool), PostgresArrayColumn(.text)]
                + (0..<6).map { _ in PostgresArrayColumn(.float8) }
            for (key, metrics) in totals {
                appendKey(key, to: &counts)
                for (index, count) in metrics.counts.enumerated() { counts[5 + index].append(count) }
                for (reengagement, sums) in [(false, metrics.revenue), (true, metrics.reengagementRevenue)] {
                    for (currency, range) in sums.sorted(by: { $0.key < $1.key }) {
                        appendKey(key, to: &revenue)
                        revenue[5].append(reengagement)
                        revenue[6].append(currency)
                        let (observed, modeled) = (range.observed(policy), range.modeled(policy))
                        revenue[7].append(observed.min)
                        revenue[8].append(observed.max)
                        revenue[9].append(observed.estimate)
                        revenue[10].append(modeled.min)
                        revenue[11].append(modeled.max)
                        revenue[12].append(modeled.estimate)
                    }
                }
            }
            try await connection.send(
                unnestInsert("INSERT INTO aggregate_daily_totals (\(AggregateSQL.totalsColumns))", counts),
                logger: logger
            )
            if revenue[0].count > 0 {
                try await connection.send(
                    unnestInsert(
                        "INSERT INTO aggregate_daily_totals_revenue (\(AggregateSQL.totalsRevenueColumns))",
                        revenue
                    ),
                    logger: logger
                )
            }
        }
        let referenceRows = aggregation.referenceRows
        if !referenceRows.isEmpty {
            var columns = [
                PostgresArrayColumn(.date), PostgresArrayColumn(.int8), PostgresArrayColumn(.text),
                PostgresArrayColumn(.int4), PostgresArrayColumn(.bool), PostgresArrayColumn(.text),
                PostgresArrayColumn(.int8), PostgresArrayColumn(.text), PostgresArrayColumn(.int8),
                PostgresArrayColumn(.int8),
            ]
            for reference in referenceRows {
                columns[0].append(aggregation.day)
                columns[1].append(reference.key.appID)
                columns[2].append(reference.key.adNetworkID)
                columns[3].append(reference.key.sequenceIndex)
                columns[4].append(reference.key.reengagement)
                columns[5].append(reference.basis.rawValue)
                columns[6].append(reference.postbacks)
                columns[7].append(reference.currency)
                columns[8].append(reference.minMicros)
                columns[9].append(reference.maxMicros)
            }
            try await connection.send(
                unnestInsert("INSERT INTO aggregate_daily_references (\(AggregateSQL.referenceColumns))", columns),
                logger: logger
            )
        }
        if !aggregation.histogram.isEmpty {
            var date = PostgresArrayColumn(.date)
            var appID = PostgresArrayColumn(.int8)
            var network = PostgresArrayColumn(.text)
            var fine = PostgresArrayColumn(.int4)
            var count = PostgresArrayColumn(.int8)
            for (key, postbacks) in aggregation.histogram {
                date.append(aggregation.day)
                appID.append(key.appID)
                network.append(key.network)
                fine.append(key.fine)
                count.append(postbacks)
            }
            try await connection.send(
                unnestInsert(
                    "INSERT INTO aggregate_fine_values (date, app_id, ad_network_id, fine_value, postbacks)",
                    [date, appID, network, fine, count]
                ),
                logger: logger
            )
        }
    }
}

/// Rows of one aggregate table: the dimension columns, then its metric columns.
struct AggregateRows {
    var date: PostgresArrayColumn
    var appID: PostgresArrayColumn
    var network: PostgresArrayColumn
    var sourceIdentifier: PostgresArrayColumn
    var sourceAppID: PostgresArrayColumn
    var sourceDomain: PostgresArrayColumn
    var version: PostgresArrayColumn
    var fidelityType: PostgresArrayColumn
    var redownload: PostgresArrayColumn
    var didWin: PostgresArrayColumn
    var sequenceIndex: PostgresArrayColumn
    var country: PostgresArrayColumn
    var marketplaceID: PostgresArrayColumn
    var installDate: PostgresArrayColumn
    var crowdAnonymityTier: PostgresArrayColumn
    var sourceIdentifierDigits: PostgresArrayColumn
    var campaign: PostgresArrayColumn
    var adGroup: PostgresArrayColumn
    var creative: PostgresArrayColumn
    var conversionType: PostgresArrayColumn
    var metrics: [PostgresArrayColumn]

    /// Columns with room for `capacity` rows.
    init(metrics: [PostgresArrayColumn.Element], capacity: Int) {
        date = PostgresArrayColumn(.date, capacity: capacity)
        appID = PostgresArrayColumn(.int8, capacity: capacity)
        network = PostgresArrayColumn(.text, capacity: capacity)
        sourceIdentifier = PostgresArrayColumn(.text, capacity: capacity)
        sourceAppID = PostgresArrayColumn(.int8, capacity: capacity)
        sourceDomain = PostgresArrayColumn(.text, capacity: capacity)
        version = PostgresArrayColumn(.text, capacity: capacity)
        fidelityType = PostgresArrayColumn(.int4, capacity: capacity)
        redownload = PostgresArrayColumn(.bool, capacity: capacity)
        didWin = PostgresArrayColumn(.bool, capacity: capacity)
        sequenceIndex = PostgresArrayColumn(.int4, capacity: capacity)
        country = PostgresArrayColumn(.text, capacity: capacity)
        marketplaceID = PostgresArrayColumn(.text, capacity: capacity)
        installDate = PostgresArrayColumn(.date, capacity: capacity)
        crowdAnonymityTier = PostgresArrayColumn(.int4, capacity: capacity)
        sourceIdentifierDigits = PostgresArrayColumn(.int4, capacity: capacity)
        campaign = PostgresArrayColumn(.text, capacity: capacity)
        adGroup = PostgresArrayColumn(.text, capacity: capacity)
        creative = PostgresArrayColumn(.text, capacity: capacity)
        conversionType = PostgresArrayColumn(.text, capacity: capacity)
        self.metrics = metrics.map { PostgresArrayColumn($0, capacity: capacity) }
    }

    var count: Int { date.count }

    /// The dimensions in ``AggregateDimension`` order, then the metrics.
    var columns: [PostgresArrayColumn] {
        [
            date, appID, network, sourceIdentifier, sourceAppID, sourceDomain, version, fidelityType, redownload,
            didWin, sequenceIndex, country, marketplaceID, installDate, crowdAnonymityTier, sourceIdentifierDigits,
            campaign, adGroup, creative, conversionType,
        ] + metrics
    }

    /// The dimensions of `key`, with `mapped`'s names (its mapping row's).
    mutating func appendKey(_ key: GroupKey, day: UTCDay, mapped: CampaignMapping?) {
        date.append(day)
        appID.append(key.appID)
        network.append(key.adNetworkID)
        sourceIdentifier.append(key.sourceIdentifier)
        sourceAppID.append(key.sourceAppID)
        sourceDomain.append(key.sourceDomain)
        version.append(key.version)
        fidelityType.append(key.fidelityType)
        redownload.append(key.redownload)
        didWin.append(key.didWin)
        sequenceIndex.append(key.sequenceIndex)
        country.append(key.countryCode)
        marketplaceID.append(key.marketplaceID)
        installDate.append(key.installDate)
        crowdAnonymityTier.append(key.crowdAnonymityTier)
        sourceIdentifierDigits.append(key.sourceIdentifierDigits)
        campaign.append(mapped?.campaign)
        adGroup.append(mapped?.adGroup)
        creative.append(mapped?.creative)
        conversionType.append(key.conversionType.rawValue)
    }

    /// The currency and the observed minimum, maximum and estimate, from metric column `first`
    /// on.
    mutating func appendRevenue(
        _ currency: String,
        _ range: RevenueSum,
        _ policy: RevenueEstimatePolicy,
        from first: Int
    ) {
        metrics[first].append(currency)
        let observed = range.observed(policy)
        metrics[first + 1].append(observed.min)
        metrics[first + 2].append(observed.max)
        metrics[first + 3].append(observed.estimate)
    }
}

extension AggregatedPostback {
    /// Reads a row of ``PostgresStore/selectPostbacks``.
    init(_ row: PostgresRow) throws {
        let cells = row.makeRandomAccess()
        appID = try cells[0].decode(Int64.self)
        adNetworkID = try cells[1].decode(String.self)
        isAAK = try cells[2].decode(String.self) == "aak"
        keySpace = try cells[3].decode(String.self)
        version = try cells[4].decode(String?.self)
        campaignID = try cells[5].decode(Int64?.self)
        sourceIdentifier = try cells[6].decode(String?.self)
        sourceAppID = try cells[7].decode(Int64?.self)
        sourceDomain = try cells[8].decode(String?.self)
        fidelityType = try cells[9].decode(Int32?.self).map(Int64.init)
        redownload = try cells[10].decode(Bool?.self)
        didWin = try cells[11].decode(Bool?.self)
        sequenceIndex = Int(try cells[12].decode(Int32.self))
        countryCode = try cells[13].decode(String?.self)
        let fine = try cells[14].decode(Int32?.self).map(Int.init)
        let coarse = try cells[15].decode(String?.self)
        conversionValue =
            fine.map { .fine($0) } ?? coarse.flatMap(CoarseConversionValue.init(rawValue:)).map { .coarse($0) }
        conversionType = try cells[16].decode(String?.self)
        marketplaceID = try cells[17].decode(String?.self)
        installDate = try cells[18].decode(Int32?.self).map { UTCDay(daysSinceEpoch: Int64($0)) }
        crowdAnonymityTier = try cells[19].decode(Int32?.self).map(Int.init)
        sourceIdentifierDigits = try cells[20].decode(Int32?.self).map(Int.init)
        receivedBucket = try cells[21].decode(Int32?.self).map(Int.init)
        count = Int(try cells[22].decode(Int64.self))
    }
}
