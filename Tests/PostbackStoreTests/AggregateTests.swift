import Foundation
import GRDB
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Synchronization
import Testing

/// A model and postbacks whose aggregates were computed by hand (see each expectation).
///
/// Model for app 111: fine 1 → tutorial_complete ×1; fine 20 → purchase ×1–2, USD 5–10;
/// fine 30 → purchase ×2, EUR 8 and level ×1; postback 0 coarse: low → session, medium →
/// purchase USD 1–20, high → purchase USD 50; postback 1 coarse: medium → renewal EUR 2–4;
/// nothing for postback 2. App 222 has no model.
enum AggregateFixture {
    static let model = FixtureModels.app111

    static func postback(
        _ version: SKANVersion,
        app: Int64 = 111,
        id: Int,
        value: ConversionValue?,
        didWin: Bool = true,
        redownload: Bool = false,
        sequenceIndex: Int = 0
    ) -> SKANPostback {
        var postback = SamplePostback.make(
            version,
            withOptional: false,
            transactionID: String(format: "00000000-0000-4000-8000-%012d", id),
            conversionValue: value,
            sequenceIndex: sequenceIndex
        )
        postback.appID = app
        if version >= .v3_0 { postback.didWin = didWin }
        postback.redownload = redownload
        return postback
    }

    /// Day one (2026-11-20): P1–P13. Day two (2026-11-21): P14.
    static func write(into directory: TemporaryDirectory) throws -> (dayOne: String, dayTwo: String) {
        let signer = try TestKeys.signer
        var dayOne: [String] = []
        func add(_ postback: SKANPostback, testDevice: Bool = false) throws {
            dayOne.append(try signer.signed(postback, asTestDevice: testDevice).jsonText())
        }
        try add(postback(.v3_0, id: 1, value: .fine(20)))  // P1 install, purchase USD 5–10 ×1–2
        try add(postback(.v3_0, id: 2, value: .fine(30), redownload: true))  // P2 redownload, purchase EUR 8 ×2, level
        try add(postback(.v3_0, id: 3, value: .fine(1)))  // P3 install, tutorial_complete
        try add(postback(.v3_0, id: 4, value: .fine(44)))  // P4 install, unmapped
        try add(postback(.v3_0, id: 5, value: nil))  // P5 install, null value
        try add(postback(.v3_0, id: 6, value: nil, didWin: false))  // P6 non-winning
        var test = postback(.v3_0, id: 7, value: .fine(0))  // P7 test mode, value 0 unmapped
        test.sourceAppID = 0
        try add(test, testDevice: true)
        try add(postback(.v4_0, id: 8, value: .coarse(.high)))  // P8 install, purchase USD 50
        try add(postback(.v4_0, id: 8, value: .coarse(.medium), sequenceIndex: 1))  // P9 renewal EUR 2–4
        try add(postback(.v4_0, id: 8, value: .coarse(.low), sequenceIndex: 2))  // P10 unmapped (no postback-2 mapping)
        try add(postback(.v4_0, id: 11, value: .fine(20), sequenceIndex: 1))  // P11 unmapped (fine on postback 1)
        try add(postback(.v2_1, id: 12, value: .fine(20)))  // P12 install (no did-win before 3.0), USD 5–10
        try add(postback(.v3_0, app: 222, id: 13, value: .fine(20)))  // P13 install, unmodelled
        let second = try signer.signed(postback(.v3_0, id: 14, value: .fine(30))).jsonText()  // P14 install, EUR 8
        return (
            try directory.write("day-one.jsonl", dayOne.joined(separator: "\n")),
            try directory.write("day-two.jsonl", second)
        )
    }

