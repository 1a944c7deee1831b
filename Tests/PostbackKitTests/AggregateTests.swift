import Foundation
import GRDB
import PostbackKit
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
    static let model = """
        {"appId": "111", "measurementWindowHours": 48,
         "fineGrainedConversionValueMappings": [
           {"fineGrainedConversionValue": 1, "conversionValueMapping": {"mappedEvents": [{"mappedEventName": "tutorial_complete", "eventCounter": "1"}]}},
           {"fineGrainedConversionValue": 20, "conversionValueMapping": {"mappedEvents": [{"mappedEventName": "purchase", "currencyCode": "USD",
              "eventRevenueRange": {"minEventRevenue": 5.0, "maxEventRevenue": 10.0}, "eventOccurrenceRange": {"minEventCount": "1", "maxEventCount": "2"}}]}},
           {"fineGrainedConversionValue": 30, "conversionValueMapping": {"mappedEvents": [
              {"mappedEventName": "purchase", "currencyCode": "EUR", "eventRevenueValue": 8, "eventCounter": 2},
              {"mappedEventName": "level"}]}}],
         "postbackMappings": [
           {"postbackSequenceIndex": 0, "coarseGrainedConversionValueMappings": {
              "lowConversionValueMapping": {"mappedEvents": [{"mappedEventName": "session"}]},
              "mediumConversionValueMapping": {"mappedEvents": [{"mappedEventName": "purchase", "currencyCode": "USD", "eventRevenueRange": {"minEventRevenue": 1, "maxEventRevenue": 20}}]},
              "highConversionValueMapping": {"mappedEvents": [{"mappedEventName": "purchase", "currencyCode": "USD", "eventRevenueValue": 50}]}}},
           {"postbackSequenceIndex": 1, "coarseGrainedConversionValueMappings": {
              "mediumConversionValueMapping": {"mappedEvents": [{"mappedEventName": "renewal", "currencyCode": "EUR", "eventRevenueRange": {"minEventRevenue": 2, "maxEventRevenue": 4}}]}}}]}
        """

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
        policy: RevenueEstimatePolicy = .midpoint
    ) async throws -> String {
        let database = directory.path + "/aggregate.sqlite"
        let (dayOne, dayTwo) = try write(into: directory)
        let modelFile = try directory.write("model.json", model)
        _ = try ModelsJob.add(files: [modelFile], databasePath: database)
        try await ingest([dayOne], into: database, receivedAt: UTCInstant(iso8601: "2026-11-20T10:00:00Z"))
        try await ingest([dayTwo], into: database, receivedAt: UTCInstant(iso8601: "2026-11-21T10:00:00Z"))
        _ = try DailyAggregator.run(databasePath: database, .all, policy: policy)
        return database
    }
}

