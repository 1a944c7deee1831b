import Foundation
import GRDB
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// Section 9 in the store: the inferences stored with each postback (and filled in by the
/// migration), campaign mappings, and reports by the new dimensions, each compared with counts
/// taken straight from the stored postbacks.
@Suite("Install dates, tiers and campaigns in the store, on every engine")
struct InstallDateReportTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("section9")
    }

    /// Mapping rows for the sample postbacks' networks: a prefix split in time, a longer
    /// prefix inside it, an AdAttributionKit network, and a pre-4.0 network by campaign id.
    static let mapping = """
        ad_network_id,source_identifier,valid_from,valid_to,campaign,ad_group,creative
        fzbddbi26k.skadnetwork,1,,2026-11-15,"Winter, early",Search,
        fzbddbi26k.skadnetwork,1,2026-11-16,,Winter late,Search,banner-a
        fzbddbi26k.skadnetwork,12,,,Twelve,,
        fzbddbi26k.adattributionkit,5,,,Fives,Group 5,video
        fzbddbi26k.adattributionkit,52,2026-10-01,2026-10-10,Fifty-two,Group 52,
        3rpoyewmr9.skadnetwork,9,,,Nines,,

        """

    /// One stored postback, as the test reads it straight from `postbacks`.
    struct Stored {
        var network: String
        var identifier: String
        var installDate: String
        var tier: String
        var digits: String
        var install: Bool
        var production: Bool
        var winning: Bool
        var hasValue: Bool
    }

    private func storedPostbacks(_ store: TestStore) async throws -> [Stored] {
        try await store.strings(
            """
            SELECT ad_network_id || '|' || COALESCE(source_identifier, CAST(campaign_id AS TEXT), '') || '|'
                || CAST(install_date AS TEXT) || '|' || COALESCE(CAST(crowd_anonymity_tier AS TEXT), '') || '|'
                || COALESCE(CAST(source_identifier_digits AS TEXT), '') || '|'
                || CASE WHEN key_space = 'production' AND did_win IS NOT FALSE AND postback_sequence_index = 0
                    AND redownload IS NOT TRUE AND COALESCE(conversion_type, '') <> 're-engagement' THEN '1' ELSE '0' END
                || '|' || CASE WHEN key_space = 'production' THEN '1' ELSE '0' END
                || '|' || CASE WHEN did_win IS NOT FALSE THEN '1' ELSE '0' END
                || '|' || CASE WHEN fine_value IS NULL AND coarse_value IS NULL THEN '0' ELSE '1' END
            FROM postbacks
            """
        ).map { line in
            let cells = (line ?? "").split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            return Stored(
                network: cells[0],
                identifier: cells[1],
                installDate: cells[2],
                tier: cells[3],
                digits: cells[4],
                install: cells[5] == "1",
                production: cells[6] == "1",
                winning: cells[7] == "1",
                hasValue: cells[8] == "1"
            )
        }
    }

    /// The mapping row a postback takes, by the rule read plainly: among its network's rows
    /// whose prefix begins its identifier and whose period holds its install date, the one with
    /// the longest prefix.
    private func expectedMapping(_ postback: Stored, _ rows: [CampaignMapping]) -> CampaignMapping? {
        guard let day = UTCDay(postback.installDate) else { return nil }
        return rows.filter {
            $0.adNetworkID == postback.network && postback.identifier.hasPrefix($0.prefix) && $0.isValid(on: day)
        }.max { $0.prefix.count < $1.prefix.count }
    }

    private func counts(_ report: Report) -> [String: [Int]] {
        var result: [String: [Int]] = [:]
        for row in report.rows {
            let key = row.dimensions.map { value -> String in
                switch value {
                case .null: ""
                case .integer(let number): String(number)
                case .text(let text): text
                }
            }.joined(separator: "|")
            result[key] = [row.counts[.postbacks] ?? 0, row.counts[.installs] ?? 0]
        }
        return result
    }

    private func report(
        _ store: TestStore,
        _ dimensions: [AggregateDimension],
        basis: DateBasis = .received,
        from: String? = nil,
        to: String? = nil
    )
        async throws -> Report
    {
        try await ReportJob.run(
            store.location,
            ReportQuery(
                from: from.flatMap(UTCDay.init),
                to: to.flatMap(UTCDay.init),
                by: dimensions,
                events: false,
                dateBasis: basis
            )
        ).report
    }

    private func sampleStore(_ engine: TestEngine) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory, name: "section9")
        try await ingest([Repository.path("SamplePostbacks/generated")], into: store.location)
        return store
    }

    @Test(
        "reports by each new dimension equal counts taken straight from the stored postbacks",
        arguments: TestEngine.available
    )
    func reportsEqualStoredCounts(_ engine: TestEngine) async throws {
        let store = try await sampleStore(engine)
        let file = try directory.write("mapping.csv", Self.mapping)
        _ = try await CampaignsJob.add(store.location, files: [file])
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        let postbacks = try await storedPostbacks(store)
        #expect(postbacks.count > 1_000)
        let rows = try CampaignMappingFile.read([file]).get()

        func expected(_ key: (Stored) -> String) -> [String: [Int]] {
            var result: [String: [Int]] = [:]
            for postback in postbacks {
                result[key(postback), default: [0, 0]][0] += 1
                if postback.install { result[key(postback), default: [0, 0]][1] += 1 }
            }
            return result
        }
        // Every rule shows up in the sample: each tier, each digit count, mapped and not.
        #expect(Set(postbacks.map(\.tier)) == ["", "0", "1", "2", "3"])
        #expect(Set(postbacks.map(\.digits)) == ["", "2", "4"])

        #expect(counts(try await report(store, [.installDate])) == expected { $0.installDate })
        #expect(counts(try await report(store, [.crowdAnonymityTier])) == expected { $0.tier })
        #expect(counts(try await report(store, [.sourceIdentifierDigits])) == expected { $0.digits })
        #expect(
            counts(try await report(store, [.adNetworkID, .crowdAnonymityTier]))
                == expected { "\($0.network)|\($0.tier)" }
        )
        let campaigns = expected { expectedMapping($0, rows)?.campaign ?? "" }
        #expect(Set(campaigns.keys) == ["", "Winter, early", "Winter late", "Twelve", "Fives", "Fifty-two", "Nines"])
        #expect(counts(try await report(store, [.campaign])) == campaigns)
        #expect(counts(try await report(store, [.adGroup])) == expected { expectedMapping($0, rows)?.adGroup ?? "" })
        #expect(
            counts(try await report(store, [.campaign, .adGroup, .creative]))
                == expected {
                    let row = expectedMapping($0, rows)
                    return "\(row?.campaign ?? "")|\(row?.adGroup ?? "")|\(row?.creative ?? "")"
                }
        )

        // --date-basis install: the postbacks whose install dates fall in the period.
        let dates = postbacks.map(\.installDate).sorted()
        let (from, to) = (dates[dates.count / 3], dates[dates.count / 2])
        let window = try await report(store, [], basis: .install, from: from, to: to)
        let inWindow = postbacks.filter { $0.installDate >= from && $0.installDate <= to }
        #expect(window.rows.first?.counts[.postbacks] == inWindow.count)
        #expect(window.rows.first?.counts[.installs] == inWindow.count { $0.install })
        #expect(
            counts(try await report(store, [.installDate], basis: .install, from: from, to: to))
                == expected { $0.installDate }.filter { $0.key >= from && $0.key <= to }
        )

        // The tier distribution: each tier's share of the production postbacks with a tier.
        let tiers = try await report(store, [.crowdAnonymityTier])
        let tiered = postbacks.filter { $0.production && !$0.tier.isEmpty }
        for row in tiers.rows {
            guard case .integer(let tier) = row.dimensions[0] else {
                #expect(row.tierShare == nil)
                continue
            }
            let share = Double(tiered.count { $0.tier == String(tier) }) / Double(tiered.count)
            #expect(abs((row.tierShare ?? -1) - share) < 1e-9, "tier \(tier)")
        }
        #expect(abs(tiers.rows.compactMap(\.tierShare).reduce(0, +) - 1) < 1e-9)
        // null_rate: winning postbacks without a value over winning postbacks.
        let whole = try #require(try await report(store, []).rows.first)
        let winning = postbacks.filter(\.winning)
        #expect(abs((whole.nullRate ?? -1) - Double(winning.count { !$0.hasValue }) / Double(winning.count)) < 1e-9)
    }

    @Test(
        "the migration's SQL fills in what ingest computes, for every stored postback",
        arguments: TestEngine.available
    )
    func backfillMatchesIngest(_ engine: TestEngine) async throws {
        let store = try await sampleStore(engine)
        let columns =
            "CAST(estimated_install_at AS TEXT) || '|' || CAST(install_date AS TEXT) || '|' || COALESCE(CAST(crowd_anonymity_tier AS TEXT), '-') || '|' || COALESCE(CAST(source_identifier_digits AS TEXT), '-')"
        let computed = try await store.strings("SELECT \(columns) FROM postbacks ORDER BY id")
        try await store.execute(
            "UPDATE postbacks SET estimated_install_at = NULL, install_date = NULL, crowd_anonymity_tier = NULL, source_identifier_digits = NULL"
        )
        // The frozen migration's own statement: SQLite's v11, PostgreSQL's 7.
        let backfill =
            engine == .sqlite
            ? PostbackSchema.migrations.first { $0.identifier.hasPrefix("v11:") }?.sql.components(separatedBy: ";\n")
                .first { $0.hasPrefix("UPDATE postbacks SET") }
            : PostgresSchema.migrations.first { $0.version == 7 }?.statements.first {
                $0.hasPrefix("UPDATE postbacks SET")
            }
        try await store.execute(try #require(backfill))
        let filled = try await store.strings("SELECT \(columns) FROM postbacks ORDER BY id")
        #expect(computed.count > 1_000)
        #expect(filled == computed)
    }

    @Test("SQLite: a store from before schema v11 gets the same values when it is opened")
    func sqliteUpgrade() async throws {
        let current = try await sampleStore(.sqlite)
        guard case .sqlite(let currentPath) = current.location else { return }
        let oldPath = directory.path + "/before-v11.sqlite"
        let old = try DatabaseQueue(path: oldPath)
        try PostbackSchema.migrator.migrate(old, upTo: "v10: Apple Ads tokens and attribution records")
        try await old.writeWithoutTransaction { db in
            let names = try Row.fetchAll(db, sql: "PRAGMA table_info(postbacks)").map { $0["name"] as String }
            let list = names.joined(separator: ", ")
            try db.execute(sql: "ATTACH DATABASE ? AS current", arguments: [currentPath])
            try db.execute(sql: "INSERT INTO main.postbacks (\(list)) SELECT \(list) FROM current.postbacks")
            try db.execute(sql: "DETACH DATABASE current")
        }
        try old.close()
        let upgraded = TestStore(engine: .sqlite, location: .sqlite(path: oldPath))
        // Opening it migrates it.
        _ = try await CampaignsJob.list(upgraded.location, network: nil)
        let columns =
            "SELECT hex(dedup_key) || estimated_install_at || install_date || COALESCE(crowd_anonymity_tier, '-') || COALESCE(source_identifier_digits, '-') FROM postbacks ORDER BY dedup_key"
        let expected = try await current.strings(columns)
        #expect(expected.count > 1_000)
        #expect(try await upgraded.strings(columns) == expected)
    }

    @Test(
        "campaign names with tabs, line breaks, backslashes and other scripts reach reports as written",
        arguments: TestEngine.available
    )
    func awkwardNames(_ engine: TestEngine) async throws {
        // PostgreSQL's aggregate writes its rows as COPY text, where these characters are escapes.
        let names = ["Tab\there", "Two\nlines\r\nand a \\N", "Back\\slash \\t \\\\", "Ünïcödé 広告 🚀"]
        let quoted = names.map { "\"" + $0 + "\"" }
        let file = try directory.write(
            "awkward.csv",
            CampaignMapping.header + "\n"
                + "fzbddbi26k.skadnetwork,1,,,\(quoted[0]),\(quoted[1]),\(quoted[2])\n"
                + "fzbddbi26k.skadnetwork,12,,,\(quoted[3]),,\n"
        )
        let store = try await sampleStore(engine)
        _ = try await CampaignsJob.add(store.location, files: [file])
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        let rows = try await report(store, [.campaign, .adGroup, .creative]).rows
        let triples = Set(
            rows.map { row in
                row.dimensions.map { value -> String? in
                    if case .text(let text) = value { return text }
                    return nil
                }
            }
        )
        #expect(triples.contains([names[0], names[1], names[2]]))
        #expect(triples.contains([names[3], nil, nil]))
        #expect(triples.contains([nil, nil, nil]))
        #expect(triples.count == 3)
    }

    @Test(
        "campaigns add replaces the rows of the networks a file names and keeps the others",
        arguments: TestEngine.available
    )
    func replaceByNetwork(_ engine: TestEngine) async throws {
        let store = try await sampleStore(engine)
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        let first = try directory.write("first.csv", Self.mapping)
        let change = try await CampaignsJob.add(store.location, files: [first])
        #expect(
            change.networks.map(\.adNetworkID) == [
                "3rpoyewmr9.skadnetwork", "fzbddbi26k.adattributionkit", "fzbddbi26k.skadnetwork",
            ]
        )
        #expect(change.networks.map(\.added) == [1, 2, 3])
        #expect(change.networks.map(\.removed) == [0, 0, 0])
        func warning() async throws -> String? {
            try await ReportJob.run(store.location, ReportQuery(from: nil, to: nil, by: [], events: false)).warning
        }
        #expect(try await warning()?.contains("campaign mappings changed after the last aggregate run") == true)
        // A run over some days does not apply a mapping to the others; one over every day does.
        let day = try #require(UTCDay("2026-11-18"))
        _ = try await AggregateJob.run(store.location, .range(from: day, to: day), policy: .midpoint)
        #expect(try await warning()?.contains("campaign mappings changed") == true)
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        #expect(try await warning() == nil)
        // Rows from before the section 9 columns are found, whatever the last run was.
        try await store.execute("UPDATE aggregate_daily SET install_date = NULL WHERE date = '2026-11-17'")
        try await store.execute(
            "UPDATE aggregate_runs SET dimensions = NULL WHERE id = (SELECT MIN(id) FROM aggregate_runs)"
        )
        #expect(try await warning()?.contains("computed before install dates") == true)

        let second = try directory.write(
            "second.csv",
            CampaignMapping.header + "\nfzbddbi26k.skadnetwork,7,2026-11-01,,Sevens,,\n"
        )
        let replaced = try await CampaignsJob.add(store.location, files: [second])
        #expect(
            replaced.networks.map { [$0.adNetworkID, String($0.removed), String($0.added)] } == [
                ["fzbddbi26k.skadnetwork", "3", "1"]
            ]
        )
        let listed = try await CampaignsJob.list(store.location, network: nil)
        #expect(
            listed.map { "\($0.mapping.adNetworkID) \($0.mapping.prefix) \($0.mapping.campaign)" } == [
                "3rpoyewmr9.skadnetwork 9 Nines", "fzbddbi26k.adattributionkit 5 Fives",
                "fzbddbi26k.adattributionkit 52 Fifty-two", "fzbddbi26k.skadnetwork 7 Sevens",
            ]
        )
        #expect(
            listed[2].mapping.validFrom?.description == "2026-10-01"
                && listed[2].mapping.validTo?.description == "2026-10-10"
        )
        #expect(try await CampaignsJob.list(store.location, network: "3rpoyewmr9.skadnetwork").count == 1)
        // The list as CSV is a mapping file again.
        let again = try directory.write("again.csv", CampaignsJob.csv(listed))
        #expect(try CampaignMappingFile.read([again]).get().map(\.campaign) == listed.map(\.mapping.campaign))

        // A file with a problem stores nothing.
        let bad = try directory.write("bad.csv", CampaignMapping.header + "\n3rpoyewmr9.skadnetwork,9,,,,,\n")
        await #expect(throws: FileProblemsError.self) { try await CampaignsJob.add(store.location, files: [bad]) }
        #expect(try await CampaignsJob.list(store.location, network: nil).count == 4)
    }
}
