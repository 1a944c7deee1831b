import PostbackKit

/// `postbackd check`: the engine's own check of the store's pages and indexes, then
/// postbackd's invariants, on either engine, reading the rows in pages (memory stays flat).
///
/// The invariants:
/// - each postback's `dedup_key` is the digest of its key columns (``DedupKeyDigest``);
/// - `raw_sha256` is the SHA-256 of `raw` (postbacks, sightings that keep `raw`, quarantine:
///   the digest is of the bytes kept, the whole body or the head of an oversized one);
/// - every sighting, conflict and delivery points at a stored postback (and a conflict at
///   its sighting);
/// - each aggregated day's rows count as many postbacks as the dashboard's sums of them, and
///   no more than the store holds for that day (fewer is not a fault: postbacks received
///   after the last `aggregate`, which is a notice).
///
/// Ingest runs left `running` (killed runs; a re-run finishes their work) are notices too.
///
/// `--quick` checks the recent rows alone (``CheckWindow``): the nightly check, whose cost is
/// a day's rows however large the store; the whole check reads every page and row.
package enum CheckJob {
    /// What to check, and how to tell of progress.
    package struct Options: Sendable {
        /// The recent rows only (``CheckWindow``), and not the engine's check of every page.
        package var quick = false
        /// With `quick`: the first day received of the window (nil: the day before the newest).
        package var since: UTCDay?
        /// Rows read at a time.
        package var pageSize = 2_000
        /// At most this many findings are kept (the count goes on).
        var maximumFindings = 1_000

        package init(quick: Bool = false, since: UTCDay? = nil) {
            self.quick = quick
            self.since = since
        }
    }

    /// Opens the store at `location` read-only and checks it.
    ///
    /// - Throws: ``StoreFault`` when the store cannot be opened at all (``CheckReport`` holds
    ///   every fault found once it is open).
    package static func run(
        _ location: StoreLocation,
        options: Options = Options(),
        progress: (@Sendable (CheckProgress) -> Void)? = nil
    ) async throws -> CheckReport {
        try await PostbackStores.with(location, access: .readOnly) { store in
            try await check(store, options: options, progress: progress)
        }
    }

    package static func check(
        _ store: any CheckableStore,
        options: Options,
        progress: (@Sendable (CheckProgress) -> Void)? = nil
    ) async throws -> CheckReport {
        let started = ContinuousClock.now
        var report = CheckReport(store: store.location.description)
        let window = options.quick ? try await store.checkWindow(since: options.since) : nil
        report.window = window
        if options.quick {
            report.engine = EngineCheck(
                name: "engine check",
                outcome: .skipped,
                messages: ["--quick reads the recent rows only; run check without it for every page and index"]
            )
        } else {
            report.engine = try await engineCheck(store)
        }

        func record(_ finding: CheckFinding) {
            report.findingCount += 1
            if report.findings.count < options.maximumFindings { report.findings.append(finding) }
        }

        // For progress only (a whole check's: a quick one does not know its rows ahead): a
        // damaged table's count is found missing when its rows are read.
        let totals = window == nil ? (try? await store.checkRowCounts()) ?? [:] : [:]
        var rawPruned: [CheckedTable: Int] = [:]
        for table in CheckedTable.allCases {
            var checked = 0
            // A whole check reads the table in id order; a quick one, its window's days.
            let days: [UTCDay?] = window.map { $0.days(table) } ?? [nil]
            let total = totals[table] ?? 0
            progress?(CheckProgress(table: table, checked: 0, total: total))
            for day in days {
                var after: Int64 = 0
                while true {
                    let rows: [CheckedRow]
                    do {
                        rows = try await store.checkRows(table, after: after, limit: options.pageSize, day: day)
                    } catch {
                        // Damage stops a table's reading; the other tables and checks go on.
                        let fault = StoreFault.classify(error, at: store.location)
                        record(
                            CheckFinding(
                                table: table.rawValue,
                                rowID: nil,
                                problem: "reading stopped after row \(after): \(fault.code) (\(fault.reason))"
                            )
                        )
                        break
                    }
                    for row in rows {
                        if row.rawPruned(table) { rawPruned[table, default: 0] += 1 }
                        for problem in row.problems(table) {
                            record(CheckFinding(table: table.rawValue, rowID: row.id, problem: problem))
                        }
                    }
                    checked += rows.count
                    if let last = rows.last { after = last.id }
                    progress?(CheckProgress(table: table, checked: checked, total: max(total, checked)))
                    if rows.count < options.pageSize { break }
                }
            }
            report.checked[table] = checked
            if let pruned = rawPruned[table] {
                report.notices.append(
                    "\(pruned) \(table.rawValue) rows had their raw bytes pruned (retention raw): their digests and decoded columns are kept, the bytes are not checked"
                )
            }
        }

        do {
            for finding in try await store.checkReferences(limit: options.maximumFindings, window: window) {
                record(finding)
            }
        } catch {
            record(
                CheckFinding(
                    table: "sightings",
                    rowID: nil,
                    problem: "references not checked: \(StoreFault.classify(error, at: store.location).reason)"
                )
            )
        }

        do {
            let days = try await store.checkAggregatedDays(since: window?.since)
            report.aggregatedDays = days.count
            for day in days {
                for (table, sum) in day.sums where sum != day.aggregated {
                    record(
                        CheckFinding(
                            table: table,
                            rowID: nil,
                            problem:
                                "date \(day.day): its rows count \(sum) postbacks, aggregate_daily's \(day.aggregated); run `postbackd aggregate --from \(day.day) --to \(day.day)`"
                        )
                    )
                }
                if day.stored < day.aggregated {
                    record(
                        CheckFinding(
                            table: "aggregate_daily",
                            rowID: nil,
                            problem:
                                "date \(day.day): its rows count \(day.aggregated) postbacks, the store holds \(day.stored) received that day (postbacks removed or rows edited since aggregate); run `postbackd aggregate --from \(day.day) --to \(day.day)`"
                        )
                    )
                } else if day.stored > day.aggregated {
                    report.notices.append(
                        "date \(day.day): \(day.stored - day.aggregated) of its \(day.stored) postbacks arrived after the last aggregate run; `postbackd aggregate` counts them"
                    )
                }
            }
        } catch {
            record(
                CheckFinding(
                    table: "aggregate_daily",
                    rowID: nil,
                    problem: "aggregates not checked: \(StoreFault.classify(error, at: store.location).reason)"
                )
            )
        }

        do {
            for run in try await store.unfinishedRuns() {
                report.notices.append(
                    "ingest run \(run.id) started \(run.startedAt) is still marked running (\(run.inputs)): a run that was killed, or one running now; the same command again finishes its work"
                )
            }
        } catch {
            record(
                CheckFinding(
                    table: "ingest_runs",
                    rowID: nil,
                    problem: "runs not checked: \(StoreFault.classify(error, at: store.location).reason)"
                )
            )
        }
        report.seconds = (ContinuousClock.now - started) / .seconds(1)
        return report
    }

    private static func engineCheck(_ store: any CheckableStore) async throws -> EngineCheck {
        do {
            return try await store.checkEngine()
        } catch {
            let fault = StoreFault.classify(error, at: store.location)
            switch fault.code {
            case .damaged, .ioError:
                return EngineCheck(
                    name: "integrity_check",
                    outcome: .problems,
                    messages: [fault.reason]
                )
            default:
                throw fault
            }
        }
    }
}

