import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// What networks claim, on every engine: claims files added, corrected and listed, and
/// `report --with-claims` against the spend tests' corpus, whose installs the test knows.
@Suite("Claims beside verified installs, on every engine")
struct ClaimsTests {
    let directory: TemporaryDirectory
    /// The spend tests, whose corpus these use (kept for its folder, where SQLite's store is).
    let costs: CostsTests

    init() throws {
        directory = try TemporaryDirectory("claims")
        costs = try CostsTests()
    }

    /// The spend tests' corpus (``CostsTests/corpusStore(_:)``): its installs by day received
    /// and network, campaign Alpha for `a` and Beta for `b`.
    static let installs: [[String]: Int] = [
        [CostsTests.dayOne, "a.skadnetwork"]: 10, [CostsTests.dayOne, "b.skadnetwork"]: 4,
        [CostsTests.dayTwo, "a.skadnetwork"]: 5,
    ]

    /// Claims by the day of the postbacks: a claims more than it delivered, b exactly, and b
    /// claims a day without postbacks.
    static let claims: [[String]: Int] = [
        [CostsTests.dayOne, "a.skadnetwork"]: 12, [CostsTests.dayOne, "b.skadnetwork"]: 4,
        [CostsTests.dayTwo, "a.skadnetwork"]: 8, ["2026-11-22", "b.skadnetwork"]: 3,
    ]

    static var claimsFile: String {
        "date,ad_network_id,campaign,installs,date_basis\n"
            + claims.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { key in
                "\(key[0]),\(key[1]),\(key[1] == "a.skadnetwork" ? "Alpha" : "Beta"),\(claims[key] ?? 0),postback\n"
            }.joined()
    }

    private func report(
        _ store: TestStore,
        _ by: String,
        dateBasis: String? = nil
    ) async throws -> (report: Report, warning: String?) {
        var options = ReportRequest.Options()
        options.by = by
        options.dateBasis = dateBasis
        options.withClaims = true
        return try await ReportJob.run(store.location, try ReportRequest.parse(options))
    }

    private func key(_ row: ReportRow) -> [String] {
        row.dimensions.map { value -> String in
            switch value {
            case .null: ""
            case .integer(let number): String(number)
            case .text(let text): text
            }
        }
    }

    @Test(
        "claimed installs, gap and coverage per row equal the test's own, by day and network, and by campaign",
        arguments: TestEngine.available
    )
    func coverage(_ engine: TestEngine) async throws {
        let store = try await costs.corpusStore(engine)
        let added = try await ClaimsJob.add(
            store.location,
            files: [try directory.write("claims-\(engine).csv", Self.claimsFile)],
            defaults: ClaimFile.Defaults()
        )
        #expect(added.refused.isEmpty)
        #expect(added.changes.map(\.added) == [4])

        for by in ["date,ad_network_id", "date,ad_network_id,campaign"] {
            let (report, warning) = try await report(store, by, dateBasis: "received")
            #expect(report.showsClaims)
            #expect(warning == nil, "\(warning ?? "")")
            var seen: [[String]: Int] = [:]
            for row in report.rows {
                let day = Array(key(row).prefix(2))
                let claimed = Self.claims[day]
                let installs = Self.installs[day] ?? 0
                #expect(row.counts[.installs] == installs, "\(day)")
                #expect(row.claimedInstalls == claimed, "\(day)")
                #expect(row.claimGap == claimed.map { $0 - installs }, "\(day)")
                #expect(row.claimCoverage == claimed.flatMap { $0 > 0 ? Double(installs) / Double($0) : nil }, "\(day)")
                seen[day] = row.claimedInstalls
            }
            #expect(seen == Self.claims, "\(by)")
        }
        // The formats: CSV and JSON name the columns, the table its notes.
        let (csvReport, _) = try await report(store, "date,ad_network_id", dateBasis: "received")
        let csv = csvReport.formatted(.csv)
        #expect(csv.contains("claimed_installs,claim_gap,claim_coverage"))
        #expect(csv.contains("\(CostsTests.dayOne),a.skadnetwork,") && csv.contains(",12,2,0.83"))
        #expect(csvReport.formatted(.json).contains("\"claimed_installs\":3,\"claim_gap\":3,\"claim_coverage\":0"))
        // The table's total: every claim against every verified install.
        let table = csvReport.formatted(.table)
        let claimedTotal = Self.claims.values.reduce(0, +)
        let installsTotal = Self.installs.values.reduce(0, +)
        #expect(table.contains("claimed: installs the networks claim"))
        #expect(
            table.contains(String(format: "%.1f%%", 100 * Double(installsTotal) / Double(claimedTotal))),
            "\(table)"
        )

