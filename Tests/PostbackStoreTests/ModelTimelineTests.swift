import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// Date-effective models (issue 36): each postback decoded with the model in force when its
/// value was set, on every engine. The expected figures are computed here from the rule as the
/// issue states it, not from the code under test.
@Suite("Model timelines, on every engine")
struct ModelTimelineTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("timeline")
    }

    /// App 111's fixture model with fine value 20 worth `min`–`max` USD instead of 5–10.
    static func model(fine20 min: Int, _ max: Int) -> String {
        FixtureModels.app111.replacingOccurrences(
            of: "\"minEventRevenue\": 5.0, \"maxEventRevenue\": 10.0",
            with: "\"minEventRevenue\": \(min), \"maxEventRevenue\": \(max)"
        )
    }

    /// One postback of the scenario: when it was received and what it carries.
    struct Case {
        var id: Int
        var received: String
        var version: SKANVersion
        var value: ConversionValue?
        var sequenceIndex = 0

        var receivedAt: UTCInstant { ModelTimelineTests.instant(received) }
    }

    static let secondModelFrom = "2026-03-15T00:00:00Z"

    /// The instant of a literal of this file (the epoch for a typo, which fails every test).
    static func instant(_ text: String) -> UTCInstant {
        UTCInstant(iso8601: text) ?? UTCInstant(milliseconds: 0)
    }

    /// Postbacks on both sides of the second model's time and inside the span in which it is
    /// ambiguous which model set their value.
    static let cases: [Case] = [
        Case(id: 1, received: "2026-03-10T12:00:00Z", version: .v4_0, value: .fine(20)),  // first model
        Case(id: 2, received: "2026-03-15T12:00:00Z", version: .v4_0, value: .fine(20)),  // set by 03-14T12: first
        Case(id: 3, received: "2026-03-16T12:00:00Z", version: .v4_0, value: .fine(20)),  // second, ambiguous (96 h)
        Case(id: 4, received: "2026-03-16T12:00:00Z", version: .v3_0, value: .fine(20)),  // second, ambiguous (48 h)
        Case(id: 5, received: "2026-03-17T12:00:00Z", version: .v3_0, value: .fine(20)),  // second, 48 h clear of it
        Case(id: 6, received: "2026-03-16T12:00:00Z", version: .v4_0, value: nil),  // no value: never ambiguous
        // Postback 1: its value set up to 264 hours before.
        Case(id: 7, received: "2026-03-25T12:00:00Z", version: .v4_0, value: .coarse(.medium), sequenceIndex: 1),
        Case(id: 8, received: "2026-03-25T12:00:00Z", version: .v4_0, value: .fine(20)),  // second, clear
        Case(id: 9, received: "2026-04-20T12:00:00Z", version: .v4_0, value: .fine(20)),  // second (later: third)
    ]

    /// The rule: the model in force at received_at − 24 h; ambiguous when a model starts within
    /// (received_at − longest span, received_at − 24 h] and the postback carries a value.
    static func expected(
        _ postback: Case,
        starts: [(from: String, model: ConversionModel)],
        first: ConversionModel
    ) -> (decoded: DecodedConversionValue, ambiguous: Bool) {
        let hours: Int64 =
            postback.version == .v4_0 ? [96, 264, 816][min(postback.sequenceIndex, 2)] : 48
        let latest = postback.receivedAt.milliseconds - 24 * 3_600_000
        let earliest = postback.receivedAt.milliseconds - hours * 3_600_000
        var model = first
        var ambiguous = false
        for start in starts {
            let at = Self.instant(start.from).milliseconds
            if at <= latest { model = start.model }
            if at > earliest && at <= latest && postback.value != nil { ambiguous = true }
        }
        return (model.decode(postback.value, sequenceIndex: postback.sequenceIndex), ambiguous)
    }

    /// Per day received: USD revenue min and max, EUR min, and model_ambiguous, from the rule.
    static func expectedDays(
        starts: [(from: String, model: ConversionModel)],
        first: ConversionModel
    ) -> [String: [Double]] {
        var days: [String: [Double]] = [:]
        for postback in cases {
            let (decoded, ambiguous) = expected(postback, starts: starts, first: first)
            var sums = days[String(postback.received.prefix(10)), default: [0, 0, 0, 0]]
            if case .mapped(let events) = decoded {
                for event in events {
                    guard let revenue = event.revenue else { continue }
                    if revenue.currency == "USD" {
                        sums[0] += Double(revenue.minMicros) / 1_000_000
                        sums[1] += Double(revenue.maxMicros) / 1_000_000
                    } else if revenue.currency == "EUR" {
                        sums[2] += Double(revenue.minMicros) / 1_000_000
                    }
                }
            }
            if ambiguous { sums[3] += 1 }
            days[String(postback.received.prefix(10))] = sums
        }
        return days
    }

    /// The same figures, as the report says them.
    func reportedDays(_ location: StoreLocation) async throws -> [String: [Double]] {
        let report = try await ReportJob.run(
            location,
            ReportQuery(from: nil, to: nil, by: AggregateDimension.list("date"), events: false)
        ).report
        var days: [String: [Double]] = [:]
        for row in report.rows {
            guard case .text(let day) = row.dimensions.first else { continue }
            days[day] = [
                row.revenue["USD"]?.min ?? 0, row.revenue["USD"]?.max ?? 0, row.revenue["EUR"]?.min ?? 0,
                Double(row.counts[.modelAmbiguous] ?? 0),
            ]
        }
        return days
    }

    /// A store with the first model, every case ingested at its time, the second model from
    /// 2026-03-15, and aggregated.
    func store(_ engine: TestEngine) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory, name: "timeline")
        let signer = try TestKeys.signer
        _ = try await ModelsJob.add(
            files: [try directory.write("first.json", Self.model(fine20: 5, 10))],
            location: store.location
        )
        for postback in Self.cases {
            let signed = try signer.signed(
                AggregateFixture.postback(
                    postback.version,
                    id: postback.id,
                    value: postback.value,
                    sequenceIndex: postback.sequenceIndex
                )
            ).jsonText()
            try await ingest(
                [try directory.write("p\(postback.id).json", signed)],
                into: store.location,
                receivedAt: postback.receivedAt
            )
        }
        let second = try await ModelsJob.add(
            files: [try directory.write("second.json", Self.model(fine20: 6, 12))],
            effectiveFrom: ModelEffectiveTime(Self.secondModelFrom),
            location: store.location
        )
        #expect(second.map(\.outcome) == [.scheduled])
        // It decodes what was set from 03-15 (received from 03-16), and its start is inside
        // the spans of postbacks received up to 816 hours after it.
        #expect(second.first?.result.from == UTCDay("2026-03-16"))
        #expect(second.first?.result.to == nil)
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        return store
    }

    @Test(
        "a model changed mid-period: each postback decoded with the model in force when its value was set, ambiguous ones counted",
        arguments: TestEngine.available
    )
    func midPeriod(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        let first = try ConversionModelParser.parse(Array(Self.model(fine20: 5, 10).utf8))
        let second = try ConversionModelParser.parse(Array(Self.model(fine20: 6, 12).utf8))
        let expected = Self.expectedDays(starts: [(Self.secondModelFrom, second)], first: first)
        // The scenario has what it is for: both models used, ambiguous and clear postbacks.
        #expect(expected["2026-03-10"]?[0] == 5 && expected["2026-03-17"]?[0] == 6)
        #expect(expected.values.map { $0[3] }.reduce(0, +) == 3)
        #expect(try await reportedDays(store.location) == expected)
        let runs = try await store.strings("SELECT models FROM aggregate_runs ORDER BY id DESC")
        let digests = [first, second].map { SHA256Digest(hashing: Array($0.json.utf8)).description }
        #expect(
            runs.first??.filter { $0 != " " } == "{\"111\":{\"install\":[\"\(digests[0])\",\"\(digests[1])\"]}}"
        )
    }

    @Test(
        "export decodes each postback with the model in force when its value was set",
        arguments: TestEngine.available
    )
    func export(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        let first = try ConversionModelParser.parse(Array(Self.model(fine20: 5, 10).utf8))
        let second = try ConversionModelParser.parse(Array(Self.model(fine20: 6, 12).utf8))
        let path = directory.path + "/export-\(engine).jsonl"
        _ = try await ExportJob.run(ExportJob.Options(output: path), location: store.location)
        var usdMin: [Int: Double?] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let transaction = try #require(object["transaction_id"] as? String)
            let id = try #require(Int(transaction.suffix(12)))
            let events = object["events"] as? [[String: Any]] ?? []
            usdMin[id] = .some(events.first { $0["currency"] as? String == "USD" }?["revenue_min"] as? Double)
        }
        #expect(usdMin.count == Self.cases.count)
        for postback in Self.cases {
            let (decoded, _) = Self.expected(postback, starts: [(Self.secondModelFrom, second)], first: first)
            var expected: Double?
            if case .mapped(let events) = decoded,
                let revenue = events.first(where: { $0.revenue?.currency == "USD" })?.revenue
            {
                expected = Double(revenue.minMicros) / 1_000_000
            }
            #expect(usdMin[postback.id] == .some(expected), "postback \(postback.id) received \(postback.received)")
        }
    }

    @Test(
        "a third model changes only the days it can reach; every other row stays byte for byte",
        arguments: TestEngine.available
    )
    func thirdModel(_ engine: TestEngine) async throws {
        let store = try await store(engine)
        let tables = [
            "aggregate_daily", "aggregate_daily_revenue", "aggregate_daily_events", "aggregate_daily_event_revenue",
            "aggregate_fine_values", "aggregate_daily_totals", "aggregate_daily_totals_revenue",
            "aggregate_dashboard_received", "aggregate_dashboard_received_revenue",
        ]
        func dump(before day: String) async throws -> [[String]] {
            var rows: [[String]] = []
            for table in tables {
                rows.append(try await store.rows("SELECT * FROM \(table) WHERE date < '\(day)'").sorted())
            }
            return rows
        }
        let before = try await dump(before: "2026-04-11")
        #expect(before.allSatisfy { !$0.isEmpty })
        let reported = try await reportedDays(store.location)
        let third = try await ModelsJob.add(
            files: [try directory.write("third.json", Self.model(fine20: 7, 14))],
            effectiveFrom: ModelEffectiveTime("2026-04-10"),
            location: store.location
        )
        #expect(third.first?.result.from == UTCDay("2026-04-11"))
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        #expect(try await dump(before: "2026-04-11") == before)
        let after = try await reportedDays(store.location)
        #expect(after["2026-04-20"] == [7, 14, 0, 0], "the third model decodes what was set after it")
        #expect(after.filter { $0.key != "2026-04-20" } == reported.filter { $0.key != "2026-04-20" })
        // What `models show --at` finds at each time.
        for (at, fine20) in [("2026-03-01", 5.0), ("2026-03-20", 6.0), ("2026-05-01", 7.0)] {
            let shown = try await ModelsJob.show(app: "111", at: UTCInstant(iso8601: at)!, location: store.location)
            guard case .mapped(let events) = shown?.model.decode(.fine(20), sequenceIndex: 0) else {
                Issue.record("no model in force at \(at)")
                continue
            }
            #expect(events.first?.revenue.map { Double($0.minMicros) / 1_000_000 } == fine20, "at \(at)")
        }
        // The same file again at the same time adds nothing.
        let again = try await ModelsJob.add(
            files: [try directory.write("third-again.json", Self.model(fine20: 7, 14))],
            effectiveFrom: ModelEffectiveTime("2026-04-10"),
            location: store.location
        )
        #expect(again.map(\.outcome) == [.unchanged])
        #expect(try await store.count("conversion_models") == 3)
    }
}
