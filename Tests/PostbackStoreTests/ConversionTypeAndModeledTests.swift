import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// A model per conversion type, and modeled null values (issue 36), on every engine. The
/// expected figures are worked out here from the rules as the issue states them.
@Suite("Conversion types and modeled null values, on every engine")
struct ConversionTypeAndModeledTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("modeled")
    }

    // MARK: - Re-engagements

    /// An AdAttributionKit postback of app 111, signed with the test key (production).
    func aak(id: Int, type: AAKConversionType, fine: Int?) throws -> String {
        let payload = """
            {"postback-identifier":"00000000-0000-4000-8000-\(String(format: "%012d", id))",\
            "impression-type":"app-impression","ad-network-identifier":"example.adattributionkit","did-win":true,\
            "postback-sequence-index":0,"conversion-type":"\(type.rawValue)","source-identifier":"5239",\
            "advertised-item-identifier":111,"marketplace-identifier":"com.apple.AppStore"}
            """
        let jws = try TestKeys.signer.jws(
            headerJSON: "{\"kid\":\"postbackd-test/0\",\"alg\":\"ES256\"}",
            payloadJSON: payload
        )
        let value = fine.map { ",\"conversion-value\":\($0)" } ?? ""
        return "{\"jws-string\":\"\(jws)\"\(value),\"ad-interaction-type\":\"click\"}"
    }

    /// App 111's re-engagement model: fine value 20 is a `return_purchase` worth 3 USD.
    static let reengagementModel = """
        {"appId": "111", "fineGrainedConversionValueMappings": [
          {"fineGrainedConversionValue": 20, "conversionValueMapping": {"mappedEvents": [{"mappedEventName": "return_purchase",
             "currencyCode": "USD", "eventRevenueValue": 3}]}}]}
        """

    func report(_ location: StoreLocation, by: String, events: Bool = false) async throws -> Report {
        try await ReportJob.run(
            location,
            ReportQuery(from: nil, to: nil, by: AggregateDimension.list(by), events: events)
        ).report
    }

    @Test(
        "re-engagements decode only with a re-engagement model, their revenue and events apart from installs'",
        arguments: TestEngine.available
    )
    func reengagements(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory, name: "reengagement")
        _ = try await ModelsJob.add(
            files: [try directory.write("install.json", FixtureModels.app111)],
            location: store.location
        )
        // Two downloads and a redownload with fine value 20 (install model: USD 5–10 each), three
        // re-engagements with 20 (install model: USD 5–10; re-engagement model: USD 3).
        var lines = [
            try aak(id: 1, type: .download, fine: 20), try aak(id: 2, type: .download, fine: 20),
            try aak(id: 3, type: .redownload, fine: 20),
        ]
        for id in 4...6 { lines.append(try aak(id: id, type: .reengagement, fine: 20)) }
        let file = try directory.write("aak-\(engine).jsonl", lines.joined(separator: "\n"))
        let summary = try await ingest(
            [file],
            into: store.location,
            receivedAt: UTCInstant(iso8601: "2026-11-20T10:00:00Z")
        )
        #expect(summary.accepted == 6)
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)

        // Without a re-engagement model: counted, unmodelled, never decoded with the install model.
        var total = try #require(try await report(store.location, by: "").rows.first)
        #expect(total.counts[.reengagements] == 3)
        #expect(total.counts[.unmodelled] == 3)
        #expect(total.revenue["USD"] == RevenueTotal(min: 15, max: 30, estimate: 22.5))
        #expect(total.reengagementRevenue.isEmpty)
        let byType = try await report(store.location, by: "conversion_type")
        #expect(
            byType.rows.map(\.dimensions) == [[.text("download")], [.text("re-engagement")], [.text("redownload")]]
        )
        #expect(byType.rows.map { $0.counts[.postbacks] } == [2, 3, 1])
        #expect(byType.rows[1].revenue.isEmpty && byType.rows[1].reengagementRevenue.isEmpty)

        // With one: their revenue and events apart.
        _ = try await ModelsJob.add(
            files: [try directory.write("reengagement.json", Self.reengagementModel)],
            conversionType: .reengagement,
            location: store.location
        )
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        total = try #require(try await report(store.location, by: "").rows.first)
        #expect(total.counts[.unmodelled] == 0)
        #expect(total.revenue["USD"] == RevenueTotal(min: 15, max: 30, estimate: 22.5))
        #expect(total.reengagementRevenue["USD"] == RevenueTotal(min: 9, max: 9, estimate: 9))
        // The dashboard's tables say the same (a report by date and network reads them).
        let byDay = try await report(store.location, by: "date,ad_network_id")
        #expect(byDay.rows.first?.reengagementRevenue["USD"]?.estimate == 9)
        #expect(byDay.rows.first?.revenue["USD"]?.estimate == 22.5)
        let events = try await report(store.location, by: "", events: true)
        #expect(
            events.rows.map { "\($0.event ?? "") \($0.eventModel ?? "") \($0.eventPostbacks)" }.sorted() == [
                "purchase install 3", "return_purchase re-engagement 3",
            ]
        )
        let json = total.modeledBasis
        #expect(json == nil, "no nulls: nothing to model")
    }

    // MARK: - Modeled nulls

    /// App 333: app 111's fixture model under another app id.
    static let app333 = FixtureModels.app111.replacingOccurrences(of: "\"appId\": \"111\"", with: "\"appId\": \"333\"")

    /// Signed SKAdNetwork 4.0 postbacks 0, winning, of `app` from `network`: one per value.
    func postbacks(app: Int64, network: String, values: [ConversionValue?], firstID: Int) throws -> [String] {
        try values.enumerated().map { offset, value in
            var postback = AggregateFixture.postback(.v4_0, app: app, id: firstID + offset, value: value)
            postback.adNetworkID = network
            return try TestKeys.signer.signed(postback).jsonText()
        }
    }

    static let day = "2026-11-20"
    static let threeDaysBefore = "2026-11-17"

    /// The scenario: on 2026-11-20, network `a` has 30 postbacks with fine value 20 (USD 5–10)
    /// and 3 nulls (modeled on the day); `b` has 10 with fine value 30 (EUR 8) and 2 nulls, and
    /// 20 more with 20 three days before (modeled on the week); `c` has 5 with 20 and 1 null
    /// (the week's 5 are too few: modeled on the app's week over every network). App 333 has 2
    /// with 20 and 1 null: nothing modeled. An unmapped value (44) is neither a reference nor
    /// modeled.
    func modeledStore(_ engine: TestEngine) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory, name: "modeled")
        _ = try await ModelsJob.add(
            files: [
                try directory.write("m111.json", FixtureModels.app111), try directory.write("m333.json", Self.app333),
            ],
            location: store.location
        )
        let fine20 = ConversionValue.fine(20)
        var day = try postbacks(
            app: 111,
            network: "a.skadnetwork",
            values: Array(repeating: fine20, count: 30) + [nil, nil, nil, .fine(44)],
            firstID: 1
        )
        day += try postbacks(
            app: 111,
            network: "b.skadnetwork",
            values: Array(repeating: .fine(30), count: 10) + [nil, nil],
            firstID: 100
        )
        day += try postbacks(
            app: 111,
            network: "c.skadnetwork",
            values: Array(repeating: fine20, count: 5) + [nil],
            firstID: 200
        )
        day += try postbacks(app: 333, network: "a.skadnetwork", values: [fine20, fine20, nil], firstID: 300)
        let before = try postbacks(
            app: 111,
            network: "b.skadnetwork",
            values: Array(repeating: fine20, count: 20),
            firstID: 400
        )
        try await ingest(
            [try directory.write("before-\(engine).jsonl", before.joined(separator: "\n"))],
            into: store.location,
            receivedAt: UTCInstant(iso8601: Self.threeDaysBefore + "T10:00:00Z")
        )
        try await ingest(
            [try directory.write("day-\(engine).jsonl", day.joined(separator: "\n"))],
            into: store.location,
            receivedAt: UTCInstant(iso8601: Self.day + "T10:00:00Z")
        )
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        return store
    }

    /// The modeled revenue the rule gives each network's nulls on the day, per currency: nulls ×
    /// the reference group's revenue ÷ its postbacks (min, max).
    static let expected: [String: (basis: String, usd: (Double, Double), eur: Double)] = {
        // a: its own 30 references, USD 5–10 each.
        let a = (basis: "day", usd: (3.0 * 5, 3.0 * 10), eur: 0.0)
        // b: its week: 10 × EUR 8 today and 20 × USD 5–10 three days before: 30 references.
        let b = (basis: "week", usd: (2.0 * 20 * 5 / 30, 2.0 * 20 * 10 / 30), eur: 2.0 * 10 * 8 / 30)
        // c: the app over every network that week: a's 30 and c's 5 (USD 5–10), b's 10 (EUR 8)
        // and 20 (USD 5–10): 65 references.
        let c = (basis: "app_week", usd: (1.0 * 55 * 5 / 65, 1.0 * 55 * 10 / 65), eur: 1.0 * 10 * 8 / 65)
        return ["a.skadnetwork": a, "b.skadnetwork": b, "c.skadnetwork": c]
    }()

    func micros(_ value: Double) -> Double { (value * 1_000_000).rounded() / 1_000_000 }

    @Test(
        "modeled revenue: a group above the threshold, one widened to the week, one to the app, one with nothing modeled",
        arguments: TestEngine.available
    )
    func modeled(_ engine: TestEngine) async throws {
        let store = try await modeledStore(engine)
        let rows = try await report(store.location, by: "date,app_id,ad_network_id").rows
        func row(_ app: Int64, _ network: String) -> ReportRow? {
            rows.first { $0.dimensions == [.text(Self.day), .integer(app), .text(network)] }
        }
        for (network, expected) in Self.expected {
            let found = try #require(row(111, network), "\(network)")
            #expect(found.modeledBasis == expected.basis, "\(network)")
            let usd = found.revenue["USD"] ?? RevenueTotal(min: 0, max: 0, estimate: 0)
            let modeledUSD = try #require(found.modeledRevenue["USD"], "\(network)")
            #expect(micros(modeledUSD.min - usd.min) == micros(expected.usd.0), "\(network) USD min")
            #expect(micros(modeledUSD.max - usd.max) == micros(expected.usd.1), "\(network) USD max")
            let eur = found.revenue["EUR"]?.min ?? 0
            #expect(micros((found.modeledRevenue["EUR"]?.min ?? 0) - eur) == micros(expected.eur), "\(network) EUR")
        }
        // Network a's unmapped value is neither a reference nor modeled: 3 nulls modeled.
        #expect(row(111, "a.skadnetwork")?.counts[.modeledDay] == 3)
        #expect(row(111, "a.skadnetwork")?.counts[.unmapped] == 1)
        // App 333: 2 references over the app's week: nothing modeled, and said so.
        let none = try #require(row(333, "a.skadnetwork"))
        #expect(none.modeledBasis == "none")
        #expect(none.counts[.modeledNone] == 1)
        #expect(none.modeledRevenue["USD"] == none.revenue["USD"])
        // The observed revenue is never changed: a's is its 30 references'.
        #expect(row(111, "a.skadnetwork")?.revenue["USD"] == RevenueTotal(min: 150, max: 300, estimate: 225))
        // The totals (and the dashboard's tables) sum the same modeled revenue.
        let byDay = try #require(
            try await report(store.location, by: "date").rows.first { $0.dimensions == [.text(Self.day)] }
        )
        let expectedUSD = Self.expected.values.reduce(0.0) { $0 + $1.usd.0 }
        #expect(micros(byDay.modeledRevenue["USD"]!.min - byDay.revenue["USD"]!.min) == micros(expectedUSD))
        #expect(byDay.modeledBasis == "mixed")
        // A report by a dimension the sums lack reads the detailed rows, whose modeled revenue is
        // computed from the stored reference groups: the same as the sums'.
        let byIndex = ReportQuery(
            from: nil,
            to: nil,
            by: try AggregateDimension.list("date,app_id,ad_network_id,postback_sequence_index"),
            events: false
        )
        #expect(ReportSQL(query: byIndex).source == .detailed)
        let detailed = try await ReportJob.run(store.location, byIndex).report.rows
        for network in Self.expected.keys {
            let found = try #require(
                detailed.first { $0.dimensions == [.text(Self.day), .integer(111), .text(network), .integer(0)] },
                "\(network)"
            )
            let summed = try #require(row(111, network))
            #expect(found.modeledRevenue == summed.modeledRevenue, "\(network)")
            #expect(found.revenue == summed.revenue, "\(network)")
            #expect(found.modeledBasis == summed.modeledBasis, "\(network)")
        }
        // JSON always carries it; the table and CSV with --modeled.
        var report = try await report(store.location, by: "date,app_id,ad_network_id")
        #expect(report.json().contains("\"modeled_basis\":\"week\""))
        #expect(!report.csv().contains("revenue_modeled_USD"))
        report.showsModeled = true
        #expect(report.csv().contains("revenue_modeled_USD_min"))
        #expect(report.table(width: 200).contains("app_week"))
    }

    @Test(
        "a run over one day reads the six before it for the week: the same rows as a run over every day",
        arguments: TestEngine.available
    )
    func oneDayRun(_ engine: TestEngine) async throws {
        let store = try await modeledStore(engine)
        let tables = [
            "aggregate_daily", "aggregate_daily_revenue", "aggregate_daily_totals_revenue",
            "aggregate_daily_references",
        ]
        func dump() async throws -> [[String]] {
            var rows: [[String]] = []
            for table in tables {
                rows.append(try await store.rows("SELECT * FROM \(table) WHERE date = '\(Self.day)'").sorted())
            }
            return rows
        }
        let whole = try await dump()
        #expect(whole.allSatisfy { !$0.isEmpty })
        let day = try #require(UTCDay(Self.day))
        _ = try await AggregateJob.run(store.location, .range(from: day, to: day), policy: .midpoint)
        #expect(try await dump() == whole)
        // Without the days before stored (never aggregated since they were kept), it reads their
        // postbacks: the same again.
        try await store.execute("DELETE FROM aggregate_daily_references WHERE date < '\(Self.day)'")
        _ = try await AggregateJob.run(store.location, .range(from: day, to: day), policy: .midpoint)
        #expect(try await dump() == whole)
        // With them stored, it reads what is stored, not their postbacks: b's nulls, modeled on
        // the week, follow a stored group changed three days before.
        let before = try #require(UTCDay(Self.threeDaysBefore))
        _ = try await AggregateJob.run(store.location, .range(from: before, to: before), policy: .midpoint)
        try await store.execute(
            "UPDATE aggregate_daily_references SET revenue_min_micros = revenue_min_micros * 2 WHERE date = '\(Self.threeDaysBefore)'"
        )
        _ = try await AggregateJob.run(store.location, .range(from: day, to: day), policy: .midpoint)
        let b = try #require(
            try await report(store.location, by: "date,app_id,ad_network_id").rows.first {
                $0.dimensions == [.text(Self.day), .integer(111), .text("b.skadnetwork")]
            }
        )
        let modeledUSD = (b.modeledRevenue["USD"]?.min ?? 0) - (b.revenue["USD"]?.min ?? 0)
        #expect(micros(modeledUSD) == micros(2 * Self.expected["b.skadnetwork"]!.usd.0))
    }
}
