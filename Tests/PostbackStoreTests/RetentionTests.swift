import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// Retention and `prune` on every engine: each kind removes what its policy says and nothing
/// else; a replay of a removed postback is a duplicate; aggregates are untouched, and
/// `aggregate` after the raw bytes and the quarantine were pruned writes the same rows; a
/// prune stopped part way and run again ends where one run does.
@Suite("Retention and prune, on every engine")
struct RetentionTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("retention")
    }

    /// A day after the fixture's second day: a retention of one day prunes day one
    /// (2026-11-20) and keeps day two (2026-11-21).
    static let now = UTCInstant(milliseconds: 20_779 * 86_400_000 + 3_600_000)  // 2026-11-22T01:00Z

    /// The aggregate fixture (day one P1–P13 with the test-mode P7 and app 222's P13; day two
    /// P14, a copy of it and a quarantined body) with, on day one, a development-key postback, a
    /// copy of P1 with another country (a conflict) and a quarantined body; apps policy
    /// registered with app 111 and the development vector's app registered, so P13 is unclaimed.
    func store(_ engine: TestEngine, name: String = "retention") async throws -> (TestStore, dayOne: String) {
        let store = try await TestStore.make(engine, in: directory, name: name)
        let (dayOne, dayTwo) = try AggregateFixture.write(into: directory)
        _ = try await ModelsJob.add(
            files: [try directory.write("model.json", AggregateFixture.model)],
            location: store.location
        )
        let dayOneAt = UTCInstant(iso8601: "2026-11-20T10:00:00Z")
        try await ingest([dayOne], into: store.location, receivedAt: dayOneAt)
        try await ingest(
            [Repository.vectors + "/apple-aak-dev1-reengagement.json"],
            into: store.location,
            keyRing: .apple,
            receivedAt: dayOneAt
        )
        var copy = AggregateFixture.postback(.v3_0, id: 1, value: .fine(20))
        copy.countryCode = "FR"
        let copies = try directory.write(
            "day-one-copies.jsonl",
            try TestKeys.signer.signed(copy).jsonText() + "\n{\"junk\": 1}\n"
        )
        try await ingest([copies], into: store.location, receivedAt: UTCInstant(iso8601: "2026-11-20T11:00:00Z"))
        try await ingest([dayTwo], into: store.location, receivedAt: UTCInstant(iso8601: "2026-11-21T10:00:00Z"))
        let second = try String(contentsOfFile: dayTwo, encoding: .utf8)
        let intake = try directory.write("intake.jsonl", second + "\n{\"not\": \"a postback\"}\n")
        try await ingest([intake], into: store.location, receivedAt: UTCInstant(iso8601: "2026-11-21T11:00:00Z"))
        let developmentApp = try #require(
            try await store.strings("SELECT app_id FROM postbacks WHERE key_space = 'development'").first ?? nil
        )
        try await PostbackStores.with(store.location) { storage in
            try await storage.setAppsPolicy(.registered)
            _ = try await storage.addApp(111, name: nil, bundleID: nil)
            _ = try await storage.addApp(try #require(Int64(developmentApp)), name: nil, bundleID: nil)
        }
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        return (store, dayOne)
    }

    /// Every aggregate table's rows, sorted (the run log aside).
    func aggregates(_ store: TestStore) async throws -> [String: [String]] {
        let names: [String?] =
            switch store.engine {
            case .sqlite:
                try await store.strings(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'aggregate%' AND name <> 'aggregate_runs'"
                )
            case .postgres:
                try await store.strings(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'aggregate%' AND table_name <> 'aggregate_runs'"
                )
            }
        var tables: [String: [String]] = [:]
        for case let name? in names { tables[name] = try await store.rows("SELECT * FROM \(name)").sorted() }
        return tables
    }

    /// Counts of the tables prune touches, by what tells the kinds apart.
    func counts(_ store: TestStore) async throws -> [String: Int] {
        let day = "substr(CAST(received_at AS TEXT), 1, 10)"
        var counts: [String: Int] = [:]
        for keySpace in ["production", "test", "development"] {
            for date in ["2026-11-20", "2026-11-21"] {
                counts["postbacks \(keySpace) \(date)"] = try await store.count(
                    "postbacks",
                    where: "key_space = '\(keySpace)' AND \(day) = '\(date)'"
                )
            }
        }
        counts["postbacks of app 222"] = try await store.count("postbacks", where: "app_id = 222")
        counts["postbacks with raw"] = try await store.count("postbacks", where: "length(raw) > 0")
        counts["sightings"] = try await store.count("sightings")
        counts["sightings with raw"] = try await store.count("sightings", where: "length(raw) > 0")
        counts["conflicts"] = try await store.count("conflicts")
        for date in ["2026-11-20", "2026-11-21"] {
            counts["quarantine \(date)"] = try await store.count("quarantine", where: "\(day) = '\(date)'")
        }
        counts["pruned_keys"] = try await store.count("pruned_keys")
        return counts
    }

    func prune(
        _ store: TestStore,
        _ settings: [(RetentionKind, Int?)],
        now: UTCInstant = now,
        full: Bool = false
    ) async throws -> PruneReport {
        try await PostbackStores.with(store.location) { storage in
            try await storage.setRetention(RetentionKind.allCases.map { ($0, nil) } + settings)
            return try await storage.prune(dryRun: false, full: full, now: now)
        }
    }

    @Test("each kind removes what its retention says and nothing else", arguments: TestEngine.available)
    func eachKind(_ engine: TestEngine) async throws {
        let (store, _) = try await store(engine)
        let reports = try await aggregates(store)
        var expected = try await counts(store)
        #expect(expected["postbacks test 2026-11-20"] == 1)
        #expect(expected["postbacks development 2026-11-20"] == 1)
        #expect(expected["postbacks of app 222"] == 1)
        #expect(expected["quarantine 2026-11-20"] == 1 && expected["quarantine 2026-11-21"] == 1)
        #expect(expected["sightings"] == 2 && expected["conflicts"] == 1)

        // Nothing is pruned until a retention is set; a dry run changes nothing.
        let none = try await PostbackStores.with(store.location) { try await $0.prune(dryRun: false, now: Self.now) }
        #expect(none.kinds.isEmpty)
        let dry = try await PostbackStores.with(store.location) { storage in
            try await storage.setRetention([(.test, 1), (.raw, 1)])
            return try await storage.prune(dryRun: true, now: Self.now)
        }
        let dayOne =
            expected["postbacks production 2026-11-20"]! + expected["postbacks test 2026-11-20"]!
            + expected["postbacks development 2026-11-20"]!
        #expect(dry.kinds.map(\.rows) == [1, dayOne])
        #expect(try await counts(store) == expected)

        // test: P7 goes, its key stays.
        var report = try await prune(store, [(.test, 1)])
        #expect(report.kinds.map(\.rows) == [1])
        expected["postbacks test 2026-11-20"] = 0
        expected["postbacks with raw"]! -= 1
        expected["pruned_keys"] = 1
        #expect(try await counts(store) == expected)

        // development.
        report = try await prune(store, [(.development, 1)])
        #expect(report.kinds.map(\.rows) == [1])
        expected["postbacks development 2026-11-20"] = 0
        expected["postbacks with raw"]! -= 1
        expected["pruned_keys"] = 2
        #expect(try await counts(store) == expected)

        // unclaimed: app 222's P13, not app 111's postbacks.
        report = try await prune(store, [(.unclaimed, 1)])
        #expect(report.kinds.map(\.rows) == [1])
        expected["postbacks production 2026-11-20"]! -= 1
        expected["postbacks of app 222"] = 0
        expected["postbacks with raw"]! -= 1
        expected["pruned_keys"] = 3
        #expect(try await counts(store) == expected)

        // quarantine: day one's body, not day two's.
        report = try await prune(store, [(.quarantine, 1)])
        #expect(report.kinds.map(\.rows) == [1])
        expected["quarantine 2026-11-20"] = 0
        #expect(try await counts(store) == expected)

        // raw: day one's bytes (and its copy's differing bytes), not day two's; rows stay.
        report = try await prune(store, [(.raw, 1)])
        #expect(report.kinds.map(\.rows) == [dayOne - 3])
        #expect(report.kinds.map(\.sightings) == [1])
        expected["postbacks with raw"] = 1
        expected["sightings with raw"]! -= 1
        #expect(try await counts(store) == expected)

        // A second prune finds nothing more; the aggregates were never touched.
        report = try await prune(
            store,
            [(.test, 1), (.development, 1), (.unclaimed, 1), (.quarantine, 1), (.raw, 1)]
        )
        #expect(report.kinds.map(\.rows) == [0, 0, 0, 0, 0])
        #expect(try await counts(store) == expected)
        #expect(try await aggregates(store) == reports)

        // check: the pruned raw bytes and the pruned test and development postbacks are no
        // finding (the aggregates count them; their keys are held).
        let check = try await CheckJob.run(store.location)
        #expect(check.findings.isEmpty, "\(check.findings)")
        #expect(check.notices.contains { $0.contains("raw bytes pruned") })
    }

    @Test("a replay of a pruned postback is a duplicate, not stored again", arguments: TestEngine.available)
    func replay(_ engine: TestEngine) async throws {
        let (store, dayOne) = try await store(engine)
        _ = try await prune(store, [(.test, 1), (.development, 1), (.unclaimed, 1), (.raw, 1)])
        let before = try await counts(store)
        let replayedAt = UTCInstant(iso8601: "2026-11-22T09:00:00Z")
        let summary = try await ingest([dayOne], into: store.location, receivedAt: replayedAt)
        #expect(summary.accepted == 0)
        #expect(summary.duplicates == summary.read)
        let development = try await ingest(
            [Repository.vectors + "/apple-aak-dev1-reengagement.json"],
            into: store.location,
            keyRing: .apple,
            receivedAt: replayedAt
        )
        #expect(development.accepted == 0 && development.duplicates == 1)
        #expect(try await counts(store) == before)
        // A replay of a pruned postback is a duplicate on its day's intake (the stored ones
        // re-read from the same file add nothing, as before).
        let replayDay = try #require(UTCDay("2026-11-22"))
        _ = try await AggregateJob.run(store.location, .range(from: replayDay, to: replayDay), policy: .midpoint)
        #expect(
            try await store.rows(
                "SELECT quarantined, duplicates, conflicts FROM aggregate_daily_intake WHERE date = '2026-11-22'"
            ) == [engine == .sqlite ? "0|3|0" : "(0,3,0)"]
        )
    }

    @Test(
        "aggregate after the raw bytes and the quarantine were pruned writes the same rows",
        arguments: TestEngine.available
    )
    func aggregateAfterPrune(_ engine: TestEngine) async throws {
        let (store, _) = try await store(engine)
        let reports = try await aggregates(store)
        _ = try await prune(store, [(.raw, 1), (.quarantine, 1)])
        let dayOne = try await store.count("postbacks", where: "length(raw) = 0")
        #expect(dayOne == 14)
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        #expect(try await aggregates(store) == reports)
        // export says what was pruned rather than fail.
        let output = directory.path + "/export-\(engine).jsonl"
        let summary = try await ExportJob.run(
            ExportJob.Options(table: .postbacks, format: .jsonl, output: output),
            location: store.location
        )
        // A copy with other bytes, received after its postback's bytes were cleared: its day
        // was examined, so only `--full` clears them.
        var copy = AggregateFixture.postback(.v3_0, id: 1, value: .fine(20))
        copy.countryCode = "NL"
        let late = try directory.write("late-\(engine).jsonl", try TestKeys.signer.signed(copy).jsonText())
        try await ingest([late], into: store.location, receivedAt: UTCInstant(iso8601: "2026-11-21T12:00:00Z"))
        #expect(try await store.count("sightings", where: "length(raw) > 0") == 1)
        #expect(try await prune(store, [(.raw, 1)]).kinds.map(\.sightings) == [0])
        #expect(try await prune(store, [(.raw, 1)], full: true).kinds.map(\.sightings) == [1])
        #expect(try await store.count("sightings", where: "length(raw) > 0") == 0)
        // Every pruned one but app 222's P13, which the registered policy leaves out.
        #expect(summary.rawPruned == dayOne - 1)
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
        #expect(lines.filter { $0.contains("\"raw\":null,\"raw_pruned\":true") }.count == dayOne - 1)
    }

    /// The reports of every day, as `postbackd report` prints them (CSV and JSON): by day, by
    /// app and network, every dimension, and the events.
    func reports(_ store: TestStore) async throws -> [String] {
        var printed: [String] = []
        let every = AggregateDimension.allCases.map(\.rawValue).joined(separator: ",")
        for (by, events) in [
            ("date", false), ("date,app_id,ad_network_id", false), (every, false), ("date,app_id", true),
        ] {
            let query = ReportQuery(from: nil, to: nil, by: try AggregateDimension.list(by), events: events)
            let report = try await ReportJob.run(store.location, query).report
            printed += [report.formatted(.csv), report.formatted(.json)]
        }
        return printed
    }

    /// A day's report changes only when its production postbacks did: `aggregate` after the
    /// test-mode and development postbacks were pruned (and then the raw bytes) counts them as
    /// before (issue 59: test=30 development=30 raw=60 turned a day's 10,551 postbacks into
    /// 10,056, its test_mode and development into 0).
    @Test(
        "a day aggregated again after its test, development and raw bytes were pruned reports the same",
        arguments: TestEngine.available
    )
    func reportAfterPrune(_ engine: TestEngine) async throws {
        let (store, _) = try await store(engine)
        let reported = try await reports(store)
        let tables = try await aggregates(store)
        #expect(reported[0].contains(",1,1,"), "day one's test_mode and development: \(reported[0])")
        _ = try await prune(store, [(.test, 1), (.development, 1)])
        #expect(try await store.count("postbacks", where: "key_space <> 'production'") == 0)
        let dayOne = try #require(UTCDay("2026-11-20"))
        _ = try await AggregateJob.run(store.location, .range(from: dayOne, to: dayOne), policy: .midpoint)
        #expect(try await reports(store) == reported)
        _ = try await prune(store, [(.test, 1), (.development, 1), (.raw, 1)])
        #expect(try await store.count("postbacks", where: "length(raw) > 0") == 1)
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        #expect(try await reports(store) == reported)
        #expect(try await aggregates(store) == tables)
    }

    @Test("deliveries, Apple Ads tokens and runs by the time they finished", arguments: TestEngine.available)
    func byTime(_ engine: TestEngine) async throws {
        let (store, _) = try await store(engine)
        let postback = try #require(try await store.strings("SELECT min(id) FROM postbacks").first ?? nil)
        let old = Self.now.milliseconds - 3 * 86_400_000
        let recent = Self.now.milliseconds - 3_600_000
        try await store.execute(
            """
            INSERT INTO deliveries (destination, postback_id, state, discovered_ms, next_attempt_ms, last_attempt_ms) VALUES
                ('old-delivered', \(postback), 'delivered', \(old), \(old), \(old)),
                ('old-rejected', \(postback), 'rejected', \(old), \(old), \(old)),
                ('old-pending', \(postback), 'pending', \(old), \(old), \(old)),
                ('old-failed', \(postback), 'failed', \(old), \(old), \(old)),
                ('recent-delivered', \(postback), 'delivered', \(recent), \(recent), \(recent))
            """,
            """
            INSERT INTO apple_ads_tokens (id, token_sha256, token, app_id, obtained_ms, received_ms, state, due_ms, resolved_ms) VALUES
                (1, 'a', NULL, 111, \(old), \(old), 'not_attributed', \(old), \(old)),
                (2, 'b', 'token-b', 111, \(old), \(old), 'attributed', \(old), \(old)),
                (3, 'c', 'token-c', 111, \(old), \(old), 'pending', \(old), NULL),
                (4, 'd', NULL, 111, \(recent), \(recent), 'expired', \(recent), \(recent))
            """,
            """
            INSERT INTO apple_ads_attributions (token_id, app_id, date, attribution, raw, received_ms)
            VALUES (2, 111, '2026-11-18', 1, '{}', \(old))
            """
        )
        let runs = try await store.count("ingest_runs")
        let report = try await prune(store, [(.deliveries, 1), (.appleAdsTokens, 1)])
        #expect(report.kinds.map(\.rows) == [2, 2])
        #expect(
            try await store.strings("SELECT destination FROM deliveries ORDER BY destination")
                == ["old-failed", "old-pending", "recent-delivered"]
        )
        #expect(
            try await store.strings("SELECT id || ':' || coalesce(token, '-') FROM apple_ads_tokens ORDER BY id")
                == ["2:-", "3:token-c", "4:-"]
        )
        // Runs finished before the cutoff (the ingests ran now, so a cutoff two days ahead): the
        // ingests and the prune before, not this one.
        let later = UTCInstant(milliseconds: UTCInstant.now().milliseconds + 2 * 86_400_000)
        let runsReport = try await prune(store, [(.runs, 1)], now: later)
        #expect(runsReport.kinds.map(\.rows) == [runs + 1])
        #expect(try await store.count("ingest_runs") == 0)
        #expect(try await store.strings("SELECT status FROM prune_runs") == ["completed"])
    }

    @Test("a prune stopped part way and run again ends as one run does", arguments: TestEngine.available)
    func stoppedAndRerun(_ engine: TestEngine) async throws {
        let (whole, _) = try await store(engine)
        let settings: [(RetentionKind, Int?)] = [(.test, 1), (.unclaimed, 1), (.quarantine, 1), (.raw, 1)]
        _ = try await prune(whole, settings)

        let (stopped, _) = try await store(engine, name: "stopped")
        struct Stop: Error {}
        var batches = 0
        await #expect(throws: Stop.self) {
            try await PostbackStores.with(stopped.location) { storage in
                try await storage.setRetention(settings)
                _ = try await storage.prune(
                    dryRun: false,
                    batch: 1,
                    now: Self.now,
                    afterBatch: {
                        batches += 1
                        if batches == 2 { throw Stop() }
                    }
                )
            }
        }
        #expect(try await stopped.strings("SELECT status FROM prune_runs") == ["failed"])
        _ = try await PostbackStores.with(stopped.location) { storage in
            try await storage.prune(dryRun: false, batch: 1, now: Self.now)
        }
        #expect(try await stopped.dump() == whole.dump())
        #expect(try await counts(stopped) == counts(whole))
        for query in [
            "SELECT date, quarantined, duplicates, conflicts FROM pruned_intake ORDER BY date",
            "SELECT dedup_key, kind, first_seen FROM pruned_keys ORDER BY dedup_key",
            "SELECT kind, examined_before FROM retention WHERE days IS NOT NULL ORDER BY kind",
        ] {
            let (left, right) = (try await stopped.rows(query), try await whole.rows(query))
            #expect(left == right, "\(query)")
        }
    }
}