/// What `check --quick` reads: the rows received from a day on (by default the day before
/// the newest day any row was received), day by day through each table's index on the day
/// received; the references of those rows (sightings of those days, conflicts and deliveries
/// from the window's first sighting and postback on); the aggregated days from that day. What
/// was checked before is not read again, so its cost is the window's rows, not the store's.
package struct CheckWindow: Sendable {
    /// The first day received; nil when the store holds no row.
    package var since: UTCDay?
    /// Each table's newest day received (none: an empty table).
    package var newest: [CheckedTable: UTCDay]
    /// Each table's least id received from `since` on (none: no such row).
    package var first: [CheckedTable: Int64] = [:]

    package init(since: UTCDay?, newest: [CheckedTable: UTCDay]) {
        self.since = since
        self.newest = newest
    }

    /// The days of `table` to read: from `since` to its newest.
    func days(_ table: CheckedTable) -> [UTCDay] {
        guard let since, let newest = newest[table], first[table] != nil, since <= newest else { return [] }
        return (since.daysSinceEpoch...newest.daysSinceEpoch).map { UTCDay(daysSinceEpoch: $0) }
    }
}

/// The tables whose rows `check` reads one by one.
package enum CheckedTable: String, Sendable, Hashable, CaseIterable {
    case postbacks, sightings, quarantine
}