    /// A database with the model, both days ingested, and aggregated.
    static func database(
        in directory: TemporaryDirectory,
        engine: TestEngine = .sqlite,
        policy: RevenueEstimatePolicy = .midpoint
    ) async throws -> StoreLocation {
        let store = try await TestStore.make(engine, in: directory, name: "aggregate")
        let (dayOne, dayTwo) = try write(into: directory)
        let modelFile = try directory.write("model.json", model)
        _ = try await ModelsJob.add(files: [modelFile], location: store.location)
        try await ingest([dayOne], into: store.location, receivedAt: UTCInstant(iso8601: "2026-11-20T10:00:00Z"))
        try await ingest([dayTwo], into: store.location, receivedAt: UTCInstant(iso8601: "2026-11-21T10:00:00Z"))
        // A copy of P14 and a body that is not a postback, received on day two: the intake.
        let copy = try String(contentsOfFile: dayTwo, encoding: .utf8)
        let intake = try directory.write("intake.jsonl", copy + "\n{\"not\": \"a postback\"}\n")
        try await ingest([intake], into: store.location, receivedAt: UTCInstant(iso8601: "2026-11-21T11:00:00Z"))
        _ = try await AggregateJob.run(store.location, .all, policy: policy)
        return store.location
    }
}

@Suite("Aggregates and reports, on every engine")
struct AggregateTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("aggregate")
    }

    private func report(
        _ database: StoreLocation,
        by: String,
        events: Bool = false,
        from: String? = nil,
        to: String? = nil
    ) async throws -> Report {
        try await ReportJob.run(
            database,
            ReportQuery(
                from: from.flatMap(UTCDay.init),
                to: to.flatMap(UTCDay.init),
                by: AggregateDimension.list(by),
                events: events
            )
        ).report
    }

    private func row(_ report: Report, _ values: DimensionValue...) throws -> ReportRow {
        try #require(report.rows.first { $0.dimensions == values }, "no row \(values)")
    }

    @Test("every metric matches the hand-computed value", arguments: TestEngine.available)
    func metrics(_ engine: TestEngine) async throws {
        let database = try await AggregateFixture.database(in: directory, engine: engine)
        let byApp = try await report(database, by: "date,app_id", to: "2026-11-20")
        let app = try row(byApp, .text("2026-11-20"), .integer(111))
        #expect(app.counts[.postbacks] == 12)  // P1–P12
        #expect(app.counts[.installs] == 6)  // P1, P3, P4, P5, P8, P12
        #expect(app.counts[.redownloads] == 1)  // P2
        #expect(app.counts[.nonWinning] == 1)  // P6
        #expect(app.counts[.testMode] == 1)  // P7
        #expect(app.counts[.nullConversionValues] == 1)  // P5 (P6 does not win)
        #expect(app.counts[.unmapped] == 4)  // P4 fine 44, P7 fine 0, P10 coarse on postback 2, P11 fine on postback 1
        #expect(app.counts[.unmodelled] == 0)
        // USD: P1 5–10, P8 50, P12 5–10; EUR: P2 8, P9 2–4. Test-mode and non-winning add nothing.
        #expect(app.revenue["USD"] == RevenueTotal(min: 60, max: 70, estimate: 65))
        #expect(app.revenue["EUR"] == RevenueTotal(min: 10, max: 12, estimate: 11))
        let other = try row(byApp, .text("2026-11-20"), .integer(222))
        #expect(other.counts[.postbacks] == 1)
        #expect(other.counts[.installs] == 1)
        #expect(other.counts[.unmodelled] == 1)
        #expect(other.revenue.isEmpty)
    }

    @Test("events: occurrences, postbacks with the event, and their revenue", arguments: TestEngine.available)
    func events(_ engine: TestEngine) async throws {
        let database = try await AggregateFixture.database(in: directory, engine: engine)
        let events = try await report(database, by: "app_id", events: true, to: "2026-11-20")
        func event(_ name: String) throws -> ReportRow {
            try #require(events.rows.first { $0.dimensions == [.integer(111)] && $0.event == name }, "no event \(name)")
        }
        let purchase = try event("purchase")  // P1 ×1–2, P2 ×2, P8 ×1, P12 ×1–2
        #expect((purchase.occurrencesMin, purchase.occurrencesMax, purchase.eventPostbacks) == (5, 7, 4))
        #expect(purchase.revenue["USD"] == RevenueTotal(min: 60, max: 70, estimate: 65))
        #expect(purchase.revenue["EUR"] == RevenueTotal(min: 8, max: 8, estimate: 8))
        let level = try event("level")
        #expect((level.occurrencesMin, level.occurrencesMax, level.eventPostbacks) == (1, 1, 1))
        let tutorial = try event("tutorial_complete")
        #expect((tutorial.occurrencesMin, tutorial.occurrencesMax, tutorial.eventPostbacks) == (1, 1, 1))
        let renewal = try event("renewal")
        #expect(renewal.revenue["EUR"] == RevenueTotal(min: 2, max: 4, estimate: 3))
        #expect(!events.rows.contains { $0.event == "session" }, "P10's low value on postback 2 is unmapped")
    }

    @Test(
        "the three estimate policies",
        arguments: TestEngine.available,
        [(RevenueEstimatePolicy.midpoint, 65.0, 11.0), (.lower, 60, 10), (.upper, 70, 12)]
    )
    func policies(
        _ engine: TestEngine,
        _ expected: (policy: RevenueEstimatePolicy, usd: Double, eur: Double)
    ) async throws {
        let (policy, usd, eur) = expected
        let database = try await AggregateFixture.database(in: directory, engine: engine, policy: policy)
        let app = try row(try await report(database, by: "app_id", to: "2026-11-20"), .integer(111))
        #expect(app.revenue["USD"]?.estimate == usd)
        #expect(app.revenue["EUR"]?.estimate == eur)
        #expect(app.revenue["USD"]?.min == 60)
        #expect(app.revenue["USD"]?.max == 70)
    }

    @Test("grouping by date and periods", arguments: TestEngine.available)
    func periods(_ engine: TestEngine) async throws {
        let database = try await AggregateFixture.database(in: directory, engine: engine)
        let byDate = try await report(database, by: "date")
        #expect(byDate.rows.map(\.dimensions) == [[.text("2026-11-20")], [.text("2026-11-21")]])
        #expect(byDate.rows.map { $0.counts[.postbacks] } == [13, 1])
        #expect(byDate.rows[1].revenue["EUR"] == RevenueTotal(min: 8, max: 8, estimate: 8))
        let total = try await report(database, by: "")
        #expect(total.rows.count == 1)
        #expect(total.rows[0].counts[.postbacks] == 14)
        #expect(total.rows[0].counts[.installs] == 8)
        #expect(try await report(database, by: "date", from: "2026-11-21").rows.count == 1)
        #expect(try await report(database, by: "date", from: "2026-11-22").rows.isEmpty)
        let bySequence = try await report(database, by: "postback_sequence_index,did_win", to: "2026-11-20")
        #expect(bySequence.rows.map(\.dimensions).contains([.integer(1), .integer(1)]))
    }

    @Test(
        "the fine-value histogram counts winning production postbacks without a coarse value",
        arguments: TestEngine.available
    )
    func histogram(_ engine: TestEngine) async throws {
        let database = try await AggregateFixture.database(in: directory, engine: engine)
        let rows = try await TestStore(engine: engine, location: database).strings(
            "SELECT COALESCE(fine_value, -1) || ':' || postbacks FROM aggregate_fine_values WHERE date = '2026-11-20' AND app_id = 111 ORDER BY COALESCE(fine_value, -1)"
        )
        // P5 (no value); P3 (1); P1, P11, P12 (20); P2 (30); P4 (44).
        #expect(rows == ["-1:1", "1:1", "20:3", "30:1", "44:1"])
    }

    @Test(
        "aggregate is idempotent; a later model leaves history as it was, one in place of the first plus a re-run corrects it",
        arguments: TestEngine.available
    )
    func idempotentAndCorrectable(_ engine: TestEngine) async throws {
        let database = try await AggregateFixture.database(in: directory, engine: engine)
        let tables = [
            "aggregate_daily", "aggregate_daily_revenue", "aggregate_daily_events", "aggregate_daily_event_revenue",
            "aggregate_fine_values", "aggregate_daily_intake",
        ]
        let store = TestStore(engine: engine, location: database)
        func dump() async throws -> [[String]] {
            var tableRows: [[String]] = []
            for table in tables { tableRows.append(try await store.rows("SELECT * FROM \(table)").sorted()) }
            return tableRows
        }
        let first = try await dump()
        #expect(first.allSatisfy { !$0.isEmpty })
        // Day two's copy and its quarantined body; nothing on day one.
        #expect(
            try await store.rows("SELECT quarantined, duplicates, conflicts FROM aggregate_daily_intake")
                == [engine == .sqlite ? "1|1|0" : "(1,1,0)"]
        )
        _ = try await AggregateJob.run(database, .all, policy: .midpoint)
        #expect(try await dump() == first)
        let day = try #require(UTCDay("2026-11-20"))
        _ = try await AggregateJob.run(database, .range(from: day, to: day), policy: .midpoint)
        #expect(try await dump() == first)

        let changed = AggregateFixture.model.replacingOccurrences(
            of: "\"minEventRevenue\": 5.0, \"maxEventRevenue\": 10.0",
            with: "\"minEventRevenue\": 6, \"maxEventRevenue\": 12"
        )
        // Added without a time, it is in force from now: the days received before keep their
        // decoding, re-run or not.
        let changedFile = try directory.write("changed.json", changed)
        let later = try await ModelsJob.add(files: [changedFile], location: database)
        #expect(later.map(\.outcome) == [.scheduled])
        _ = try await AggregateJob.run(database, .all, policy: .midpoint)
        #expect(try await dump() == first)
        // In place of the first model (a mistake in it corrected), it decodes every day.
        let outcome = try await ModelsJob.add(files: [changedFile], effectiveFrom: .beginning, location: database)
        #expect(outcome.map(\.outcome) == [.replaced])
        #expect(outcome.first?.result.everyDay == false, "the later model still takes over from its time")
        #expect(
            try await report(database, by: "app_id", to: "2026-11-20").rows.first?.revenue["USD"]?.min == 60,
            "nothing changes before the re-run"
        )
        _ = try await AggregateJob.run(database, .all, policy: .midpoint)
        let corrected = try row(try await report(database, by: "app_id", to: "2026-11-20"), .integer(111))
        #expect(corrected.revenue["USD"] == RevenueTotal(min: 62, max: 74, estimate: 68))
        #expect(try await store.count("conversion_models") == 3)
        #expect(try await store.count("conversion_models", where: "replaced_at IS NULL") == 2)
    }

    @Test(
        "SQLite: a run committed in parts (a day, a postback, two days a part) writes the rows of one transaction, over every day and a range, and is recorded once"
    )
    func committedInParts() async throws {
        let database = try await AggregateFixture.database(in: directory, engine: .sqlite)
        guard case .sqlite(let path) = database else { return }
        // Days 2026-11-20 and 21 (the fixture), nothing on the 22nd, a body that is not a
        // postback alone on the 23rd, 300 postbacks on the 24th.
        try await ingest(
            [try directory.write("junk.jsonl", "{\"not\": \"a postback\"}\n")],
            into: database,
            receivedAt: UTCInstant(iso8601: "2026-11-23T08:00:00Z")
        )
        try await ingest(
            [try directory.write("many.jsonl", try PostbackGenerator.lines(count: 300, seed: 7))],
            into: database,
            receivedAt: UTCInstant(iso8601: "2026-11-24T12:00:00Z")
        )
        let store = TestStore(engine: .sqlite, location: database)
        let tables = AggregateSQL.tables + AggregateSQL.installTables
        func dump() async throws -> [String: [String]] {
            var rows: [String: [String]] = [:]
            for table in tables { rows[table] = try await store.rows("SELECT * FROM \(table)").sorted() }
            return rows
        }
        func runs() async throws -> Int { try await store.count("aggregate_runs") }
        let wholeRun = try await AggregateJob.run(database, .all, policy: .midpoint)
        let whole = try await dump()
        #expect(whole["aggregate_daily"]?.isEmpty == false)
        #expect(
            try await store.rows("SELECT date FROM aggregate_daily_intake ORDER BY date")
                == ["\"2026-11-21\"", "\"2026-11-23\""],
            "the quarantine-only day has its intake"
        )
        let parts: [SQLiteStore.AggregateCommits] = [
            .init(days: 1, postbacks: 1_000_000), .init(days: 31, postbacks: 1), .init(days: 2, postbacks: 1_000_000),
        ]
        let first = try #require(UTCDay("2026-11-20"))
        let last = try #require(UTCDay("2026-11-24"))
        for part in parts {
            for selection in [DaySelection.all, .range(from: first, to: last)] {
                // Rows of days without postbacks, which a run over every day removes, and a
                // day's rows spoiled, which any run over it replaces.
                try await store.execute(
                    "INSERT INTO aggregate_daily_intake (date, quarantined, duplicates, conflicts) VALUES ('2026-11-30', 9, 9, 9)"
                )
                try await store.execute(
                    "UPDATE aggregate_daily SET postbacks = postbacks + 100",
                    "DELETE FROM aggregate_daily_totals WHERE date = '2026-11-24'"
                )
                let before = try await runs()
                let sqlite = try SQLiteStore(path: path, access: .standard)
                let summary = try sqlite.aggregate(selection, policy: .midpoint, commitEvery: part)
                sqlite.close()
                #expect(try await runs() == before + 1, "one record a run, \(part) \(selection)")
                #expect(summary.postbacks == wholeRun.postbacks, "\(part) \(selection)")
                #expect(summary.days.count == (selection == .all ? 3 : 5), "\(part) \(selection)")
                var expected = whole
                if selection != .all {
                    expected["aggregate_daily_intake"]?.append("\"2026-11-30\"|9|9|9")
                    expected["aggregate_daily_intake"]?.sort()
                }
                #expect(try await dump() == expected, "\(part) \(selection)")
                if selection != .all {
                    try await store.execute("DELETE FROM aggregate_daily_intake WHERE date = '2026-11-30'")
                }
            }
        }
    }

    @Test("a reader never sees half of an aggregate run", arguments: TestEngine.available)
    func atomic(_ engine: TestEngine) async throws {
        let database = try await AggregateFixture.database(in: directory, engine: engine)
        // Make the run long: many more postbacks on day two.
        let generated = try PostbackGenerator.lines(count: 4000, seed: 5)
        try await ingest(
            [try directory.write("many.jsonl", generated)],
            into: database,
            receivedAt: UTCInstant(iso8601: "2026-11-21T12:00:00Z")
        )
        _ = try await AggregateJob.run(database, .all, policy: .midpoint)
        let totalQuery = ReportQuery(from: nil, to: nil, by: [], events: false)
        let total = try await report(database, by: "").rows.first?.counts[.postbacks]
        let reading = Flag()
        let finished = Flag()
        let observed = try await withThrowingTaskGroup(of: Set<Int?>.self) { group in
            group.addTask {
                defer { finished.set() }
                while !reading.isSet { try await Task.sleep(nanoseconds: 1_000_000) }
                for _ in 0..<3 { _ = try await AggregateJob.run(database, .all, policy: .midpoint) }
                return []
            }
            group.addTask {
                // One store for the whole loop: each report is one read transaction.
                try await PostbackStores.with(database) { store in
                    var seen = Set<Int?>()
                    repeat {
                        seen.insert(try await store.report(totalQuery).rows.first?.counts[.postbacks])
                        reading.set()
                        try await Task.sleep(nanoseconds: 500_000)
                    } while !finished.isSet
                    return seen
                }
            }
            var all = Set<Int?>()
            for try await values in group { all.formUnion(values) }
            return all
        }
        #expect(
            observed == [total],
            "a reader saw \(observed.count) different totals (such as \(observed.prefix(4).map { $0.map(String.init) ?? "none" })); only \(total.map(String.init) ?? "none") is complete"
        )
    }
}

extension PostbackGenerator {
    /// JSON Lines text of `count` generated postbacks signed with the test keys.
    static func lines(count: Int, seed: UInt64) throws -> String {
        var generator = try PostbackGenerator(
            options: GeneratorOptions(
                count: count,
                seed: seed,
                versions: [.v2_1, .v3_0, .v4_0],
                duplicateRate: 0,
                invalidRate: 0
            ),
            signer: TestKeys.signer
        )
        var lines: [String] = []
        while let line = try generator.nextLine() { lines.append(line) }
        return lines.joined(separator: "\n")
    }
}

/// A flag one task sets and another polls.
final class Flag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
