import NIOCore
import PostbackKit
import PostgresNIO

/// `aggregate` on PostgreSQL, its own: a day's postbacks read on a second connection while the
/// first writes the day before, one `COPY` per table and day; the statements around them are
/// ``AggregateSQL``'s.
extension PostgresStore {
    /// Recomputes the days in one transaction, serialized with other `aggregate` runs by an
    /// advisory lock. The server groups identical postbacks (every column aggregation reads)
    /// and counts them, so each distinct combination is decoded once; the rows go back as one
    /// `COPY` per table and day (``AggregateCopyRows``).
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
            // The reader, a second connection, watched as the writer's is.
            let pool = servers.current
            var summary = try await pool.client.withConnection(waitingAtMost: Self.retrySeconds) { reader in
                try await servers.watching(reader, on: pool, until: nil) {
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
                SELECT to_char(day, 'YYYY-MM-DD') FROM days WHERE day IS NOT NULL
                UNION SELECT DISTINCT to_char((received_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') FROM pruned_postbacks
                ORDER BY 1
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
        // A day's stored postbacks, then what `prune` removed of its test and development ones.
        for select in [selectPostbacks, selectPrunedPostbacks] {
            for try await row in try await reader.send(PostgresQuery(unsafeSQL: select, binds: binds), logger: logger) {
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
    }

    /// A day's postbacks, identical ones counted together. For the apps in `$2`, whose decoding
    /// changes within the day (``DayAggregation/changing``), the bucket of `received_at` among
    /// the day's breakpoints `$3`: their postbacks group by it, the others' as before.
    static let selectPostbacks = selectAggregated(from: "postbacks")
    static let selectPrunedPostbacks = selectAggregated(from: "pruned_postbacks")

    private static func selectAggregated(from table: String) -> String {
        """
        SELECT app_id, ad_network_id, kind, key_space, version, campaign_id, source_identifier, source_app_id,
            source_domain, fidelity_type, redownload, did_win, postback_sequence_index, country_code, fine_value,
            coarse_value, conversion_type, marketplace_id, (install_date - DATE '1970-01-01')::integer,
            crowd_anonymity_tier, source_identifier_digits,
            CASE WHEN app_id = ANY($2::bigint[])
                THEN width_bucket(floor(extract(epoch FROM received_at) * 1000)::bigint, $3::bigint[]) END,
            COUNT(*)::bigint
        FROM \(table) WHERE (received_at AT TIME ZONE 'UTC')::date = $1::date AND \(AppsSQL.claimed)
        GROUP BY app_id, ad_network_id, kind, key_space, version, campaign_id, source_identifier, source_app_id,
            source_domain, fidelity_type, redownload, did_win, postback_sequence_index, country_code, fine_value,
            coarse_value, conversion_type, marketplace_id, install_date, crowd_anonymity_tier, source_identifier_digits,
            22
        """
    }

    /// Writes a day's rows (nothing for nil), each table's with one `COPY`
    /// (``AggregateCopyRows``).
    private static func write(
        _ aggregation: DayAggregation?,
        policy: RevenueEstimatePolicy,
        _ connection: PostgresConnection,
        logger: Logger
    ) async throws {
        guard let aggregation, !aggregation.groups.isEmpty || !aggregation.histogram.isEmpty else { return }
        let rows = AggregateCopyRows(aggregation, policy: policy)
        let dimensions = AggregateDimension.columnList
        for (table, rows, columns) in [
            ("aggregate_daily", rows.daily, "\(dimensions), \(GroupMetrics.countColumns)"),
            ("aggregate_daily_revenue", rows.revenue, "\(dimensions), \(AggregateSQL.detailedRevenueColumns)"),
            ("aggregate_daily_events", rows.events, "\(dimensions), \(AggregateSQL.eventColumns)"),
            ("aggregate_daily_event_revenue", rows.eventRevenue, "\(dimensions), \(AggregateSQL.eventRevenueColumns)"),
            ("aggregate_daily_totals", rows.totals, AggregateSQL.totalsColumns),
            ("aggregate_daily_totals_revenue", rows.totalsRevenue, AggregateSQL.totalsRevenueColumns),
            ("aggregate_daily_references", rows.references, AggregateSQL.referenceColumns),
            ("aggregate_fine_values", rows.histogram, AggregateSQL.fineValueColumns),
        ] {
            try await connection.copy(rows, into: table, columns: columns, logger: logger)
        }
    }
}

/// A day's rows of every aggregate table, as COPY text (``PostgresCopyRows``), built apart from
/// the `async` writer that sends them.
struct AggregateCopyRows {
    var daily: PostgresCopyRows
    var revenue: PostgresCopyRows
    var events: PostgresCopyRows
    var eventRevenue: PostgresCopyRows
    var totals = PostgresCopyRows()
    var totalsRevenue = PostgresCopyRows()
    var references = PostgresCopyRows()
    var histogram = PostgresCopyRows()

    /// The rows go in the groups' hash order: a table's row order means nothing to SQL, and
    /// sorting 130,000 groups a day cost a tenth of the client's time.
    init(_ aggregation: DayAggregation, policy: RevenueEstimatePolicy) {
        let day = aggregation.day
        // About 200 bytes of text a detailed row.
        let capacity = aggregation.groups.count * 200
        daily = PostgresCopyRows(capacity: capacity)
        revenue = PostgresCopyRows(capacity: capacity / 2)
        events = PostgresCopyRows(capacity: capacity)
        eventRevenue = PostgresCopyRows(capacity: capacity / 2)
        for (key, metrics) in aggregation.groups {
            // The mapping's names, looked up once for the group's rows in all four tables.
            let mapped = key.mapping.map { aggregation.campaigns.rows[$0] }
            daily.appendKey(key, day: day, mapped: mapped)
            metrics.putCounts(into: &daily)
            daily.endRow()
            for (currency, range) in metrics.revenue.sorted(by: { $0.key < $1.key }) {
                revenue.appendKey(key, day: day, mapped: mapped)
                revenue.append(key.isReengagement)
                range.putObserved(currency, policy, into: &revenue)
                revenue.endRow()
            }
            for (name, event) in metrics.events.sorted(by: { $0.key < $1.key }) {
                events.appendKey(key, day: day, mapped: mapped)
                events.append(name)
                events.append(event.occurrencesMin)
                events.append(event.occurrencesMax)
                events.append(event.postbacks)
                events.endRow()
                for (currency, range) in event.revenue.sorted(by: { $0.key < $1.key }) {
                    eventRevenue.appendKey(key, day: day, mapped: mapped)
                    eventRevenue.append(name)
                    range.putObserved(currency, policy, into: &eventRevenue)
                    eventRevenue.endRow()
                }
            }
        }
        for (key, metrics) in aggregation.totals {
            key.put(day: day, into: &totals)
            metrics.putCounts(into: &totals)
            totals.endRow()
            for (reengagement, sums) in [(false, metrics.revenue), (true, metrics.reengagementRevenue)] {
                for (currency, range) in sums.sorted(by: { $0.key < $1.key }) {
                    key.put(day: day, into: &totalsRevenue)
                    range.putWithModeled(currency, policy, reengagement: reengagement, into: &totalsRevenue)
                    totalsRevenue.endRow()
                }
            }
        }
        for reference in aggregation.referenceRows {
            references.append(day)
            reference.put(into: &references)
            references.endRow()
        }
        for (key, postbacks) in aggregation.histogram {
            histogram.append(day)
            key.put(postbacks, into: &histogram)
            histogram.endRow()
        }
    }
}

extension PostgresCopyRows {
    /// The dimensions of `key` in ``AggregateDimension`` order, with `mapped`'s names (its
    /// mapping row's).
    mutating func appendKey(_ key: GroupKey, day: UTCDay, mapped: CampaignMapping?) {
        append(day)
        append(key.appID)
        append(key.adNetworkID)
        append(key.sourceIdentifier)
        append(key.sourceAppID)
        append(key.sourceDomain)
        append(key.version)
        append(key.fidelityType)
        append(key.redownload)
        append(key.didWin)
        append(key.sequenceIndex)
        append(key.countryCode)
        append(key.marketplaceID)
        append(key.installDate)
        append(key.crowdAnonymityTier)
        append(key.sourceIdentifierDigits)
        append(mapped?.campaign)
        append(mapped?.adGroup)
        append(mapped?.creative)
        append(key.conversionType.rawValue)
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
