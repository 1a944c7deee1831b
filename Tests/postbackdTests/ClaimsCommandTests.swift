import Foundation
import PostbackKit
import PostbackTestSupport
import Testing

/// claims add/list and report --with-claims, run as the built binary.
@Suite("postbackd claims", .timeLimit(.minutes(20)))
struct ClaimsCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("claims-cli")
    }

    private func run(_ arguments: [String], input: String? = nil) async throws -> Postbackd.Run {
        try await Postbackd.run(arguments, input: input.map { Array($0.utf8) }, directory: directory.path)
    }

    @Test("a bad file exits 2 naming each problem while a good one is stored; list --format csv reads back unchanged")
    func addAndList() async throws {
        let good = try directory.write(
            "tiktok.csv",
            "stat_time_day,campaign_name,skan_app_install\n2026-11-20 00:00:00,\"Sale, big\",7\n2026-11-21 00:00:00,,3\n"
        )
        let bad = try directory.write("bad.csv", "date,ad_network_id,installs\n2026-11-20,a.skadnetwork,1 000\n")
        let added = try await run([
            "claims", "add", "--ad-network-id", "22mmun2rn5.skadnetwork", "--app-id", "111", good, bad,
        ])
        #expect(added.status == 2)
        #expect(
            added.standardOutput.contains("tiktok.csv: 2 rows (2026-11-20 to 2026-11-21): 2 new"),
            "\(added.standardOutput)"
        )
        #expect(
            added.standardError.contains(
                "nothing of \(bad) was stored:\n\(bad):2: installs: expected a whole number, 0 or more"
            ),
            "\(added.standardError)"
        )
        let csv = try await run(["claims", "list", "--format", "csv"])
        #expect(
            csv.standardOutput
                == "date,date_basis,ad_network_id,app_id,campaign,country_code,installs,redownloads,conversions,modeled\n2026-11-20,install,22mmun2rn5.skadnetwork,111,\"Sale, big\",,7,,,false\n2026-11-21,install,22mmun2rn5.skadnetwork,111,,,3,,,false\n"
        )
        // Read back through standard input: every row as stored.
        let again = try await run(["claims", "add", "--format", "json", "-"], input: csv.standardOutput)
        #expect(again.status == 0, "\(again.standardError)")
        #expect(again.standardOutput.contains("\"added\":0,\"changed\":0,\"unchanged\":2"))
        let table = try await run(["claims", "list", "--from", "2026-11-21"])
        #expect(table.standardOutput.contains("claimed installs: 22mmun2rn5.skadnetwork 3"), "\(table.standardOutput)")

        // The report: by install date unless told, the claims' columns after the counts.
        let report = try await run(["report", "--with-claims", "--format", "csv", "--by", "install_date,ad_network_id"])
        #expect(report.status == 0, "\(report.standardError)")
        #expect(report.standardOutput.contains("claimed_installs,claim_gap,claim_coverage"))
        #expect(report.standardOutput.contains("2026-11-20,22mmun2rn5.skadnetwork,"), "\(report.standardOutput)")

        for (arguments, message) in [
            (
                ["claims", "add", "--date-basis", "received", good],
                "--date-basis: \"received\" is not install or postback"
            ),
            (["claims", "add", "--modeled", "yes", good], "--modeled: \"yes\" is not true or false"),
            (["claims", "add", "--app-id", "0", good], "--app-id: expected the app's id"),
            (["report", "--with-claims", "--events"], "--with-claims: compares installs"),
        ] {
            let refused = try await run(arguments)
            #expect(refused.status == 2, "\(arguments)")
            #expect(refused.standardError.contains(message), "\(arguments): \(refused.standardError)")
        }
    }
}
