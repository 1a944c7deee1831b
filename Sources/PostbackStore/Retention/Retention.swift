import PostbackKit

/// A kind of data `postbackd prune` removes once it is older than its retention (days).
/// Nothing is removed until `retention set` names a kind; a production postback's row is never
/// removed, only its raw bytes (`raw`).
package enum RetentionKind: String, Sendable, Hashable, CaseIterable {
    /// Quarantined entries (their counts stay in the intake).
    case quarantine
    /// Test-mode postbacks (their dedup keys stay).
    case test
    /// AdAttributionKit development-key postbacks (their dedup keys stay).
    case development
    /// Production postbacks of apps not registered, under `apps policy registered` (their dedup
    /// keys stay).
    case unclaimed
    /// The raw bytes of stored postbacks, and of their copies' differing bytes; the row, its
    /// digest, dedup key and every decoded column stay.
    case raw
    /// `forward`'s deliveries that ended delivered or rejected.
    case deliveries
    /// Apple Ads tokens resolved (exchanged, not attributed, expired or failed): removed when no
    /// attribution record holds them, else only the token's text is cleared.
    case appleAdsTokens = "apple-ads-tokens"
    /// Finished ingest and prune runs.
    case runs

    /// What the kind removes, for `retention show` and `prune`.
    package var what: String {
        switch self {
        case .quarantine: "quarantined entries (their counts stay in the intake)"
        case .test: "test-mode postbacks (their dedup keys stay)"
        case .development: "development-key postbacks (their dedup keys stay)"
        case .unclaimed: "postbacks of apps not registered (their dedup keys stay)"
        case .raw: "raw bytes of stored postbacks (rows, digests and decoded columns stay)"
        case .deliveries: "forward deliveries delivered or rejected"
        case .appleAdsTokens: "Apple Ads tokens resolved"
        case .runs: "finished ingest and prune runs"
        }
    }

    /// The kinds walked by UTC day received (their progress is kept), in the order `prune` takes
    /// them: rows first, then the raw bytes of what stays.
    package var isByDay: Bool {
        switch self {
        case .quarantine, .test, .development, .unclaimed, .raw: true
        case .deliveries, .appleAdsTokens, .runs: false
        }
    }
}

/// One kind's retention as stored.
package struct RetentionRule: Sendable, Hashable {
    package var kind: RetentionKind
    /// Kept this many days; nil: kept forever.
    package var days: Int?
    package var setAt: String?
    /// The first UTC day received not yet examined by `prune` (kinds walked by day).
    package var examinedBefore: UTCDay?
}

/// What `retention set` cannot take.
package struct RetentionError: CodedError {
    package struct Code: Hashable, Sendable {
        fileprivate enum Value: Hashable { case invalidValue }
        fileprivate let value: Value
        package static let invalidValue = Code(value: .invalidValue)
    }

    package let code: Code
    package let reason: String

    package init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// Parses `KIND=DAYS` (`KIND=off`: kept forever).
    package static func setting(_ text: String) throws(RetentionError) -> (RetentionKind, Int?) {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let kinds = RetentionKind.allCases.map(\.rawValue).joined(separator: ", ")
        guard parts.count == 2, let kind = RetentionKind(rawValue: String(parts[0])) else {
            throw RetentionError(.invalidValue, "\(text.escapedForTerminal): expected KIND=DAYS, KIND one of \(kinds)")
        }
        if parts[1] == "off" { return (kind, nil) }
        guard let days = Int(parts[1]), (1...36_500).contains(days) else {
            throw RetentionError(
                .invalidValue,
                "\(text.escapedForTerminal): DAYS is 1 to 36500, or off (kept forever)"
            )
        }
        return (kind, days)
    }
}