        // No dimensions: one row, every claim against every verified install.
        let (totals, _) = try await report(store, "", dateBasis: "received")
        #expect(totals.rows.map(\.claimedInstalls) == [Self.claims.values.reduce(0, +)])
        #expect(totals.rows.first?.counts[.installs] == Self.installs.values.reduce(0, +))

        // By install date (the default of --with-claims), these claims (by postback date) join
        // nothing, and the warning says which basis joins.
        let (byInstall, warning) = try await report(store, "install_date,ad_network_id")
        #expect(byInstall.rows.allSatisfy { $0.claimedInstalls == nil })
        #expect(warning?.contains("no claims by install date in this period") == true, "\(warning ?? "")")
        // Claims by install date join the report by install date, each day's verified installs
        // as that report counts them.
        let installRows = byInstall.rows.map { key($0) + [String($0.counts[.installs] ?? 0)] }
        let installClaims =
            "date,ad_network_id,installs\n"
            + installRows.map { "\($0[0]),\($0[1]),\((Int($0[2]) ?? 0) * 2)\n" }.joined()
        _ = try await ClaimsJob.add(
            store.location,
            files: [try directory.write("install-\(engine).csv", installClaims)],
            defaults: ClaimFile.Defaults()
        )
        let (joined, none) = try await report(store, "install_date,ad_network_id")
        #expect(none == nil, "\(none ?? "")")
        #expect(!joined.rows.isEmpty)
        for row in joined.rows {
            let installs = row.counts[.installs] ?? 0
            #expect(row.claimedInstalls == installs * 2 && row.claimGap == installs, "\(key(row))")
            #expect(row.claimCoverage == (installs > 0 ? 0.5 : nil))
        }
    }

    @Test(
        "a corrected export replaces its rows; modeled claims, unknown campaigns and a dimension claims lack are named",
        arguments: TestEngine.available
    )
    func correctAndWarn(_ engine: TestEngine) async throws {
        let store = try await costs.corpusStore(engine)
        let file = try directory.write("claims-\(engine).csv", Self.claimsFile)
        _ = try await ClaimsJob.add(store.location, files: [file], defaults: ClaimFile.Defaults())
        let again = try await ClaimsJob.add(store.location, files: [file], defaults: ClaimFile.Defaults())
        #expect(again.changes.first.map { [$0.added, $0.changed, $0.unchanged] } == [0, 0, 4])
        let corrected = try directory.write(
            "corrected-\(engine).csv",
            Self.claimsFile.replacingOccurrences(of: "Alpha,12,postback", with: "Alpha,11,postback")
        )
        let change = try await ClaimsJob.add(store.location, files: [corrected], defaults: ClaimFile.Defaults())
        #expect(change.changes.first.map { [$0.added, $0.changed, $0.unchanged] } == [0, 1, 3])
        let stored = try await ClaimsJob.claims(store.location, from: nil, to: nil)
        #expect(stored.count == 4)
        #expect(
            stored.first { $0.row.date.description == CostsTests.dayOne && $0.row.adNetworkID == "a.skadnetwork" }?.row
                .installs == 11
        )
        #expect(ClaimsJob.csv(stored).hasPrefix(ClaimRow.columns.joined(separator: ",") + "\n"))

        // A network's export that includes modeled values, under a campaign no mapping knows.
        let meta = try directory.write(
            "meta-\(engine).csv",
            "date_start,campaign_name,total_postbacks\n\(CostsTests.dayOne),Gamma,6\n"
        )
        let metaAdded = try await ClaimsJob.add(
            store.location,
            files: [meta],
            defaults: ClaimFile.Defaults(adNetworkID: "c.skadnetwork", dateBasis: .postback, modeled: true)
        )
        #expect(metaAdded.refused.isEmpty, "\(metaAdded.refused.map(\.reason))")
        let (withMeta, warning) = try await report(store, "date,ad_network_id,campaign", dateBasis: "received")
        #expect(warning?.contains("the claims of c.skadnetwork include modeled values") == true, "\(warning ?? "")")
        #expect(warning?.contains("c.skadnetwork \"Gamma\"") == true, "\(warning ?? "")")
        #expect(
            withMeta.rows.contains {
                key($0) == [CostsTests.dayOne, "c.skadnetwork", "Gamma"] && $0.claimedInstalls == 6
            }
        )

        // A dimension claim rows do not carry: no claims, and the warning says why.
        let tiers = try await report(store, "ad_network_id,crowd_anonymity_tier", dateBasis: "received")
        #expect(tiers.report.rows.allSatisfy { $0.claimedInstalls == nil })
        #expect(tiers.warning?.contains("claims are not shown") == true, "\(tiers.warning ?? "")")
    }

    @Test(
        "rows by install date are final at the edges as the rule says: the first day final, the last not, with a fixed --as-of",
        arguments: TestEngine.available
    )
    func maturity(_ engine: TestEngine) async throws {
        let store = try await costs.corpusStore(engine)
        func report(asOf: String) async throws -> Report {
            var options = ReportRequest.Options()
            options.by = "install_date"
            options.dateBasis = "install"
            options.asOf = asOf
            return try await ReportJob.run(store.location, try ReportRequest.parse(options)).report
        }
        let days = try await report(asOf: "2026-11-01").rows.compactMap { row -> UTCDay? in
            if case .text(let text) = row.dimensions[0] { UTCDay(text) } else { nil }
        }
        #expect(days.count == 2, "\(days)")
        let first = try #require(days.first)
        // The first install date's postbacks 0 can all have arrived 14 days after it begins
        // (1 + 4 + 9 days of Apple's retries), its postbacks 1 and 2 after 51 (1 + 41 + 9).
        func instant(_ day: UTCDay, plus days: Int64) -> String {
            UTCInstant(milliseconds: (day.daysSinceEpoch + days) * 86_400_000).iso8601
        }
        let edges: [(asOf: String, first: [Bool], last: [Bool])] = [
            (instant(first, plus: 14), [true, false], [false, false]),
            (
                UTCInstant(milliseconds: (first.daysSinceEpoch + 14) * 86_400_000 - 1).iso8601, [false, false],
                [false, false]
            ),
            (instant(first, plus: 15), [true, false], [true, false]),
            (instant(first, plus: 51), [true, true], [true, false]),
        ]
        for edge in edges {
            let judged = try await report(asOf: edge.asOf)
            #expect(judged.maturityAsOf != nil)
            let flags = judged.rows.map { row in judged.maturity(row).map { [$0.installs, $0.values] } ?? [] }
            #expect(flags == [edge.first, edge.last], "\(edge.asOf)")
            let csv = judged.formatted(.csv)
            #expect(csv.contains(",installs_final,values_final,"))
            #expect(judged.formatted(.table).contains("final as of \(edge.asOf)"))
        }
        // A report by day received is not judged.
        var received = ReportRequest.Options()
        received.by = "date"
        received.asOf = "2026-11-01"
        let byDay = try await ReportJob.run(store.location, try ReportRequest.parse(received)).report
        #expect(byDay.maturityAsOf == nil && !byDay.formatted(.csv).contains("installs_final"))
    }
}
