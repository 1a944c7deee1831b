import PostbackKit

extension PostbackStorage {
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
