import Foundation
import PostbackTestSupport
import Testing

extension AppleAdsTests {
    @Test(
        "the tokens of one app and install_id are one install, attributed when any of them is; a bad install_id is named",
        arguments: TestEngine.available
    )
    func installIDs(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let standIn = try await StandIn()
        let other: Int64 = 1_111_111_111
        let lines = [
            // One install, three tokens (the user changed their tracking permission twice): one
            // attributed.
            Self.line("organic-i1", install: "6F1C0E52-8D2B-4C35-9E47-0D7A1B2C3D4E"),
            Self.line("record-i1", install: "6F1C0E52-8D2B-4C35-9E47-0D7A1B2C3D4E"),
            Self.line("targeted-i1", install: "6F1C0E52-8D2B-4C35-9E47-0D7A1B2C3D4E"),
            // Another install with two tokens, neither attributed.
            Self.line("organic-i2", install: "install-2"),
            Self.line("targeted-i2", install: "install-2"),
            // Without an install id: each token an install.
            Self.line("organic-n1"), Self.line("organic-n2"),
            // The same install id in another app: another install.
            Self.line("record-o1", app: other, install: "6F1C0E52-8D2B-4C35-9E47-0D7A1B2C3D4E"),
            // Refused, each naming the field.
            #"{"app_id": 525463029, "token": "record-bad1", "obtained_at": "2026-11-25T00:00:00Z", "install_id": ""}"#,
            #"{"app_id": 525463029, "token": "record-bad2", "obtained_at": "2026-11-25T00:00:00Z", "install_id": 7}"#,
            #"{"app_id": 525463029, "token": "record-bad3", "obtained_at": "2026-11-25T00:00:00Z", "install_id": "a b\u0007"}"#,
        ]
        let file = try directory.write("installs.jsonl", lines.joined(separator: "\n") + "\n")
        let added = try await Self.postbackd(["apple-ads", "add", "--db", store.argument, file])
        #expect(added.status == 1, "three lines refused")
        #expect(added.standardError.contains("installs.jsonl:9: install_id: empty"), "\(added.standardError)")
        #expect(added.standardError.contains("installs.jsonl:10: install_id: expected a string, found a number"))
        #expect(added.standardError.contains("installs.jsonl:11: install_id: holds byte 0x07"))
        let stored = try await store.strings(
            "SELECT count(*) FROM apple_ads_tokens WHERE install_id = '6F1C0E52-8D2B-4C35-9E47-0D7A1B2C3D4E'"
        )
        #expect(stored == ["4"])
        let fetched = try await Self.postbackd([
            "apple-ads", "fetch", "--db", store.argument, "--endpoint", standIn.endpoint, "--once",
        ])
        #expect(fetched.status == 0, "\(fetched.standardError)")

        let report = try await Self.postbackd([
            "apple-ads", "report", "--db", store.argument, "--by", "app_id", "--format", "csv",
        ])
        #expect(
            report.standardOutput == """
                app_id,installs,redownloads,preorders,other_conversions,not_attributed,test
                525463029,1,0,0,0,3,0
                \(other),1,0,0,0,0,0

                """,
            "\(report.standardOutput)"
        )
        // By date: the install counts on its attributed record's click day, once.
        let byDate = try await Self.postbackd([
            "apple-ads", "report", "--db", store.argument, "--by", "date", "--from", "2026-11-20", "--to",
            "2026-11-20", "--format", "csv",
        ])
        #expect(byDate.standardOutput.contains("2026-11-20,2,0,0,0,0,0"), "\(byDate.standardOutput)")
        let side = try await Self.postbackd([
            "report", "--db", store.argument, "--by", "app_id", "--with-apple-ads", "--format", "json",
        ])
        #expect(side.status == 0, "\(side.standardError)")
        let rows = try #require(
            try JSONSerialization.jsonObject(with: Data(side.standardOutput.utf8)) as? [[String: Any]]
        )
        let ours = rows.first { ($0["app_id"] as? Int).map(Int64.init) == Self.app }
        #expect(ours?["apple_ads_installs"] as? Int == 1, "\(side.standardOutput)")
        await standIn.stop()
    }

    @Test(
        "report --with-apple-ads puts Apple Ads' SKAN installs and its AdServices installs side by side; placement labels com.apple.ads campaigns",
        arguments: TestEngine.available
    )
    func sideBySide(_ engine: TestEngine) async throws {
        let store = try await TestStore.make(engine, in: directory)
        let standIn = try await StandIn()
        // SKAN: three Apple Ads installs (Search results twice, Today tab once) and one from
        // another network, received on 2026-11-20.
        var postbacks: [String] = []
        for (index, (network, campaign)) in [
            ("com.apple.ads", 10), ("com.apple.ads", 10), ("com.apple.ads", 30), ("example123.skadnetwork", 10),
        ].enumerated() {
            var postback = SamplePostback.make(.v3_0, transactionID: "00000000-0000-4000-8000-00000000000\(index)")
            postback.adNetworkID = network
            postback.campaignID = Int64(campaign)
            postbacks.append(try TestKeys.signer.signed(postback).jsonText(extraFields: []))
        }
        let skan = try directory.write("skan.jsonl", postbacks.joined(separator: "\n") + "\n")
        for arguments in [
            [
                "ingest", "--db", store.argument, "--keys", TestKeys.directory, "--received-at", "2026-11-20T12:00:00Z",
                skan,
            ],
            ["aggregate", "--db", store.argument],
        ] {
            let run = try await Self.postbackd(arguments)
            #expect(run.status == 0, "\(run.standardError)")
        }
        // AdServices: one install clicked on 2026-11-20 (record-), one redownload obtained
        // today (twice404- after its retries is too slow here: organic- instead, not counted).
        let tokens = try directory.write(
            "t.jsonl",
            [Self.line("record-a"), Self.line("organic-a")].joined(separator: "\n")
        )
        _ = try await Self.postbackd(["apple-ads", "add", "--db", store.argument, tokens])
        let fetched = try await Self.postbackd([
            "apple-ads", "fetch", "--db", store.argument, "--endpoint", standIn.endpoint, "--once",
        ])
        #expect(fetched.status == 0, "\(fetched.standardError)")

        let report = try await Self.postbackd([
            "report", "--db", store.argument, "--by", "date,app_id", "--with-apple-ads", "--format", "csv", "--from",
            "2026-11-20",
            "--to", "2026-11-20",
        ])
        #expect(report.status == 0, "\(report.standardError)")
        let lines = report.standardOutput.split(separator: "\n").map(String.init)
        let header = lines.first?.split(separator: ",").map(String.init) ?? []
        let row = lines.dropFirst().first?.split(separator: ",").map(String.init) ?? []
        let cells = Dictionary(uniqueKeysWithValues: zip(header, row))
        #expect(cells["date"] == "2026-11-20" && cells["app_id"] == "525463029")
        #expect(cells["installs"] == "4", "SKAN installs of every network, as without the flag")
        #expect(cells["apple_ads_skan_installs"] == "3")
        #expect(cells["apple_ads_installs"] == "1")
        #expect(cells["apple_ads_redownloads"] == "0")
        #expect(lines.count == 2, "\(report.standardOutput)")

        let refused = try await Self.postbackd([
            "report", "--db", store.argument, "--by", "ad_network_id", "--with-apple-ads",
        ])
        #expect(refused.status == 2 && refused.standardError.contains("date and app_id only"))

        let placements = try await Self.postbackd([
            "report", "--db", store.argument, "--by", "ad_network_id,placement", "--format", "csv",
        ])
        let placementRows = placements.standardOutput.split(separator: "\n").map {
            $0.split(separator: ",", omittingEmptySubsequences: false).prefix(4).joined(separator: ",")
        }
        #expect(
            placementRows == [
                "ad_network_id,placement,postbacks,installs",
                "com.apple.ads,Search results,2,2",
                "com.apple.ads,Today tab,1,1",
                "example123.skadnetwork,,1,1",
            ],
            "\(placements.standardOutput)"
        )
        await standIn.stop()
    }
}