/// What a `prune` removed (or, dry, would remove) of one kind.
package struct PrunedKind: Sendable, Hashable {
    package var kind: RetentionKind
    /// Rows removed (`raw`: postbacks whose bytes were cleared; `apple-ads-tokens`: tokens
    /// removed or cleared).
    package var rows = 0
    /// Sightings (copies) removed with their postbacks, or whose bytes were cleared.
    package var sightings = 0
    /// What was removed: rows received before this day (kinds by day), or finished before this
    /// instant.
    package var before: String
    /// Why the kind was not examined (`unclaimed` under `apps policy all`), if it was not.
    package var skipped: String?
}

/// A `prune` run's result.
package struct PruneReport: Sendable, Hashable {
    package var runID: Int64?
    package var dryRun: Bool
    /// The kinds with a retention, in ``RetentionKind`` order.
    package var kinds: [PrunedKind] = []
}

/// Which new postbacks ingest and `serve` check against `pruned_keys`: those whose key `prune`
/// may have kept. Test-mode and development postbacks (a percent of the traffic) once the
/// table holds any key; production ones only once `unclaimed` has a retention (the only
/// production rows `prune` removes). The check costs SQLite a probe of the table per row (10%
/// of its store-only rate when every row paid it), so the bulk of the traffic does not pay it.
struct PrunedKeyGuard: Sendable, Hashable {
    var nonProduction = false
    var production = false

    func covers(_ keySpace: KeySpace) -> Bool {
        keySpace == .production ? production : nonProduction
    }

    /// One row: whether `pruned_keys` holds a key, whether `unclaimed` has a retention.
    static let read: SQLQuery = """
        SELECT EXISTS (SELECT 1 FROM pruned_keys), EXISTS (SELECT 1 FROM retention WHERE kind = 'unclaimed')
        """

    init(nonProduction: Bool = false, production: Bool = false) {
        self.nonProduction = nonProduction
        self.production = production
    }

    init(_ row: SQLRow) throws {
        let held = try row.bool(0)
        let unclaimed = try row.bool(1)
        self.init(nonProduction: held, production: held && unclaimed)
    }
}

/// The statements of retention, the same on both engines.
enum RetentionSQL {
    /// The condition on `postbacks` rows of a kind that removes rows.
    static func rowCondition(_ kind: RetentionKind) -> SQLQuery {
        switch kind {
        case .test: "key_space = 'test'"
        case .development: "key_space = 'development'"
        case .unclaimed: "key_space = 'production' AND NOT \(raw: AppsSQL.claimed)"
        default: "FALSE"
        }
    }

    /// A `postbacks` row with raw bytes to clear: its own, or a copy's that differ.
    static let holdsRaw: SQLQuery = """
        (length(raw) > 0 OR EXISTS (SELECT 1 FROM sightings s WHERE s.postback_id = postbacks.id AND length(s.raw) > 0))
        """

    /// The quarantine's UTC day received (indexed on both engines, as `postbacks`'s).
    static let receivedDay = SQLQuery.receivedDay

    /// A valid copy of a postback `prune` removed (its key kept): a duplicate on its day's intake,
    /// as a sighting would have been.
    static func countCopyOfPruned(receivedAt: UTCInstant) -> SQLQuery {
        addIntake(day: receivedAt.day, quarantined: 0, duplicates: 1, conflicts: 0)
    }

    /// Adds counts to the intake of pruned rows, which `aggregate` adds to what the store holds.
    static func addIntake(day: UTCDay, quarantined: Int, duplicates: Int, conflicts: Int) -> SQLQuery {
        """
        INSERT INTO pruned_intake (date, quarantined, duplicates, conflicts)
        VALUES (\(day), \(quarantined), \(duplicates), \(conflicts))
        ON CONFLICT (date) DO UPDATE SET quarantined = pruned_intake.quarantined + excluded.quarantined,
            duplicates = pruned_intake.duplicates + excluded.duplicates,
            conflicts = pruned_intake.conflicts + excluded.conflicts
        """
    }
}

