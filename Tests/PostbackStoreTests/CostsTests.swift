import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// Costs and exchange rates on every engine: spend, CPI and ROAS at network, campaign and
/// country grain against a corpus whose revenue the test knows; files re-added, corrected and
/// refused; `--currency` with and without a rate.
@Suite("Spend, CPI and ROAS, on every engine")
struct CostsTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("costs")
    }

    static let dayOne = "2026-11-20"
    static let dayTwo = "2026-11-21"

    /// The corpus, app 111 (fine 20: USD 5–10, estimate 7.5; fine 30: EUR 8), all installs:
    /// on day one, `a` has 6 postbacks from the US and 4 from DE (fine 20, campaign Alpha by
    /// prefix 12), `b` 4 from the US (fine 20, campaign Beta by prefix 5); on day two, `a` has
    /// 5 from the US with fine 30 (campaign Alpha).
    func corpusStore(_ engine: TestEngine) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory, name: "costs")
        _ = try await ModelsJob.add(
            files: [try directory.write("m111.json", FixtureModels.app111)],
            location: store.location
        )
        _ = try await CampaignsJob.add(
            store.location,
            files: [
                try directory.write(
                    "map.csv",
                    CampaignMapping.header + "\na.skadnetwork,12,,,Alpha,,\nb.skadnetwork,5,,,Beta,,\n"
                )
            ]
        )
        var id = 0
        func postbacks(
            _ network: String,
            _ identifier: String,
            _ country: String,
            _ value: Int,
            _ count: Int
        ) throws
            -> [String]
        {
            try (0..<count).map { _ in
                id += 1
                var postback = AggregateFixture.postback(.v4_0, app: 111, id: id, value: .fine(value))
                postback.adNetworkID = network
                postback.sourceIdentifier = identifier
                postback.countryCode = country
                return try TestKeys.signer.signed(postback).jsonText()
            }
        }
        let one =
            try postbacks("a.skadnetwork", "1234", "US", 20, 6) + postbacks("a.skadnetwork", "1299", "DE", 20, 4)
            + postbacks("b.skadnetwork", "5678", "US", 20, 4)
        let two = try postbacks("a.skadnetwork", "1234", "US", 30, 5)
        try await ingest(
            [try directory.write("one-\(engine).jsonl", one.joined(separator: "\n"))],
            into: store.location,
            receivedAt: UTCInstant(iso8601: Self.dayOne + "T10:00:00Z")
        )
        try await ingest(
            [try directory.write("two-\(engine).jsonl", two.joined(separator: "\n"))],
            into: store.location,
            receivedAt: UTCInstant(iso8601: Self.dayTwo + "T10:00:00Z")
        )
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        return store
    }

    static let spend = """
        date,ad_network_id,campaign,country_code,spend,currency
        2026-11-20,a.skadnetwork,Alpha,US,30,USD
        2026-11-20,a.skadnetwork,Alpha,DE,20.5,USD
        2026-11-20,b.skadnetwork,Beta,US,16,USD
        2026-11-21,a.skadnetwork,Alpha,US,40,EUR

        """

    private func report(
        _ store: TestStore,
        _ by: String,
        from: String? = nil,
        to: String? = nil,
        currency: String? = nil,
        modeled: Bool = false
    ) async throws -> (report: Report, warning: String?) {
        var options = ReportRequest.Options()
        options.by = by
        options.from = from
        options.to = to
        options.currency = currency
        options.modeled = modeled
        return try await ReportJob.run(store.location, try ReportRequest.parse(options))
    }

    private func row(_ report: Report, _ values: [String]) -> ReportRow? {
        report.rows.first { row in
            row.dimensions.map { value -> String in
                switch value {
                case .null: ""
                case .integer(let number): String(number)
                case .text(let text): text
                }
            } == values
        }
    }

    private func close(_ a: Double?, _ b: Double, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(a.map { abs($0 - b) < 1e-9 } == true, "\(String(describing: a)) ≠ \(b)", sourceLocation: sourceLocation)
    }

    @Test(
        "spend, CPI and ROAS by network, campaign and country equal the test's own sums",
        arguments: TestEngine.available
    )
    func grains(_ engine: TestEngine) async throws {
        let store = try await corpusStore(engine)
        let added = try await CostsJob.addCosts(store.location, files: [try directory.write("spend.csv", Self.spend)])
        #expect(added.refused.isEmpty)
        #expect(added.changes.map(\.added) == [4])

        // By day and network: a's day one is both countries (10 installs, USD 50.5; revenue 10 ×
        // USD 5–10), b's is 4 installs for USD 16; a's day two is EUR 40 for 5 × EUR 8.
        let byNetwork = try await report(store, "date,ad_network_id").report
        #expect(byNetwork.showsSpend && byNetwork.spendCurrencies == ["EUR", "USD"])
        let a1 = try #require(row(byNetwork, [Self.dayOne, "a.skadnetwork"]))
        close(a1.spend["USD"], 50.5)
        #expect(a1.counts[.installs] == 10)
        close(a1.cpi("USD"), 50.5 / 10)
        close(a1.roas("USD")?.min, 50 / 50.5)
        close(a1.roas("USD")?.estimate, 75 / 50.5)
        close(a1.roas("USD")?.max, 100 / 50.5)
        let b1 = try #require(row(byNetwork, [Self.dayOne, "b.skadnetwork"]))
        close(b1.cpi("USD"), 4)
        close(b1.roas("USD")?.estimate, 30 / 16)
        let a2 = try #require(row(byNetwork, [Self.dayTwo, "a.skadnetwork"]))
        close(a2.spend["EUR"], 40)
        close(a2.roas("EUR")?.estimate, 40.0 / 40)
        #expect(a2.roas("USD") == nil && a2.cpi("USD") == nil)

        // By campaign over both days: Alpha has USD and EUR revenue and spend: no ROAS in
        // either currency (a ratio of two currencies means nothing), CPI per currency.
        let byCampaign = try await report(store, "campaign").report
        let alpha = try #require(row(byCampaign, ["Alpha"]))
        close(alpha.spend["USD"], 50.5)
        close(alpha.spend["EUR"], 40)
        #expect(alpha.roas("USD") == nil && alpha.roas("EUR") == nil)
        close(alpha.cpi("EUR"), 40.0 / 15)
        let beta = try #require(row(byCampaign, ["Beta"]))
        close(beta.roas("USD")?.estimate, 30 / 16)

        // By day and country: US is a's 6 and b's 4.
        let byCountry = try await report(store, "date,country_code", to: Self.dayOne).report
        let us = try #require(row(byCountry, [Self.dayOne, "US"]))
        #expect(us.counts[.installs] == 10)
        close(us.spend["USD"], 46)
        close(us.roas("USD")?.estimate, 75 / 46)
        let de = try #require(row(byCountry, [Self.dayOne, "DE"]))
        close(de.cpi("USD"), 20.5 / 4)
        close(de.roas("USD")?.estimate, 30 / 20.5)

        // The formats carry them: CSV columns, JSON objects.
        let csv = CSV.records(byNetwork.formatted(.csv))
        let a1CSV = try #require(csv.first { $0["date"] == Self.dayOne && $0["ad_network_id"] == "a.skadnetwork" })
        #expect(a1CSV["spend_USD"] == "50.5")
        #expect(a1CSV["cpi_USD"] == "5.05")
        #expect(a1CSV["roas_USD_estimate"] == formatJSONNumber(roundedMoney(75 / 50.5)))
        #expect(a1CSV["spend_EUR"] == "")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(byNetwork.formatted(.json).utf8)) as? [[String: Any]]
        )
        let b1JSON = try #require(json.first { $0["ad_network_id"] as? String == "b.skadnetwork" })
        #expect((b1JSON["spend"] as? [String: Double])?["USD"] == 16)
        #expect((b1JSON["cpi"] as? [String: Double])?["USD"] == 4)
        #expect(((b1JSON["roas"] as? [String: Any])?["USD"] as? [String: Double])?["estimate"] == 1.875)

        // A dimension a cost row cannot carry: no spend columns, and the warning says why.
        let tiers = try await report(store, "ad_network_id,crowd_anonymity_tier")
        #expect(!tiers.report.showsSpend)
        #expect(tiers.warning?.contains("not crowd_anonymity_tier") == true)
        #expect(!tiers.report.formatted(.csv).contains("spend_"))
    }

    @Test(
        "a file re-added changes nothing; a corrected row replaces its spend; another day's costs leave a day's report byte for byte",
        arguments: TestEngine.available
    )
    func reAddAndCorrect(_ engine: TestEngine) async throws {
        let store = try await corpusStore(engine)
        let file = try directory.write("spend-\(engine).csv", Self.spend)
        _ = try await CostsJob.addCosts(store.location, files: [file])
        let before = try await report(store, "date,ad_network_id,campaign", from: Self.dayOne, to: Self.dayOne).report
        let again = try await CostsJob.addCosts(store.location, files: [file])
        #expect(again.changes.first.map { [$0.added, $0.changed, $0.unchanged] } == [0, 0, 4])
        #expect(try await CostsJob.costs(store.location, from: nil, to: nil).count == 4)

        // Other days, in a currency the day has none of: the day's report is unchanged.
        let other = try directory.write(
            "other-\(engine).csv",
            "date,ad_network_id,spend,currency\n2026-11-22,a.skadnetwork,99,GBP\n2026-11-19,b.skadnetwork,1,JPY\n"
        )
        _ = try await CostsJob.addCosts(store.location, files: [other])
        let after = try await report(store, "date,ad_network_id,campaign", from: Self.dayOne, to: Self.dayOne).report
        for format in ReportFormat.allCases {
            #expect(after.formatted(format) == before.formatted(format), "\(format)")
        }

        // A corrected export: one row's spend changed.
        let corrected = try directory.write(
            "corrected-\(engine).csv",
            Self.spend.replacingOccurrences(of: "Alpha,US,30,USD", with: "Alpha,US,35.25,USD")
        )
        let change = try await CostsJob.addCosts(store.location, files: [corrected])
        #expect(change.changes.first.map { [$0.added, $0.changed, $0.unchanged] } == [0, 1, 3])
        let fixed = try await report(store, "date,ad_network_id", from: Self.dayOne, to: Self.dayOne).report
        close(row(fixed, [Self.dayOne, "a.skadnetwork"])?.spend["USD"], 55.75)
        #expect(try await CostsJob.costs(store.location, from: nil, to: nil).count == 6)
    }

    @Test(
        "a bad file names each problem as FILE:LINE: column: what, and stores nothing of it",
        arguments: TestEngine.available
    )
    func badFile(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory, name: "bad")
        let good = try directory.write("good-\(engine).csv", Self.spend)
        let bad = try directory.write(
            "bad-\(engine).csv",
            """
            date,ad_network_id,app_id,country_code,spend,currency,note
            2026-13-01,a.skadnetwork,,,1,USD,x
            2026-11-20,has space,,,1,USD,x
            2026-11-20,a.skadnetwork,0,,1,USD,x
            2026-11-20,a.skadnetwork,,usa,1,USD,x
            2026-11-20,a.skadnetwork,,,-5,USD,x
            2026-11-20,a.skadnetwork,,,1.1234567,USD,x
            2026-11-20,a.skadnetwork,,,"1,000",USD,x
            2026-11-20,a.skadnetwork,,,1,dollars,x
            2026-11-20,a.skadnetwork,,,1,USD
            2026-11-21,a.skadnetwork,,,1,USD,x
            2026-11-21,a.skadnetwork,,,2,USD,x

            """
        )
        let missing = try directory.write("missing-\(engine).csv", "date,ad_network_id,spend\n2026-11-20,a,1\n")
        let outcome = try await CostsJob.addCosts(store.location, files: [bad, good, missing])
        #expect(outcome.changes.map(\.file) == [good])
        let problems = outcome.refused.flatMap(\.problems)
        for expected in [
            "\(bad):1: header: unknown column \"note\"",
            "\(bad):2: date: expected a day as YYYY-MM-DD (UTC), found \"2026-13-01\"",
            "\(bad):3: ad_network_id: expected the network's id",
            "\(bad):4: app_id: expected the app's id (a positive integer) or empty, found \"0\"",
            "\(bad):5: country_code: expected two capital letters",
            "\(bad):6: spend: negative (-5)",
            "\(bad):7: spend: more than six decimals (1.1234567)",
            "\(bad):8: spend: expected a decimal number such as 1234.56",
            "\(bad):9: currency: expected a three-letter ISO 4217 code such as USD, found \"dollars\"",
            "\(bad):10: 6 columns; the header has 7",
            "\(bad):12: key: the same date, ad_network_id, app_id, campaign and country_code as line 11",
            "\(missing):1: header: the column currency is missing",
        ] {
            #expect(problems.contains { $0.hasPrefix(expected) }, "\(expected)\n\(problems.joined(separator: "\n"))")
        }
        // Only the good file's rows.
        let stored = try await CostsJob.costs(store.location, from: nil, to: nil)
        #expect(stored.count == 4 && stored.allSatisfy { $0.row.source == good })
        // Rates are checked alike.
        let badRates = try directory.write(
            "rates-\(engine).csv",
            "date,base,quote,rate\n2026-11-20,EUR,EUR,1\n2026-11-20,EUR,USD,0\n2026-11-20,EUR,USD,abc\n"
        )
        let rates = try await CostsJob.addRates(store.location, files: [badRates])
        let rateProblems = rates.refused.flatMap(\.problems)
        #expect(rateProblems.contains("\(badRates):2: quote: the same currency as base (EUR)"), "\(rateProblems)")
        #expect(rateProblems.contains { $0.hasPrefix("\(badRates):3: rate: expected a positive decimal") })
        #expect(rateProblems.contains { $0.hasPrefix("\(badRates):4: rate: expected a positive decimal") })
        #expect(try await CostsJob.rates(store.location, from: nil, to: nil).isEmpty)
    }

    @Test(
        "--currency converts each day by its rate, a rate up to 7 days old, an inverse pair; a day without one is empty and named",
        arguments: TestEngine.available
    )
    func currency(_ engine: TestEngine) async throws {
        let store = try await corpusStore(engine)
        _ = try await CostsJob.addCosts(store.location, files: [try directory.write("spend-\(engine).csv", Self.spend)])

        // No rate yet: day two's EUR cannot be converted; a's rows are empty, b's are USD.
        let none = try await report(store, "ad_network_id", currency: "USD")
        #expect(none.warning?.contains("no EUR→USD exchange rate on \(Self.dayTwo)") == true, "\(none.warning ?? "")")
        let aNone = try #require(row(none.report, ["a.skadnetwork"]))
        #expect(aNone.unconverted && aNone.spend.isEmpty && aNone.revenue.isEmpty && aNone.roas("USD") == nil)
        #expect(aNone.counts[.installs] == 15)
        let bNone = try #require(row(none.report, ["b.skadnetwork"]))
        close(bNone.roas("USD")?.estimate, 30 / 16)
        #expect(
            CSV.records(none.report.formatted(.csv)).first { $0["ad_network_id"] == "a.skadnetwork" }?["spend_USD"]
                == ""
        )
        #expect(none.report.formatted(.json).contains("\"revenue\":null"))

        // A rate on day one only (USD→EUR 0.8, given the other way round): day two uses it
        // (a day old), so EUR 1 = USD 1.25.
        _ = try await CostsJob.addRates(
            store.location,
            files: [try directory.write("rates-\(engine).csv", "date,base,quote,rate\n2026-11-20,USD,EUR,0.8\n")]
        )
        let converted = try await report(store, "ad_network_id", currency: "USD")
        #expect(converted.warning == nil, "\(converted.warning ?? "")")
        #expect(converted.report.currencies == ["USD"] && converted.report.spendCurrencies == ["USD"])
        let a = try #require(row(converted.report, ["a.skadnetwork"]))
        close(a.spend["USD"], 50.5 + 40 * 1.25)
        close(a.revenue["USD"]?.estimate, 75 + 40 * 1.25)
        close(a.roas("USD")?.estimate, (75 + 40 * 1.25) / (50.5 + 40 * 1.25))
        close(a.cpi("USD"), (50.5 + 40 * 1.25) / 15)
        // Into EUR, day one's USD by the direct rate.
        let euro = try await report(store, "date,ad_network_id", currency: "EUR")
        close(row(euro.report, [Self.dayOne, "b.skadnetwork"])?.spend["EUR"], 16 * 0.8)

        // Eight days later the rate is too old.
        let late = try directory.write(
            "late-\(engine).csv",
            "date,ad_network_id,spend,currency\n2026-11-29,a.skadnetwork,10,EUR\n"
        )
        _ = try await CostsJob.addCosts(store.location, files: [late])
        let old = try await report(store, "date", from: "2026-11-28", to: "2026-11-29", currency: "USD")
        #expect(old.warning?.contains("no EUR→USD exchange rate on 2026-11-29") == true, "\(old.warning ?? "")")
        #expect(row(old.report, ["2026-11-29"])?.unconverted == true)
    }
}