/// One row as `check` reads it: the columns its invariants compare.
package struct CheckedRow: Sendable {
    package var id: Int64
    /// kind, key space, ad network, transaction id and sequence index (postbacks only).
    package var key: (kind: String, keySpace: String, adNetworkID: String, transactionID: String, sequenceIndex: Int64)?
    package var dedupKey: [UInt8]?
    /// Nil when not kept (a sighting without a conflict).
    package var raw: [UInt8]?
    var rawSHA256: [UInt8]

    package init(
        id: Int64,
        key: (kind: String, keySpace: String, adNetworkID: String, transactionID: String, sequenceIndex: Int64)? = nil,
        dedupKey: [UInt8]? = nil,
        raw: [UInt8]?,
        rawSHA256: [UInt8]
    ) {
        self.id = id
        self.key = key
        self.dedupKey = dedupKey
        self.raw = raw
        self.rawSHA256 = rawSHA256
    }

    /// Its raw bytes were cleared by `prune` (retention `raw`): no stored postback or copy is
    /// empty, so empty bytes are pruned ones.
    func rawPruned(_ table: CheckedTable) -> Bool {
        table != .quarantine && raw?.isEmpty == true
    }

    /// What is wrong with the row, in words (none when it is sound).
    func problems(_ table: CheckedTable) -> [String] {
        var problems: [String] = []
        if table == .postbacks {
            if let key {
                let expected = DedupKeyDigest.digest(
                    kind: key.kind,
                    keySpace: key.keySpace,
                    adNetworkID: key.adNetworkID,
                    transactionID: key.transactionID,
                    sequenceIndex: key.sequenceIndex
                )
                if dedupKey != expected {
                    problems.append(
                        "dedup_key \(hexString(dedupKey ?? [])) is not the digest of its key columns (\(key.kind), \(key.keySpace), \(key.adNetworkID), \(key.transactionID), \(key.sequenceIndex)), which is \(hexString(expected)): a key column or the digest was changed after it was stored"
                    )
                }
            }
        }
        if let raw, !rawPruned(table) {
            let digest = SHA256Digest.hash(raw)
            if digest != rawSHA256 {
                problems.append(
                    "raw_sha256 \(hexString(rawSHA256)) is not the SHA-256 of raw (\(raw.count) bytes), which is \(hexString(digest)): the body or its digest was changed after it was stored"
                )
            }
        }
        return problems
    }
}

/// One aggregated day's sums: `aggregate_daily`'s, the dashboard's tables', and the
/// postbacks the store holds for it.
package struct AggregatedDayCounts: Sendable {
    package var day: String
    /// `SUM(postbacks)` of `aggregate_daily`.
    package var aggregated: Int64
    /// The same sum over each table of sums, by table.
    package var sums: [(table: String, sum: Int64)]
    /// Postbacks stored with that day received.
    package var stored: Int64
}

/// An ingest run still marked `running`.
package struct UnfinishedRun: Sendable {
    package var id: Int64
    package var startedAt: String
    package var inputs: String
}

/// The engine's own check.
package struct EngineCheck: Sendable {
    package enum Outcome: String, Sendable {
        case sound, problems, skipped
    }
    /// What ran: `integrity_check`, `amcheck bt_index_check` (`engine check` when skipped by `--quick`).
    package var name: String
    package var outcome: Outcome
    /// The engine's messages (problems), or why it was skipped.
    package var messages: [String]
}