extension PostbackStorage {
    /// Every kind's retention, in ``RetentionKind`` order (a kind never set: kept forever).
    package func retentionRules() async throws -> [RetentionRule] {
        try await withSQL("read the retention", .statement) { sql in
            var stored: [RetentionKind: RetentionRule] = [:]
            let rows = try await sql.rows(
                "SELECT kind, days, \(SQLQuery.instantText("set_at")), \(SQLQuery.dayText("examined_before")) FROM retention"
            )
            for row in rows {
                guard let kind = RetentionKind(rawValue: try row.string(0)) else { continue }
                stored[kind] = RetentionRule(
                    kind: kind,
                    days: try row.optionalInt(1),
                    setAt: try row.optionalString(2),
                    examinedBefore: try row.optionalString(3).flatMap(UTCDay.init)
                )
            }
            return RetentionKind.allCases.map { stored[$0] ?? RetentionRule(kind: $0) }
        }
    }

    /// Sets each kind's retention (nil: kept forever), keeping its progress.
    package func setRetention(_ settings: [(RetentionKind, Int?)]) async throws {
        let now = UTCInstant.now()
        try await withSQL("set the retention", .write) { sql in
            for (kind, days) in settings {
                try await sql.execute(
                    """
                    INSERT INTO retention (kind, days, set_at) VALUES (\(kind.rawValue), \(days), \(now))
                    ON CONFLICT (kind) DO UPDATE SET days = excluded.days, set_at = excluded.set_at
                    """
                )
            }
        }
    }

    /// Applies the retention: removes, kind by kind, what is older than its days, in batches of
    /// at most `batch` rows, each its own short transaction (`serve`, `ingest` and reports go on
    /// meanwhile). Kinds by day record their progress after each day, so a prune killed part
    /// way is finished by the next; what it removed is removed whole (a postback with its
    /// sightings, conflicts and deliveries, and its dedup key kept in `pruned_keys`). `full`
    /// examines every day again (postbacks stored with an old time received after the last
    /// prune, or apps unregistered since). `dryRun` counts instead. `afterBatch` is called after
    /// each committed batch (a throw stops the prune there, as a kill between transactions).
    package func prune(
        dryRun: Bool,
        full: Bool = false,
        batch: Int = 2_000,
        now: UTCInstant = .now(),
        afterBatch: () throws -> Void = {},
        progress: (PrunedKind) -> Void = { _ in }
    ) async throws -> PruneReport {
        let rules = try await retentionRules().filter { $0.days != nil }
        var report = PruneReport(dryRun: dryRun)
        guard !rules.isEmpty else { return report }
        if !dryRun {
            report.runID = try await withSQL("record the prune", .write, retry: .run) { sql in
                try await sql.row(
                    "INSERT INTO prune_runs (started_at, status, dry_run) VALUES (\(now), 'running', \(false)) RETURNING id"
                )?.int64(0)
            }
        }
        do {
            for rule in rules {
                guard let days = rule.days else { continue }
                let cutoff = UTCInstant(milliseconds: now.milliseconds - Int64(days) * 86_400_000)
                var pruned: PrunedKind
                if rule.kind.isByDay {
                    let before = UTCDay(daysSinceEpoch: now.day.daysSinceEpoch - Int64(days))
                    pruned = PrunedKind(kind: rule.kind, before: before.description)
                    let from = full ? nil : rule.examinedBefore
                    if rule.kind == .unclaimed, try await appsPolicy() == .all {
                        // Every app counts: nothing is unclaimed, and no day is marked examined,
                        // so a later `apps policy registered` has the prune examine them all.
                        pruned.skipped = "apps policy all: every app's postbacks count"
                    } else if dryRun {
                        try await countByDay(rule.kind, from: from, before: before, into: &pruned)
                    } else {
                        try await pruneByDay(
                            rule.kind,
                            from: from,
                            before: before,
                            batch: batch,
                            afterBatch: afterBatch,
                            into: &pruned
                        )
                    }
                } else {
                    pruned = PrunedKind(kind: rule.kind, before: cutoff.iso8601)
                    try await pruneByTime(
                        rule.kind,
                        before: cutoff,
                        batch: batch,
                        dryRun: dryRun,
                        currentRun: report.runID,
                        afterBatch: afterBatch,
                        into: &pruned
                    )
                }
                report.kinds.append(pruned)
                progress(pruned)
            }
        } catch {
            if let runID = report.runID {
                _ = try? await finishPruneRun(runID, status: "failed", report)
            }
            throw error
        }
        if let runID = report.runID {
            try await finishPruneRun(runID, status: "completed", report)
        }
        return report
    }

