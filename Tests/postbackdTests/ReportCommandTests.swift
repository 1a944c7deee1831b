import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// models, aggregate, report and verify --model, run as the built binary.
@Suite("postbackd models, aggregate and report", .timeLimit(.minutes(20)))
struct ReportCommandTests {
    let directory: TemporaryDirectory
    let database: String

    init() throws {
        directory = try TemporaryDirectory("report-cli")
        database = directory.path + "/postbackd.sqlite"
    }

    private func run(_ arguments: [String], input: String? = nil) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, input: input.map { Array($0.utf8) }, directory: directory.path)
    }

    /// The README's main job on SamplePostbacks, as scripts/main-job.sh runs it.
    private func mainJob() async throws {
        let models = try FileManager.default.contentsOfDirectory(atPath: Repository.path("SamplePostbacks/models"))
            .sorted()
            .map { Repository.path("SamplePostbacks/models/" + $0) }
        #expect(try await run(["models", "add"] + models).status == 0)
        let ingest = try await run([
            "ingest", "--keys", Repository.path("Keys/apple"), "--keys", TestKeys.directory,
            Repository.path("SamplePostbacks/apple"), Repository.path("SamplePostbacks/generated"),
        ])
        #expect(ingest.status == 0, "\(ingest.standardError)")
        let aggregate = try await run(["aggregate"])
        #expect(aggregate.status == 0)
        #expect(aggregate.standardOutput.hasPrefix("aggregated 3,301 postbacks over 9 days"))
    }

    @Test("the main job's report: JSON and CSV parse back and agree, the table fits 100 columns")
    func formats() async throws {
        try await mainJob()
        let json = try await run(["report", "--by", "date,app_id", "--format", "json"])
        #expect(json.status == 0)
        let rows = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]]
        )
        #expect(rows.reduce(0) { $0 + ($1["postbacks"] as? Int ?? 0) } == 3301)
        for row in rows {
            for key in [
                "date", "app_id", "postbacks", "installs", "redownloads", "reengagements", "non_winning", "test_mode",
                "development", "null_conversion_values", "unmapped", "unmodelled", "model_ambiguous", "revenue",
            ] {
                #expect(row[key] != nil, "\(key)")
            }
        }
        let csv = try await run(["report", "--by", "date,app_id", "--format", "csv"])
        let records = CSV.records(csv.standardOutput)
        #expect(records.count == rows.count)
        let header = CSV.parse(csv.standardOutput).first ?? []
        #expect(
            Array(header.prefix(13)) == [
                "date", "app_id", "postbacks", "installs", "redownloads", "reengagements", "non_winning", "test_mode",
                "development", "null_conversion_values", "unmapped", "unmodelled", "model_ambiguous",
            ]
        )
        #expect(
            Array(header.suffix(9)) == [
                "revenue_EUR_min", "revenue_EUR_max", "revenue_EUR", "revenue_JPY_min", "revenue_JPY_max",
                "revenue_JPY", "revenue_USD_min", "revenue_USD_max", "revenue_USD",
            ]
        )
        for (record, row) in zip(records, rows) {
            #expect(record["date"] == row["date"] as? String)
            #expect(record["app_id"] == (row["app_id"] as? Int).map(String.init))
            #expect(record["installs"] == (row["installs"] as? Int).map(String.init))
            let usd = (row["revenue"] as? [String: [String: Double]])?["USD"]
            #expect(Double(record["revenue_USD"] ?? "") == usd?["estimate"] ?? 0)
            #expect(Double(record["revenue_USD_min"] ?? "") == usd?["min"] ?? 0)
            #expect(Double(record["revenue_USD_max"] ?? "") == usd?["max"] ?? 0)
        }
        let table = try await run(["report"])
        #expect(table.status == 0)
        #expect(
            table.outputLines.allSatisfy { $0.count <= 100 },
            "\(table.outputLines.map(\.count).max() ?? 0) columns"
        )
        #expect(table.standardOutput.contains("total"))
        #expect(table.standardOutput.contains("3,301"))
    }

    @Test("--events rows: event, occurrences, postbacks, revenue; JSON and CSV")
    func events() async throws {
        try await mainJob()
        let json = try await run(["report", "--by", "app_id", "--events", "--format", "json"])
        let rows = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]]
        )
        let subscribe = try #require(rows.first { $0["event"] as? String == "subscribe" })
        #expect(subscribe["app_id"] as? Int == 734_771_186)
        #expect((subscribe["occurrences_min"] as? Int ?? 0) > 0)
        #expect((subscribe["revenue"] as? [String: Any])?["EUR"] != nil)
        let csv = CSV.records(
            try await run(["report", "--by", "app_id", "--events", "--format", "csv"]).standardOutput
        )
        #expect(csv.count == rows.count)
        #expect(csv.first?.keys.contains("occurrences_max") == true)
        #expect(csv.first?.keys.contains("event") == true)
    }

    @Test("models add refuses a file with errors and stores nothing; list and show")
    func models() async throws {
        let good = Repository.path("SamplePostbacks/models/app-525463029-apple-examples.json")
        let bad = try directory.write(
            "bad.json",
            #"{"appId":"5","fineGrainedConversionValueMappings":[{"fineGrainedConversionValue":99}]}"#
        )
        let refused = try await run(["models", "add", good, bad])
        #expect(refused.status == 2)
        #expect(
            refused.standardError.contains(
                "bad.json: $.fineGrainedConversionValueMappings[0].fineGrainedConversionValue: 99 is not a fine conversion value"
            )
        )
        let noStore = try await run(["models", "list"])
        #expect(
            noStore.status == 2 && noStore.standardError.contains("no store at postbackd.sqlite"),
            "\(noStore.standardError)"
        )
        #expect(try await run(["models", "add", good]).standardOutput.contains("app 525463029: added"))
        #expect(try await run(["models", "add", good]).standardOutput.contains("app 525463029: unchanged"))
        let list = try await run(["models", "list", "--format", "json"])
        let models = try #require(
            try JSONSerialization.jsonObject(with: Data(list.standardOutput.utf8)) as? [[String: Any]]
        )
        #expect(models.first?["app_id"] as? Int == 525_463_029)
        let show = try await run(["models", "show", "525463029"])
        #expect(
            try ConversionModelParser.parse(Array(show.standardOutput.utf8))
                == ConversionModelParser.parse(try Repository.bytes(good))
        )
        #expect(try await run(["models", "show", "1"]).status == 2)
    }

    @Test("verify --model prints each valid postback's decoded events and revenue")
    func verifyWithModel() async throws {
        let model = Repository.path("SamplePostbacks/models/app-525463029-apple-examples.json")
        let text = try await run([
            "verify", "--model", model, Repository.vectors + "/apple-3.0-win.json",
            Repository.vectors + "/apple-4.0-web-coarse-win.json", Repository.vectors + "/real-1.0-su67r6k2v3.json",
        ])
        #expect(
            text.standardOutput.contains(
                "    decoded: purchase ×1–2 (USD 5.00–10.00); revenue USD 5.00–10.00, midpoint 7.50"
            )
        )
        #expect(text.standardOutput.contains("    decoded: purchase ×1 (USD 50.00); revenue USD 50.00, midpoint 50.00"))
        #expect(text.standardOutput.contains("    decoded: no conversion model for app 1176027022"))
        let json = try await run([
            "verify", "--format", "json", "--model", model, Repository.vectors + "/apple-3.0-nonwin.json",
        ])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        )
        let decoded = try #require(object["decoded"] as? [String: Any])
        #expect(decoded["status"] as? String == "null")
        let bad = try directory.write("m.json", "{}")
        #expect(try await run(["verify", "--model", bad, Repository.vectors]).status == 2)
    }

    @Test("aggregate --date and --from/--to; usage errors")
    func aggregateOptions() async throws {
        try await mainJob()
        let one = try await run(["aggregate", "--date", "2026-11-15", "--format", "json"])
        #expect(one.status == 0)
        #expect(one.standardOutput.contains("\"days\":[\"2026-11-15\"]"))
        #expect(
            try await run(["aggregate", "--date", "2026-11-15", "--from", "2026-11-14", "--to", "2026-11-15"]).status
                == 2
        )
        #expect(try await run(["aggregate", "--from", "2026-11-16"]).status == 2)
        #expect(try await run(["aggregate", "--date", "15/11/2026"]).status == 2)
        #expect(try await run(["report", "--by", "colour"]).standardError.contains("\"colour\" is not a dimension"))
    }

    @Test("report warns when postbacks arrived after the last aggregate")
    func staleness() async throws {
        try await mainJob()
        #expect(try await run(["report"]).standardError.isEmpty)
        #expect(
            try await run(["ingest", Repository.vectors + "/apple-2.0-win.json", "--received-at", "2026-11-21"]).status
                == 0
        )
        #expect(
            try await run(
                ["ingest", "--keys", TestKeys.directory, "-"],
                input: try SamplePostback.signedJSON(.v4_0, transactionID: "99999999-0000-4000-8000-000000000000")
            ).status == 0
        )
        #expect(try await run(["report"]).standardError.contains("run postbackd aggregate"))
    }
}
