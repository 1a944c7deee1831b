import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// costs add/list and rates add/list, and report --currency, run as the built binary.
@Suite("postbackd costs and rates", .timeLimit(.minutes(20)))
struct CostsCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("costs-cli")
    }

    private func run(_ arguments: [String], input: String? = nil) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, input: input.map { Array($0.utf8) }, directory: directory.path)
    }

    @Test("a bad file exits 2 naming each problem while a good one is stored; list --format csv reads back unchanged")
    func addAndList() async throws {
        let good = try directory.write(
            "good.csv",
            "country_code,date,ad_network_id,campaign,spend,currency\nUS,2026-11-20,a.skadnetwork,\"Sale, big\",12.5,USD\n,2026-11-21,a.skadnetwork,,0.000001,EUR\n"
        )
        let bad = try directory.write(
            "bad.csv",
            "date,ad_network_id,spend,currency\n2026-11-20,a.skadnetwork,1 000,USD\n"
        )
        let added = try await run(["costs", "add", good, bad])
        #expect(added.status == 2)
        #expect(added.standardOutput.contains("good.csv: 2 rows (2026-11-20 to 2026-11-21): 2 new"))
        #expect(
            added.standardError.contains("nothing of \(bad) was stored:\n\(bad):2: spend: expected a decimal number")
        )
        let csv = try await run(["costs", "list", "--format", "csv"])
        #expect(
            csv.standardOutput
                == "date,ad_network_id,app_id,campaign,country_code,spend,currency\n2026-11-20,a.skadnetwork,,\"Sale, big\",US,12.5,USD\n2026-11-21,a.skadnetwork,,,,0.000001,EUR\n"
        )
        // Read back through standard input: every row as stored.
        let again = try await run(["costs", "add", "--format", "json", "-"], input: csv.standardOutput)
        #expect(again.status == 0, "\(again.standardError)")
        #expect(again.standardOutput.contains("\"added\":0,\"changed\":0,\"unchanged\":2"))
        let table = try await run(["costs", "list", "--from", "2026-11-21"])
        #expect(table.standardOutput.contains("0.00") && table.standardOutput.contains("total: EUR 0.00"))
        #expect(!table.standardOutput.contains("Sale, big"))

        let rates = try await run(["rates", "add", "-"], input: "date,base,quote,rate\n2026-11-20,EUR,USD,1.0842\n")
        #expect(rates.status == 0, "\(rates.standardError)")
        #expect(
            try await run(["rates", "list", "--format", "csv"]).standardOutput
                == "date,base,quote,rate\n2026-11-20,EUR,USD,1.0842\n"
        )
        let refused = try await run(["report", "--currency", "usd"])
        #expect(refused.status == 2)
        #expect(refused.standardError.contains("--currency: \"usd\" is not a three-letter ISO 4217 code"))
    }
}