    private func finishPruneRun(_ runID: Int64, status: String, _ report: PruneReport) async throws {
        var removed = JSONObjectWriter()
        for kind in report.kinds {
            var counts = JSONObjectWriter()
            counts.add("rows", kind.rows)
            counts.add("sightings", kind.sightings)
            counts.add("before", kind.before)
            removed.addRaw(kind.kind.rawValue, json: counts.text)
        }
        let finished = UTCInstant.now()
        try await withSQL("record the prune", .write, retry: .run) { sql in
            try await sql.execute(
                """
                UPDATE prune_runs SET finished_at = \(finished), status = \(status), removed = \(removed.text)
                WHERE id = \(runID)
                """
            )
        }
    }

    /// After a committed batch: `afterBatch`, then, on SQLite (one writer at a time), a pause as
    /// long as the batch held the write lock and at least 25 ms, so that a writer waiting on the
    /// lock (`serve`, `ingest`, whose waits poll every 25 to 100 ms) takes it before the next
    /// batch: without it, back-to-back batches starved `serve` (6 requests answered in the
    /// time PostgreSQL answered hundreds). PostgreSQL's writers do not share a lock with the
    /// prune's rows.
    private func endBatch(_ started: ContinuousClock.Instant, _ afterBatch: () throws -> Void) async throws {
        try afterBatch()
        guard case .sqlite = location else { return }
        let held = ContinuousClock.now - started
        try await Task.sleep(for: max(held, .milliseconds(25)))
    }

    /// The first day received at or after `day` (nil: the first) that holds rows of `table`.
    private func nextDay(_ table: String, atOrAfter day: UTCDay?, before end: UTCDay) async throws -> UTCDay? {
        try await withSQL("find the next day to prune", .statement) { sql in
            let bound: SQLQuery = day.map { "WHERE \(RetentionSQL.receivedDay) >= \($0)" } ?? ""
            let row = try await sql.row("SELECT min(\(RetentionSQL.receivedDay)) FROM \(raw: table) \(bound)")
            guard let next = try row?.optionalDay(0), next < end else { return nil }
            return next
        }
    }

    private func pruneByDay(
        _ kind: RetentionKind,
        from start: UTCDay?,
        before end: UTCDay,
        batch: Int,
        afterBatch: () throws -> Void,
        into pruned: inout PrunedKind
    ) async throws {
        let table = kind == .quarantine ? "quarantine" : "postbacks"
        var day = start
        while let current = try await nextDay(table, atOrAfter: day, before: end) {
            switch kind {
            case .quarantine: try await pruneQuarantine(current, batch: batch, afterBatch: afterBatch, into: &pruned)
            case .raw: try await pruneRaw(current, batch: batch, afterBatch: afterBatch, into: &pruned)
            default: try await prunePostbacks(kind, current, batch: batch, afterBatch: afterBatch, into: &pruned)
            }
            day = current.next
            try await recordProgress(kind, examinedBefore: current.next)
        }
        try await recordProgress(kind, examinedBefore: max(end, start ?? end))
    }

    private func recordProgress(_ kind: RetentionKind, examinedBefore day: UTCDay) async throws {
        try await withSQL("record the prune's progress", .statement) { sql in
            try await sql.execute(
                "UPDATE retention SET examined_before = \(day) WHERE kind = \(kind.rawValue)"
            )
        }
    }

