import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// AdAttributionKit postbacks beside SKAdNetwork ones: generated, verified, ingested,
/// aggregated and reported by the built binary.
@Suite("AdAttributionKit beside SKAdNetwork", .timeLimit(.minutes(20)))
struct AAKCommandTests {
    let directory: TemporaryDirectory
    let database: String

    init() throws {
        directory = try TemporaryDirectory("aak-cli")
        database = directory.path + "/postbackd.sqlite"
    }

    private func run(_ arguments: [String]) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, directory: directory.path)
    }

    private func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    @Test("generate --kind aak: signed JWS postbacks that verify with Keys/test, some under the development kid")
    func generateAAK() async throws {
        let arguments = [
            "generate", "--key", TestKeys.directory + "/p256-private.pem", "--kind", "aak", "--count", "400",
            "--seed", "5", "--invalid", "0", "--duplicates", "0", "--development", "0.2",
        ]
        let generated = try await run(arguments)
        #expect(generated.status == 0, "\(generated.standardError)")
        #expect(
            try await run(arguments).standardOutput == generated.standardOutput,
            "the same seed gives the same bytes"
        )
        let file = try directory.write("aak.jsonl", generated.standardOutput)
        let verify = try await run(["verify", "--keys", TestKeys.directory, "--format", "json", file])
        #expect(verify.status == 0, "\(verify.standardError)")
        let results = try jsonLines(verify.standardOutput)
        #expect(results.count == 400)
        #expect(results.allSatisfy { $0["kind"] as? String == "aak" && $0["verdict"] as? String == "valid" })
        let development = results.filter { $0["development"] as? Bool == true }.count
        #expect(development > 40 && development < 120, "\(development) of 400 at a rate of 0.2")
        #expect(
            Set(results.compactMap { $0["key"] as? String }) == [
                "test:postbackd-test/0", "test:postbackd-development/0",
            ]
        )

        // --invalid breaks signatures: those are invalid, never malformed.
        let broken = try await run([
            "generate", "--key", TestKeys.directory + "/p256-private.pem", "--kind", "aak", "--count", "300",
            "--seed", "6", "--invalid", "0.2",
        ])
        let brokenFile = try directory.write("broken.jsonl", broken.standardOutput)
        let checked = try jsonLines(
            try await run(["verify", "--keys", TestKeys.directory, "--format", "json", brokenFile]).standardOutput
        )
        let invalid = checked.filter { $0["verdict"] as? String == "invalid" }
        #expect(invalid.count > 30)
        #expect(checked.allSatisfy { $0["verdict"] as? String != "malformed" })
        #expect(invalid.allSatisfy { $0["field"] as? String == "jws-string" })
    }

    @Test("a mixed SKAdNetwork and AdAttributionKit ingest: the report adds up to the stored postbacks")
    func mixedReportAddsUp() async throws {
        let generated = try await run([
            "generate", "--key", TestKeys.directory + "/p192-private.pem", "--key",
            TestKeys.directory + "/p256-private.pem", "--kind", "mixed", "--versions", "1.0,2.0,2.1,2.2,3.0,4.0",
            "--count", "3000", "--seed", "9", "--duplicates", "0.03", "--invalid", "0.02", "--test-mode", "0.01",
            "--development", "0.1",
        ])
        #expect(generated.status == 0, "\(generated.standardError)")
        let input = try directory.write("mixed.jsonl", generated.standardOutput)
        let ingest = try await run([
            "ingest", "--db", database, "--keys", TestKeys.directory, "--format", "json", input,
        ])
        #expect(ingest.status == 0, "\(ingest.standardError)")
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(ingest.standardOutput.utf8)) as? [String: Any]
        )
        let read = summary["read"] as? Int ?? -1
        #expect(read == 3000)
        #expect(
            read == (summary["accepted"] as? Int ?? 0) + (summary["duplicates"] as? Int ?? 0)
                + (summary["quarantined"] as? Int ?? 0)
        )
        #expect(try await run(["aggregate", "--db", database]).status == 0)

        // What the report must say, counted straight from the stored postbacks.
        func count(_ condition: String) async throws -> Int {
            try DatabaseDump.count("postbacks", in: database, where: condition)
        }
        let winningFirst =
            "key_space = 'production' AND COALESCE(did_win, 1) = 1 AND postback_sequence_index = 0"
        let expected: [String: Int] = [
            "postbacks": try await count("1"),
            "installs": try await count(
                "\(winningFirst) AND (conversion_type = 'download' OR (conversion_type IS NULL AND COALESCE(redownload, 0) = 0))"
            ),
            "redownloads": try await count(
                "\(winningFirst) AND (conversion_type = 'redownload' OR (conversion_type IS NULL AND redownload = 1))"
            ),
            "reengagements": try await count("\(winningFirst) AND conversion_type = 're-engagement'"),
            "non_winning": try await count("did_win = 0"),
            "test_mode": try await count("key_space = 'test'"),
            "development": try await count("key_space = 'development'"),
        ]
        #expect(try await count("kind = 'aak'") > 300)
        #expect(try await count("kind = 'skan'") > 1500)
        #expect((expected["reengagements"] ?? 0) > 0)
        #expect((expected["development"] ?? 0) > 0)
        #expect(expected["postbacks"] == summary["accepted"] as? Int)

        let report = try await run(["report", "--db", database, "--by", "", "--format", "json"])
        #expect(report.status == 0, "\(report.standardError)")
        let total = try #require(
            (try JSONSerialization.jsonObject(with: Data(report.standardOutput.utf8)) as? [[String: Any]])?.first
        )
        for (metric, value) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(total[metric] as? Int == value, "\(metric)")
        }

        // By marketplace: AdAttributionKit's marketplaces are rows of their own, and the rows add up.
        let byMarketplace = try #require(
            try JSONSerialization.jsonObject(
                with: Data(
                    try await run(["report", "--db", database, "--by", "marketplace_id", "--format", "json"])
                        .standardOutput
                        .utf8
                )
            ) as? [[String: Any]]
        )
        let marketplaces = Set(byMarketplace.compactMap { $0["marketplace_id"] as? String })
        #expect(marketplaces == ["com.apple.AppStore", "com.example.marketplace"])
        #expect(byMarketplace.reduce(0) { $0 + ($1["postbacks"] as? Int ?? 0) } == expected["postbacks"])
        #expect(
            byMarketplace.first { $0["marketplace_id"] as? String == "com.apple.AppStore" }?["postbacks"] as? Int
                == (try await count("marketplace_id = 'com.apple.AppStore'"))
        )
    }
}
