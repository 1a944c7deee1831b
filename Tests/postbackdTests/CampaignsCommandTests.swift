import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// campaigns add/list, report by the section 9 dimensions, and verify's inferences, run as the
/// built binary.
@Suite("postbackd campaigns, install dates and tiers", .timeLimit(.minutes(20)))
struct CampaignsCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("campaigns-cli")
    }

    private func run(_ arguments: [String], input: String? = nil) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, input: input.map { Array($0.utf8) }, directory: directory.path)
    }

    @Test("a bad mapping file stores nothing and names each problem; a good one is listed and reported by")
    func addListReport() async throws {
        let ingest = try await run([
            "ingest", "--keys", TestKeys.directory, Repository.path("SamplePostbacks/generated"),
        ])
        #expect(ingest.status == 0, "\(ingest.standardError)")
        let bad = try directory.write(
            "bad.csv",
            CampaignMapping.header
                + "\nfzbddbi26k.skadnetwork,1,,,A,,\nfzbddbi26k.skadnetwork,1,2026-11-01,,B,,\nx,12345,,,C,,\n"
        )
        let refused = try await run(["campaigns", "add", bad])
        #expect(refused.status == 2)
        #expect(refused.standardError.contains("no mapping was stored"))
        #expect(refused.standardError.contains("bad.csv:4: source_identifier: expected a prefix of 1 to 4 digits"))
        #expect(
            refused.standardError.contains(
                "bad.csv:3: network fzbddbi26k.skadnetwork, prefix 1: valid from 2026-11-01, which overlaps \(bad):2"
            )
        )
        #expect(try await run(["campaigns", "list"]).standardOutput.hasPrefix("no campaign mappings"))

        let good = try directory.write(
            "good.csv",
            CampaignMapping.header
                + "\nfzbddbi26k.skadnetwork,1,,,\"Ones, all\",Group,\nvdsbuozq6b.skadnetwork,4,,,Fours,,\n"
        )
        let added = try await run(["campaigns", "add", good])
        #expect(added.status == 0, "\(added.standardError)")
        #expect(added.standardOutput.contains("fzbddbi26k.skadnetwork: 1 row stored"))
        let listed = try await run(["campaigns", "list", "--format", "csv"])
        #expect(listed.standardOutput.contains("fzbddbi26k.skadnetwork,1,,,\"Ones, all\",Group,,\(good),2,"))
        #expect(try await run(["aggregate"]).status == 0)
        let report = try await run(["report", "--by", "campaign,crowd_anonymity_tier", "--format", "csv"])
        #expect(report.status == 0)
        #expect(report.standardError.isEmpty, "\(report.standardError)")
        let header = CSV.parse(report.standardOutput).first ?? []
        #expect(header.prefix(2) == ["campaign", "crowd_anonymity_tier"])
        #expect(header.contains("null_rate") && header.contains("tier_share"))
        #expect(CSV.records(report.standardOutput).contains { $0["campaign"] == "Ones, all" })
        // The install basis changes the default grouping.
        let install = try await run([
            "report", "--date-basis", "install", "--from", "2026-11-10", "--to", "2026-11-12", "--format", "csv",
        ])
        #expect(CSV.parse(install.standardOutput).first?.prefix(2) == ["install_date", "ad_network_id"])
        let days = Set(CSV.records(install.standardOutput).compactMap { $0["install_date"] })
        #expect(days == ["2026-11-10", "2026-11-11", "2026-11-12"])
    }

    @Test(
        "names from outside print to a terminal with control characters and bidi overrides escaped, and as given in JSON"
    )
    func controlCharacters() async throws {
        let hostile = "Evil\u{1B}]0;pwned\u{07}\u{1B}[2J\u{9B}1A"
        let mapping = try directory.write(
            "hostile.csv",
            CampaignMapping.header + "\nx.skadnetwork,12,,,\(hostile),g\u{202E}x,\n"
        )
        #expect(try await run(["campaigns", "add", mapping]).status == 0)
        let table = try await run(["campaigns", "list"]).standardOutput
        #expect(table.contains(#"Evil\x1b]0;pwned\x07\x1b[2J\u{9b}1A"#), "\(table)")
        #expect(table.contains(#"g\u{202e}x"#))
        #expect(
            !table.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" },
            "no control character reaches the terminal"
        )
        // JSON keeps the name as it is, escaped as JSON.
        let json = try await run(["campaigns", "list", "--format", "json"]).standardOutput
        #expect(json.contains(#"Evil\u001b]0;pwned\u0007\u001b[2J"#), "\(json)")
        // An error quoting input does the same.
        let refused = try await run(["keys", "add", "bad\u{1B}[2Jname", "--all-apps"])
        #expect(refused.status == 2 && refused.standardError.contains(#"bad\x1b[2Jname"#), "\(refused.standardError)")
    }

    @Test("verify --format json and --explain show the estimated install time, tier and digits")
    func verifyShowsInferences() async throws {
        let file = try directory.write("four.json", try SamplePostback.signedJSON(.v4_0, conversionValue: .fine(20)))
        let json = try await run([
            "verify", "--keys", TestKeys.directory, "--format", "json", "--received-at", "2026-11-21T12:00:00Z", file,
        ])
        #expect(json.status == 0, "\(json.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        )
        #expect(object["received_at"] as? String == "2026-11-21T12:00:00.000Z")
        #expect(object["received_at_source"] as? String == "option")
        #expect(object["estimated_install_at"] as? String == "2026-11-18T00:00:00.000Z")
        #expect(object["install_date"] as? String == "2026-11-18")
        #expect(object["crowd_anonymity_tier"] as? Int == 3)  // fine value, source domain
        #expect(object["source_identifier_digits"] as? Int == 4)
        let explain = try await run([
            "verify", "--keys", TestKeys.directory, "--explain", "--received-at", "2026-11-21T12:00:00Z", file,
        ])
        #expect(explain.standardOutput.contains("estimated install: 2026-11-18T00:00:00.000Z, install date 2026-11-18"))
        #expect(explain.standardOutput.contains("crowd-anonymity tier: 3 (fine value with a source domain)"))
    }
}