    private func countByDay(
        _ kind: RetentionKind,
        from start: UTCDay?,
        before end: UTCDay,
        into pruned: inout PrunedKind
    ) async throws {
        let range: SQLQuery =
            start.map { "\(RetentionSQL.receivedDay) >= \($0) AND \(RetentionSQL.receivedDay) < \(end)" }
            ?? "\(RetentionSQL.receivedDay) < \(end)"
        let (rows, sightings) = try await withSQL("count what a prune would remove", .read) { sql in
            switch kind {
            case .quarantine:
                let count = try await sql.row("SELECT COUNT(*) FROM quarantine WHERE \(range)")?.int(0) ?? 0
                return (count, 0)
            case .raw:
                let count =
                    try await sql.row("SELECT COUNT(*) FROM postbacks WHERE \(range) AND length(raw) > 0")?.int(0) ?? 0
                let copies =
                    try await sql.row(
                        """
                        SELECT COUNT(*) FROM sightings WHERE length(raw) > 0
                            AND postback_id IN (SELECT id FROM postbacks WHERE \(range))
                        """
                    )?.int(0) ?? 0
                return (count, copies)
            default:
                let condition = RetentionSQL.rowCondition(kind)
                let count =
                    try await sql.row("SELECT COUNT(*) FROM postbacks WHERE \(range) AND \(condition)")?.int(0) ?? 0
                let copies =
                    try await sql.row(
                        """
                        SELECT COUNT(*) FROM sightings
                        WHERE postback_id IN (SELECT id FROM postbacks WHERE \(range) AND \(condition))
                        """
                    )?.int(0) ?? 0
                return (count, copies)
            }
        }
        pruned.rows += rows
        pruned.sightings += sightings
    }

    /// Removes a day's quarantine, its counts added to the pruned intake.
    private func pruneQuarantine(
        _ day: UTCDay,
        batch: Int,
        afterBatch: () throws -> Void,
        into pruned: inout PrunedKind
    ) async throws {
        while true {
            let started = ContinuousClock.now
            let removed = try await withSQL("prune the quarantine", .write) { sql in
                let rows = try await sql.rows(
                    """
                    DELETE FROM quarantine WHERE id IN (
                        SELECT id FROM quarantine WHERE \(RetentionSQL.receivedDay) = \(day) ORDER BY id LIMIT \(batch))
                    RETURNING received_count
                    """
                )
                let quarantined = try rows.reduce(0) { $0 + (try $1.int(0)) }
                if !rows.isEmpty {
                    try await sql.execute(
                        RetentionSQL.addIntake(day: day, quarantined: quarantined, duplicates: 0, conflicts: 0)
                    )
                }
                return rows.count
            }
            pruned.rows += removed
            try await endBatch(started, afterBatch)
            if removed < batch { return }
        }
    }

    /// Walks a day's `postbacks` rows that match `condition` in id order, at most `batch` a
    /// transaction: each batch's rows are selected (and, on PostgreSQL, locked: a new copy
    /// arriving meanwhile waits, then finds its key in `pruned_keys`), and `body` gets, in the
    /// same transaction, the condition `id IN (…)` of exactly those rows (never the condition
    /// again: under PostgreSQL's READ COMMITTED a later statement would see rows committed
    /// since, or an app registered since), and returns what it removed.
    private func eachBatch(
        of day: UTCDay,
        where condition: SQLQuery,
        batch: Int,
        afterBatch: () throws -> Void,
        into pruned: inout PrunedKind,
        _ body: (any SQLDatabase, SQLQuery) async throws -> (rows: Int, sightings: Int)
    ) async throws {
        var last: Int64 = 0
        while true {
            let started = ContinuousClock.now
            let after = last
            let step = try await withSQL("prune postbacks", .write) {
                sql -> (rows: Int, sightings: Int, high: Int64?) in
                let ids = try await sql.rows(
                    """
                    SELECT id FROM postbacks WHERE \(RetentionSQL.receivedDay) = \(day) AND \(condition) AND id > \(after)
                    ORDER BY id LIMIT \(batch)\(sqlite: "", postgres: " FOR UPDATE")
                    """
                )
                guard let high = try ids.last?.int64(0) else { return (0, 0, nil) }
                let list: [SQLQuery] = try ids.map { "\(try $0.int64(0))" }
                let removed = try await body(sql, "id IN (\(list: list))")
                return (removed.rows, removed.sightings, high)
            }
            pruned.rows += step.rows
            pruned.sightings += step.sightings
            guard let high = step.high else { return }
            try await endBatch(started, afterBatch)
            last = high
        }
    }