@Suite("Aggregates and reports")
struct AggregateTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("aggregate")
    }

    private func report(
        _ database: String,
        by: String,
        events: Bool = false,
        from: String? = nil,
        to: String? = nil
    ) throws -> Report {
        try Report.read(
            databasePath: database,
            from: from.flatMap(UTCDay.init),
            to: to.flatMap(UTCDay.init),
            by: AggregateDimension.list(by),
            events: events
        ).report
    }

    private func row(_ report: Report, _ values: DimensionValue...) throws -> ReportRow {
        try #require(report.rows.first { $0.dimensions == values }, "no row \(values)")
    }

    @Test("every metric matches the hand-computed value")
    func metrics() async throws {
        let database = try await AggregateFixture.database(in: directory)
        let byApp = try report(database, by: "date,app_id", to: "2026-11-20")
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

    @Test("events: occurrences, postbacks with the event, and their revenue")
    func events() async throws {
        let database = try await AggregateFixture.database(in: directory)
        let events = try report(database, by: "app_id", events: true, to: "2026-11-20")
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
        arguments: [(RevenueEstimatePolicy.midpoint, 65.0, 11.0), (.lower, 60, 10), (.upper, 70, 12)]
    )
    func policies(_ policy: RevenueEstimatePolicy, _ usd: Double, _ eur: Double) async throws {
        let database = try await AggregateFixture.database(in: directory, policy: policy)
        let app = try row(try report(database, by: "app_id", to: "2026-11-20"), .integer(111))
        #expect(app.revenue["USD"]?.estimate == usd)
        #expect(app.revenue["EUR"]?.estimate == eur)
        #expect(app.revenue["USD"]?.min == 60)
        #expect(app.revenue["USD"]?.max == 70)
    }

    @Test("grouping by date and periods")
    func periods() async throws {
        let database = try await AggregateFixture.database(in: directory)
        let byDate = try report(database, by: "date")
        #expect(byDate.rows.map(\.dimensions) == [[.text("2026-11-20")], [.text("2026-11-21")]])
        #expect(byDate.rows.map { $0.counts[.postbacks] } == [13, 1])
        #expect(byDate.rows[1].revenue["EUR"] == RevenueTotal(min: 8, max: 8, estimate: 8))
        let total = try report(database, by: "")
        #expect(total.rows.count == 1)
        #expect(total.rows[0].counts[.postbacks] == 14)
        #expect(total.rows[0].counts[.installs] == 8)
        #expect(try report(database, by: "date", from: "2026-11-21").rows.count == 1)
        #expect(try report(database, by: "date", from: "2026-11-22").rows.isEmpty)
        let bySequence = try report(database, by: "postback_sequence_index,did_win", to: "2026-11-20")
        #expect(bySequence.rows.map(\.dimensions).contains([.integer(1), .integer(1)]))
    }

    @Test("the fine-value histogram counts winning production postbacks without a coarse value")
    func histogram() async throws {
        let database = try await AggregateFixture.database(in: directory)
        let rows = try DatabaseDump.values(
            "SELECT COALESCE(fine_value, -1) || ':' || postbacks FROM aggregate_fine_values WHERE date = '2026-11-20' AND app_id = 111 ORDER BY fine_value",
            in: database,
            as: String.self
        )
        // P5 (no value); P3 (1); P1, P11, P12 (20); P2 (30); P4 (44).
        #expect(rows == ["-1:1", "1:1", "20:3", "30:1", "44:1"])
    }

    @Test("aggregate is idempotent, and a changed model plus a re-run corrects history")
    func idempotentAndCorrectable() async throws {
        let database = try await AggregateFixture.database(in: directory)
        let tables = [
            "aggregate_daily", "aggregate_daily_revenue", "aggregate_daily_events", "aggregate_daily_event_revenue",
            "aggregate_fine_values",
        ]
        func dump() throws -> [[String?]] {
            try tables.map {
                try DatabaseDump.values(
                    "SELECT json_array(*) FROM (SELECT * FROM \($0)) ORDER BY 1",
                    in: database,
                    as: String.self
                )
            }
        }
        let first = try dump()
        _ = try DailyAggregator.run(databasePath: database, .all, policy: .midpoint)
        #expect(try dump() == first)
        _ = try DailyAggregator.run(
            databasePath: database,
            .range(from: UTCDay("2026-11-20")!, to: UTCDay("2026-11-20")!),
            policy: .midpoint
        )
        #expect(try dump() == first)

        let changed = AggregateFixture.model.replacingOccurrences(
            of: "\"minEventRevenue\": 5.0, \"maxEventRevenue\": 10.0",
            with: "\"minEventRevenue\": 6, \"maxEventRevenue\": 12"
        )
        let outcome = try ModelsJob.add(files: [try directory.write("changed.json", changed)], databasePath: database)
        #expect(outcome.map(\.outcome) == [.replaced])
        #expect(
            try report(database, by: "app_id", to: "2026-11-20").rows.first?.revenue["USD"]?.min == 60,
            "nothing changes before the re-run"
        )
        _ = try DailyAggregator.run(databasePath: database, .all, policy: .midpoint)
        let corrected = try row(try report(database, by: "app_id", to: "2026-11-20"), .integer(111))
        #expect(corrected.revenue["USD"] == RevenueTotal(min: 62, max: 74, estimate: 68))
        #expect(try DatabaseDump.count("conversion_models", in: database) == 2)
        #expect(try DatabaseDump.count("conversion_models", in: database, where: "replaced_at IS NULL") == 1)
    }

    @Test("a reader never sees half of an aggregate run")
    func atomic() async throws {
        let database = try await AggregateFixture.database(in: directory)
        // Make the run long: many more postbacks on day two.
        let generated = try PostbackGenerator.lines(count: 4000, seed: 5)
        try await ingest(
            [try directory.write("many.jsonl", generated)],
            into: database,
            receivedAt: UTCInstant(iso8601: "2026-11-21T12:00:00Z")
        )
        _ = try DailyAggregator.run(databasePath: database, .all, policy: .midpoint)
        let total =
            try DatabaseDump.values("SELECT SUM(postbacks) FROM aggregate_daily", in: database, as: Int.self).first
            ?? nil
        let reader = try DatabaseQueue(path: database)
        let reading = Flag()
        let finished = Flag()
        let observed = try await withThrowingTaskGroup(of: Set<Int?>.self) { group in
            group.addTask {
                defer { finished.set() }
                while !reading.isSet { try await Task.sleep(nanoseconds: 1_000_000) }
                for _ in 0..<3 { _ = try DailyAggregator.run(databasePath: database, .all, policy: .midpoint) }
                return []
            }
            group.addTask {
                var seen = Set<Int?>()
                repeat {
                    seen.insert(try await reader.read { db in try Int.fetchOne(db, sql: "SELECT SUM(postbacks) FROM aggregate_daily") })
                    reading.set()
                    try await Task.sleep(nanoseconds: 500_000)
                } while !finished.isSet
                return seen
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
