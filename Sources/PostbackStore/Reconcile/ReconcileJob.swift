import PostbackKit

/// `postbackd reconcile` and `GET /api/v1/reconcile`: the devices' copies against what each
/// network forwarded, per group (production postbacks only).
///
/// A postback's day is the day its stored row was received: its first reading, whichever side
/// that was, so a row does not move when the other side arrives. `aggregate` counts each day
/// it recomputes into `reconcile_daily` (``PostbackStorage/refreshReconciliation(_:)``), and a
/// reconciliation sums those rows: a year of a large store is read in a few thousand rows. Only
/// two things are read from the postbacks themselves: the day the grace period ends on (its
/// unmatched postbacks are split by the hour), and, with ``ReconcileRequest/live``, every day.
package enum ReconcileJob {
    /// The reconciliation of `request` and, when `aggregate` may be behind, a warning, from a
    /// store opened read-only for the call.
    package static func run(
        _ location: StoreLocation,
        _ request: ReconcileRequest
    ) async throws -> (reconciliation: Reconciliation, warning: String?) {
        try await PostbackStores.with(location, access: .readOnly) { store in
            let reconciliation = try await request.read(store)
            return (reconciliation, request.live ? nil : try await store.stalenessWarning())
        }
    }
}

extension ReconcileRequest {
    /// Reads the reconciliation from an open store: `aggregate`'s rows, but for the day the
    /// grace period ends on, read from the postbacks (all days with ``live``); and what the
    /// forwarding channels sent that was quarantined.
    package func read(_ store: any PostbackStorage) async throws -> Reconciliation {
        let mappings = CampaignMappings(try await store.campaignMappings().map(\.mapping))
        let request = self
        let groups = try await store.withSQL("reconcile", .read) { sql in
            var groups: [ReconcileKey: ReconcileCounts] = [:]
            let cutoffDay = request.cutoff.day
            if request.live {
                try await request.count(sql, from: request.from, to: request.to, mappings: mappings, into: &groups)
            } else {
                try await sql.forEachRow(ReconcileSQL.summed(request)) { row in
                    let (key, counts) = try request.summed(row)
                    groups[key, default: ReconcileCounts()].add(counts)
                }
                let coversCutoff =
                    (request.from.map { $0 <= cutoffDay } ?? true) && (request.to.map { cutoffDay <= $0 } ?? true)
                if request.judgesUnmatched && coversCutoff {
                    try await request.count(sql, from: cutoffDay, to: cutoffDay, mappings: mappings, into: &groups)
                }
            }
            // A quarantined entry has no app: a reconciliation of some apps leaves them out.
            if request.appIDs.isEmpty && request.countsQuarantined {
                try await sql.forEachRow(ReconcileSQL.quarantined(request)) { row in
                    var key = ReconcileKey()
                    if request.dimensions.contains(.date) { key.date = try row.instant(0).day }
                    if request.dimensions.contains(.adNetworkID) { key.adNetworkID = try row.optionalString(1) }
                    if request.dimensions.contains(.kind) { key.kind = try row.optionalString(2) }
                    if request.dimensions.contains(.channel) { key.channel = try row.string(3) }
                    groups[key, default: ReconcileCounts()].forwardQuarantined += 1
                }
            }
            return groups
        }
        // The keys sorted alone: a row's counts are twenty integers, which a sort of the pairs
        // moved at every step (12 ms of the dashboard's year).
        return Reconciliation(
            request: self,
            rows: groups.keys.sorted().map { key in (key, groups[key] ?? ReconcileCounts()) }
        )
    }

    /// Counts the postbacks received from `from` to `to` (inclusive; nil: unbounded) into
    /// `groups`, each from its stored row and its first reading of the other kind, classified
    /// and summed by the statement (``ReconciledPostbacks``).
    func count(
        _ sql: any SQLDatabase,
        from: UTCDay?,
        to: UTCDay?,
        mappings: CampaignMappings,
        into groups: inout [ReconcileKey: ReconcileCounts]
    ) async throws {
        // No cutoff past any instant a store holds: every unmatched postback is missing.
        let cutoff = cutoff < ReconciledPostbacks.latestInstant ? cutoff : nil
        let mapped = Set(mappings.rows.map(\.adNetworkID)).sorted()
        try await sql.mapsFileForBulkRead()
        let classes = ReconciledPostbacks.classes(cutoff: cutoff)
        let paths = classes.map(\.path)
        let statement = ReconciledPostbacks.summed(
            self,
            from: from,
            to: to,
            mapped: mapped,
            conditions: classes.map(\.condition)
        )
        try await sql.forEachRow(statement) { row in
            let (key, counts) = try ReconciledPostbacks.group(row, dimensions, paths: paths, mappings: mappings)
            groups[key, default: ReconcileCounts()].add(counts)
        }
    }