    /// Removes a day's postbacks of `kind` with their sightings, conflicts and deliveries, the
    /// sightings' counts added to the pruned intake and each dedup key kept in `pruned_keys`.
    private func prunePostbacks(
        _ kind: RetentionKind,
        _ day: UTCDay,
        batch: Int,
        afterBatch: () throws -> Void,
        into pruned: inout PrunedKind
    ) async throws {
        try await eachBatch(
            of: day,
            where: RetentionSQL.rowCondition(kind),
            batch: batch,
            afterBatch: afterBatch,
            into: &pruned
        ) { sql, selected in
            let rows: SQLQuery = "SELECT id FROM postbacks WHERE \(selected)"
            try await sql.execute("DELETE FROM conflicts WHERE postback_id IN (\(rows))")
            let sightings = try await sql.rows(
                "DELETE FROM sightings WHERE postback_id IN (\(rows)) RETURNING \(RetentionSQL.receivedDay), conflict"
            )
            var intake: [UTCDay: (duplicates: Int, conflicts: Int)] = [:]
            for sighting in sightings {
                let sightingDay = try sighting.day(0)
                let counts = intake[sightingDay, default: (0, 0)]
                intake[sightingDay] = (counts.duplicates + 1, counts.conflicts + (try sighting.bool(1) ? 1 : 0))
            }
            for (sightingDay, counts) in intake.sorted(by: { $0.key < $1.key }) {
                try await sql.execute(
                    RetentionSQL.addIntake(
                        day: sightingDay,
                        quarantined: 0,
                        duplicates: counts.duplicates,
                        conflicts: counts.conflicts
                    )
                )
            }
            try await sql.execute("DELETE FROM deliveries WHERE postback_id IN (\(rows))")
            if kind == .test || kind == .development {
                // What `aggregate` counts of them stays: a day aggregated again reports the same.
                try await sql.execute(
                    """
                    INSERT INTO pruned_postbacks (\(raw: AggregateSQL.postbackColumns))
                    SELECT \(raw: AggregateSQL.postbackColumns) FROM postbacks WHERE \(selected)
                    """
                )
            }
            let gone = try await sql.rows(
                "DELETE FROM postbacks WHERE \(selected) RETURNING dedup_key, received_at, app_id"
            )
            let prunedAt = UTCInstant.now()
            for chunk in stride(from: 0, to: gone.count, by: 200) {
                let values: [SQLQuery] = try gone[chunk..<min(chunk + 200, gone.count)].map { row in
                    "(\(try row.bytes(0)), \(kind.rawValue), \(try row.instant(1)), \(try row.int64(2)), \(prunedAt))"
                }
                try await sql.execute(
                    """
                    INSERT INTO pruned_keys (dedup_key, kind, first_seen, app_id, pruned_at) VALUES \(list: values)
                    ON CONFLICT (dedup_key) DO NOTHING
                    """
                )
            }
            return (gone.count, sightings.count)
        }
    }