/// One thing wrong in the store.
package struct CheckFinding: Sendable, Hashable {
    package var table: String
    /// The row's id (for conflicts the sighting's, for deliveries the postback's); nil for a
    /// finding about a day or a whole table.
    var rowID: Int64?
    package var problem: String
}

/// How far `check` has got, for a progress line.
package struct CheckProgress: Sendable {
    package var table: CheckedTable
    package var checked: Int
    package var total: Int
}

/// What `check` found.
package struct CheckReport: Sendable {
    package var store: String
    package var engine = EngineCheck(name: "", outcome: .skipped, messages: [])
    package var checked: [CheckedTable: Int] = [:]
    package var aggregatedDays = 0
    /// `--quick`'s window; nil for a whole check.
    package var window: CheckWindow?
    /// The first findings (``CheckJob/Options/maximumFindings``).
    package var findings: [CheckFinding] = []
    var findingCount = 0
    /// What is not a fault but worth knowing: runs left running, days not yet aggregated.
    package var notices: [String] = []
    package var seconds: Double = 0

    /// No finding, and the engine found nothing.
    package var sound: Bool { findingCount == 0 && engine.outcome != .problems }

    init(store: String) {
        self.store = store
    }

    /// The report as text: each finding on a line with its table and row.
    package var text: String {
        var lines: [String] = []
        let engineLine: String
        switch engine.outcome {
        case .sound: engineLine = "\(engine.name): ok"
        case .problems: engineLine = "\(engine.name): \(engine.messages.count) problem(s)"
        case .skipped: engineLine = "\(engine.name): skipped (\(engine.messages.joined(separator: "; ")))"
        }
        lines.append("\(store): \(engineLine)")
        if engine.outcome == .problems {
            for message in engine.messages { lines.append("  \(engine.name): \(message)") }
        }
        let counts = CheckedTable.allCases.map { "\(checked[$0] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
        lines.append("checked \(counts), \(aggregatedDays) aggregated days in \(formatSeconds(seconds))")
        if let window {
            lines.append(
                window.since.map {
                    "quick: the rows received from \($0) on and the aggregated days from \($0); run check without --quick for the whole store"
                } ?? "quick: the store holds no row"
            )
        }
        for finding in findings {
            let row = finding.rowID.map { " row \($0)" } ?? ""
            lines.append("finding: \(finding.table)\(row): \(finding.problem)")
        }
        if findingCount > findings.count {
            lines.append("… and \(findingCount - findings.count) more findings")
        }
        for notice in notices { lines.append("notice: \(notice)") }
        lines.append(
            sound
                ? "sound: no finding"
                : "NOT SOUND: \(findingCount) finding(s)\(engine.outcome == .problems ? " and the engine's check found problems" : ""); restore from a backup, or run `postbackd aggregate` where an aggregate is at fault"
        )
        return lines.joined(separator: "\n") + "\n"
    }

    /// The report as one JSON object.
    package var json: String {
        var object = JSONObjectWriter()
        object.add("store", store)
        object.add("sound", sound)
        var engineObject = JSONObjectWriter()
        engineObject.add("check", engine.name)
        engineObject.add("outcome", engine.outcome.rawValue)
        engineObject.add("messages", strings: engine.messages)
        object.addRaw("engine", json: engineObject.text)
        var checkedObject = JSONObjectWriter()
        for table in CheckedTable.allCases { checkedObject.add(table.rawValue, checked[table] ?? 0) }
        checkedObject.add("aggregated_days", aggregatedDays)
        object.addRaw("checked", json: checkedObject.text)
        object.add("quick", window != nil)
        object.add("since", window?.since?.description)
        object.add("finding_count", findingCount)
        let findingsJSON = findings.map { finding in
            var item = JSONObjectWriter()
            item.add("table", finding.table)
            item.add("row_id", finding.rowID)
            item.add("problem", finding.problem)
            return item.text
        }
        object.addRaw("findings", json: "[" + findingsJSON.joined(separator: ",") + "]")
        object.add("notices", strings: notices)
        object.add("seconds", seconds)
        return object.text + "\n"
    }
}