    /// A row of ``ReconcileSQL/summed(_:)``: its group, and its counts with the unmatched
    /// postbacks missing their other side (days before the one the grace period ends on) or
    /// pending (days after it).
    func summed(_ row: SQLRow) throws -> (ReconcileKey, ReconcileCounts) {
        var key = ReconcileKey()
        for (index, dimension) in dimensions.enumerated() {
            switch dimension {
            case .date: key.date = try row.day(index)
            case .adNetworkID: key.adNetworkID = try row.string(index)
            case .appID: key.appID = try row.int64(index)
            case .kind: key.kind = try row.string(index)
            case .postbackSequenceIndex: key.sequenceIndex = try row.int(index)
            case .channel: key.channel = try row.optionalString(index)
            case .campaign: key.campaign = try row.optionalString(index)
            }
        }
        var index = dimensions.count
        let missing = try row.int(index) == 1
        index += 1
        var counts = ReconcileCounts()
        for (_, path) in ReconcileSQL.storedCounts {
            counts[keyPath: path] = try row.int(index)
            index += 1
        }
        let (copies, forwards) = (try row.int(index), try row.int(index + 1))
        if missing {
            counts.copyOnly = copies
            counts.forwardOnly = forwards
        } else {
            counts.pending = copies + forwards
        }
        return (key, counts)
    }
}

/// What ``PostbackStorage/countReconciliation(_:)`` counted for `reconcile_daily`: the days
/// (nil: every day) and their groups, by every dimension.
package struct ReconciliationRecount: Sendable {
    package var days: [UTCDay]?
    var groups: [ReconcileKey: ReconcileCounts]
}

extension PostbackStorage {
    /// `aggregate`'s part for `reconcile`, counted in a read transaction of its own, so that it
    /// runs beside the engine's aggregate (which holds one core: the nightly job's wall time
    /// stays what it was on two): the days of `selection` and the days of the postbacks whose
    /// other side was received on them (a forward read three days after its copy changes its
    /// copy's day), every dimension, unmatched postbacks counted as such.
    package func countReconciliation(_ selection: DaySelection) async throws -> ReconciliationRecount {
        try await withSQL("count the reconciliation", .read) { sql in
            let mappings = CampaignMappings(
                try await sql.rows(CampaignMappingsSQL.select).map(CampaignMappingsSQL.mapping)
            )
            let request = ReconcileRequest(
                dimensions: ReconcileDimension.allCases,
                asOf: UTCInstant(milliseconds: Int64.max / 2),
                graceDays: 0
            )
            var groups: [ReconcileKey: ReconcileCounts] = [:]
            guard case .range(let from, let to) = selection else {
                try await request.count(sql, from: nil, to: nil, mappings: mappings, into: &groups)
                return ReconciliationRecount(days: nil, groups: groups)
            }
            var days = Set(selection.days)
            try await sql.forEachRow(ReconcileSQL.daysOfSightings(from: from, to: to)) { days.insert(try $0.day(0)) }
            for day in days.sorted() {
                try await request.count(sql, from: day, to: day, mappings: mappings, into: &groups)
            }
            return ReconciliationRecount(days: days.sorted(), groups: groups)
        }
    }

    /// Replaces the recounted days' rows of `reconcile_daily` in one transaction, so that a
    /// reconciliation sees the old rows or the new ones.
    package func writeReconciliation(_ recount: ReconciliationRecount) async throws {
        try await withSQL("write the reconciliation", .write) { sql in
            try await sql.lock(PostgresSchema.aggregateLock)
            for table in ["reconcile_daily", "reconcile_daily_totals"] {
                if let days = recount.days {
                    for start in stride(from: 0, to: days.count, by: 500) {
                        let some = days[start..<min(start + 500, days.count)].map { "\($0)" as SQLQuery }
                        try await sql.execute("DELETE FROM \(raw: table) WHERE date IN (\(list: some))")
                    }
                } else {
                    try await sql.execute("DELETE FROM \(raw: table)")
                }
            }
            try await ReconcileSQL.insert(recount.groups, into: "reconcile_daily", sql)
            var totals: [ReconcileKey: ReconcileCounts] = [:]
            for (key, counts) in recount.groups {
                var total = ReconcileKey()
                (total.date, total.adNetworkID, total.appID) = (key.date, key.adNetworkID, key.appID)
                totals[total, default: ReconcileCounts()].add(counts)
            }
            try await ReconcileSQL.insert(totals, into: "reconcile_daily_totals", sql)
        }
    }

    /// ``countReconciliation(_:)`` then ``writeReconciliation(_:)``; returns the days recounted
    /// (nil: every day).
    @discardableResult
    package func refreshReconciliation(_ selection: DaySelection) async throws -> [UTCDay]? {
        let recount = try await countReconciliation(selection)
        try await writeReconciliation(recount)
        return recount.days
    }
}