    /// Clears the raw bytes of a day's postbacks and of their sightings.
    private func pruneRaw(
        _ day: UTCDay,
        batch: Int,
        afterBatch: () throws -> Void,
        into pruned: inout PrunedKind
    ) async throws {
        let empty: [UInt8] = []
        try await eachBatch(
            of: day,
            where: RetentionSQL.holdsRaw,
            batch: batch,
            afterBatch: afterBatch,
            into: &pruned
        ) {
            sql,
            selected in
            let sightings = try await sql.rows(
                """
                UPDATE sightings SET raw = \(empty)
                WHERE postback_id IN (SELECT id FROM postbacks WHERE \(selected)) AND length(raw) > 0
                RETURNING 1
                """
            )
            let rows = try await sql.rows(
                "UPDATE postbacks SET raw = \(empty) WHERE \(selected) AND length(raw) > 0 RETURNING 1"
            )
            return (rows.count, sightings.count)
        }
    }

    /// Removes deliveries, Apple Ads tokens or runs finished before `cutoff`.
    private func pruneByTime(
        _ kind: RetentionKind,
        before cutoff: UTCInstant,
        batch: Int,
        dryRun: Bool,
        currentRun: Int64?,
        afterBatch: () throws -> Void,
        into pruned: inout PrunedKind
    ) async throws {
        let cutoffMs = cutoff.milliseconds
        let selections: [(table: String, key: String, columns: String, condition: SQLQuery, clear: SQLQuery?)]
        switch kind {
        case .deliveries:
            selections = [
                (
                    "deliveries", "(destination, postback_id)", "destination, postback_id",
                    "state IN ('delivered', 'rejected') AND last_attempt_ms < \(cutoffMs)", nil
                )
            ]
        case .appleAdsTokens:
            let resolved: SQLQuery = "state <> 'pending' AND resolved_ms < \(cutoffMs)"
            selections = [
                (
                    "apple_ads_tokens", "id", "id",
                    "\(resolved) AND NOT EXISTS (SELECT 1 FROM apple_ads_attributions a WHERE a.token_id = apple_ads_tokens.id)",
                    nil
                ),
                ("apple_ads_tokens", "id", "id", "\(resolved) AND token IS NOT NULL", "token = NULL"),
            ]
        case .runs:
            let current = currentRun ?? 0
            selections = [
                ("ingest_runs", "id", "id", "status <> 'running' AND finished_at < \(cutoff)", nil),
                // A prune killed part way left its run `running`: removed once it started
                // before the cutoff (no prune runs for days).
                (
                    "prune_runs", "id", "id",
                    """
                    ((status <> 'running' AND finished_at < \(cutoff)) OR (status = 'running' AND started_at < \(cutoff)))
                        AND id <> \(current)
                    """, nil
                ),
            ]
        default:
            return
        }
        for selection in selections {
            if dryRun {
                pruned.rows +=
                    try await withSQL("count what a prune would remove", .statement) { sql in
                        try await sql.row(
                            "SELECT COUNT(*) FROM \(raw: selection.table) WHERE \(selection.condition)"
                        )?.int(0)
                    } ?? 0
                continue
            }
            while true {
                let chosen: SQLQuery =
                    "SELECT \(raw: selection.columns) FROM \(raw: selection.table) WHERE \(selection.condition) LIMIT \(batch)"
                let started = ContinuousClock.now
                let count = try await withSQL("prune \(selection.table)", .statement) { sql in
                    if let clear = selection.clear {
                        return try await sql.rows(
                            "UPDATE \(raw: selection.table) SET \(clear) WHERE \(raw: selection.key) IN (\(chosen)) RETURNING 1"
                        ).count
                    }
                    return try await sql.rows(
                        "DELETE FROM \(raw: selection.table) WHERE \(raw: selection.key) IN (\(chosen)) RETURNING 1"
                    ).count
                }
                pruned.rows += count
                try await endBatch(started, afterBatch)
                if count < batch { break }
            }
        }
    }
}
