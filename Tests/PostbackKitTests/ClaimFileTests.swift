import PostbackKit
import PostbackTestSupport
import Testing

/// Claims files: postbackd's own shape and each network's export as the network writes it,
/// with what a file does not say given as `claims add`'s options.
@Suite("Claims files and networks' exports")
struct ClaimFileTests {
    private func parse(
        _ text: String,
        source: String = "claims.csv",
        _ defaults: ClaimFile.Defaults = ClaimFile.Defaults()
    ) -> (rows: [ClaimRow], problems: [String]) {
        ClaimFile.parse(Array(text.utf8), source: source, defaults: defaults)
    }

    /// A day the test writes as a literal.
    // swift-format-ignore: NeverForceUnwrap
    private func day(_ text: String) -> UTCDay { UTCDay(text)! }

    @Test("postbackd's own shape: every column, empty cells as absent, the defaults for what a row leaves empty")
    func ownShape() {
        let text = """
            modeled,date,ad_network_id,app_id,campaign,country_code,installs,redownloads,conversions,date_basis
            true,2026-11-20,a.skadnetwork,111,"Winter, big",US,12,1,30,postback
            ,2026-11-21,a.skadnetwork,,,,0,,,

            """
        let (rows, problems) = parse(text, ClaimFile.Defaults(appID: 222, modeled: false))
        #expect(problems == [])
        #expect(
            rows == [
                ClaimRow(
                    date: day("2026-11-20"),
                    dateBasis: .postback,
                    adNetworkID: "a.skadnetwork",
                    appID: 111,
                    campaign: "Winter, big",
                    countryCode: "US",
                    installs: 12,
                    redownloads: 1,
                    conversions: 30,
                    modeled: true,
                    source: "claims.csv",
                    line: 2
                ),
                ClaimRow(
                    date: day("2026-11-21"),
                    adNetworkID: "a.skadnetwork",
                    appID: 222,
                    installs: 0,
                    source: "claims.csv",
                    line: 3
                ),
            ]
        )
    }

    @Test("each network's export, as the network writes it: its columns mapped, the rest left aside")
    func exports() {
        // A Google Ads API report (GAQL, a row per campaign and day).
        let google = parse(
            """
            customer.id,campaign.id,campaign.name,segments.date,metrics.sk_ad_network_installs,metrics.sk_ad_network_total_conversions
            1234567890,111,Alpha,2026-11-20,12,30
            1234567890,112,Beta,2026-11-20,0,0

            """,
            ClaimFile.Defaults(adNetworkID: "cstr6suwn9.skadnetwork", appID: 111)
        )
        #expect(google.problems == [])
        #expect(
            google.rows.map {
                [
                    $0.date.description, $0.adNetworkID, "\($0.appID ?? 0)", $0.campaign ?? "", "\($0.installs)",
                    "\($0.conversions ?? -1)",
                ]
            }
                == [
                    ["2026-11-20", "cstr6suwn9.skadnetwork", "111", "Alpha", "12", "30"],
                    ["2026-11-20", "cstr6suwn9.skadnetwork", "111", "Beta", "0", "0"],
                ]
        )
        // Meta's Insights API, broken down by country.
        let meta = parse(
            """
            account_id,campaign_id,campaign_name,date_start,date_stop,country,total_postbacks
            act_1,23850,Alpha,2026-11-20,2026-11-20,US,7
            act_1,23850,Alpha,2026-11-20,2026-11-20,DE,2

            """,
            ClaimFile.Defaults(adNetworkID: "v9wttpbfk9.skadnetwork", appID: 111, modeled: true)
        )
        #expect(meta.problems == [])
        #expect(meta.rows.map { "\($0.countryCode ?? "")=\($0.installs)" } == ["US=7", "DE=2"])
        #expect(meta.rows.allSatisfy { $0.modeled && $0.dateBasis == .install && $0.campaign == "Alpha" })
        // TikTok's reporting API: its days carry a time.
        let tiktok = parse(
            """
            stat_time_day,campaign_id,campaign_name,skan_app_install,skan_conversion
            2026-11-20 00:00:00,1800,Alpha,5,9

            """,
            ClaimFile.Defaults(adNetworkID: "22mmun2rn5.skadnetwork", appID: 111, dateBasis: .postback)
        )
        #expect(tiktok.problems == [])
        #expect(
            tiktok.rows == [
                ClaimRow(
                    date: day("2026-11-20"),
                    dateBasis: .postback,
                    adNetworkID: "22mmun2rn5.skadnetwork",
                    appID: 111,
                    campaign: "Alpha",
                    installs: 5,
                    source: "claims.csv",
                    line: 2
                )
            ]
        )
        // An Apple Ads report: the app and country are its own columns; the network is Apple
        // Ads' unless one is given.
        let apple = parse(
            """
            date,campaignId,campaignName,adamId,countryOrRegion,totalInstalls,tapInstalls,viewInstalls
            2026-11-20,5001,Alpha,111,US,9,8,1

            """,
            ClaimFile.Defaults(appleAdsNetworkID: "com.apple.ads")
        )
        #expect(apple.problems == [])
        #expect(
            apple.rows.map { [$0.adNetworkID, "\($0.appID ?? 0)", $0.countryCode ?? "", "\($0.installs)"] }
                == [["com.apple.ads", "111", "US", "9"]]
        )
        // An export without a network of its own needs one given.
        let unnamed = parse("segments.date,metrics.sk_ad_network_installs\n2026-11-20,3\n")
        #expect(unnamed.rows.isEmpty)
        #expect(unnamed.problems == ["claims.csv:1: header: the column ad_network_id is missing"])
    }

    @Test("every problem named FILE:LINE: column: what, and no row of a file with any")
    func problems() {
        let text = """
            date,ad_network_id,installs,redownloads,date_basis,modeled,note
            2026-13-01,a.skadnetwork,1,,,,x
            2026-11-20,has space,1,,,,x
            2026-11-20,a.skadnetwork,-1,,,,x
            2026-11-20,a.skadnetwork,"1,000",,,,x
            2026-11-20,a.skadnetwork,,,,,x
            2026-11-20,a.skadnetwork,1,1.5,,,x
            2026-11-20,a.skadnetwork,1,,received,,x
            2026-11-20,a.skadnetwork,1,,,yes,x
            2026-11-21,a.skadnetwork,1,,,,x
            2026-11-21,a.skadnetwork,2,,install,,x
            2026-11-21,a.skadnetwork,2,,postback,,x

            """
        let (rows, problems) = parse(text)
        #expect(rows.isEmpty)
        for expected in [
            "claims.csv:1: header: unknown column \"note\"",
            "claims.csv:2: date: expected a day as YYYY-MM-DD (UTC), found \"2026-13-01\"",
            "claims.csv:3: ad_network_id: expected the network's id",
            "claims.csv:4: installs: expected a whole number, 0 or more (no sign, point or separator), found \"-1\"",
            "claims.csv:5: installs: expected a whole number, 0 or more (no sign, point or separator), found \"1,000\"",
            "claims.csv:6: installs: expected a whole number, 0 or more (no sign, point or separator), found \"\"",
            "claims.csv:7: redownloads: expected a whole number",
            "claims.csv:8: date_basis: expected install or postback, found \"received\"",
            "claims.csv:9: modeled: expected true or false, found \"yes\"",
            "claims.csv:11: key: the same date, date_basis, ad_network_id, app_id, campaign and country_code as line 10",
        ] {
            #expect(problems.contains { $0.hasPrefix(expected) }, "\(expected)\n\(problems.joined(separator: "\n"))")
        }
        // Line 12 is another basis: not the same key.
        #expect(!problems.contains { $0.hasPrefix("claims.csv:12:") })
        #expect(
            parse("date,installs\n2026-11-20,1\n").problems == [
                "claims.csv:1: header: the column ad_network_id is missing"
            ]
        )
    }
}
