import Foundation
import PostbackKit
import PostbackStore
import PostbackTestSupport
import Testing

/// What the dashboard reads: the totals tables (`aggregate_daily_totals`, the dashboard's
/// tables by either date, and their revenue), which reports by their dimensions read instead
/// of the detailed rows, on both engines.
@Suite("Aggregate totals for the dashboard, on every engine")
struct DashboardStoreTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory("dashboard-store")
    }

    private static func modelFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: Repository.path("SamplePostbacks/models"))
            .filter { $0.hasSuffix(".json") }.map { Repository.path("SamplePostbacks/models/" + $0) }
    }

    /// The sample postbacks with their models, aggregated.
    private func sampleStore(_ engine: TestEngine) async throws -> TestStore {
        let store = try await TestStore.make(engine, in: directory, name: "totals")
        _ = try await ModelsJob.add(files: Self.modelFiles(), location: store.location)
        try await ingest([Repository.path("SamplePostbacks/generated")], into: store.location)
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        return store
    }

    /// Reports by the totals' dimensions, with and without filters.
    static let queries: [ReportQuery] = {
        let from = UTCDay("2026-11-15")
        let to = UTCDay("2026-11-19")
        return [
            ReportQuery(from: nil, to: nil, by: [.date, .adNetworkID], events: false),
            ReportQuery(from: nil, to: nil, by: [], events: false),
            ReportQuery(from: from, to: to, by: [.appID], events: false),
            ReportQuery(
                from: from,
                to: to,
                by: [.installDate, .crowdAnonymityTier],
                events: false,
                dateBasis: .install
            ),
            ReportQuery(from: nil, to: nil, by: [.crowdAnonymityTier], events: false),
            ReportQuery(
                from: from,
                to: nil,
                by: [.date, .appID, .adNetworkID, .installDate, .crowdAnonymityTier],
                events: false,
                appIDs: [1_254_734_734],
                adNetworkIDs: ["fzbddbi26k.skadnetwork", "vdsbuozq6b.skadnetwork"]
            ),
            // The dashboard's reports, by either date (by a table's whole key: its rows as
            // they are, not summed again).
            ReportQuery(from: nil, to: nil, by: [.date, .adNetworkID, .crowdAnonymityTier, .appID], events: false),
            ReportQuery(
                from: from,
                to: to,
                by: [.crowdAnonymityTier, .date, .adNetworkID],
                events: false,
                adNetworkIDs: ["fzbddbi26k.skadnetwork", "vdsbuozq6b.skadnetwork"]
            ),
            ReportQuery(
                from: nil,
                to: nil,
                by: [.installDate, .appID, .adNetworkID, .crowdAnonymityTier],
                events: false,
                dateBasis: .install,
                appIDs: [1_254_734_734]
            ),
            ReportQuery(
                from: from,
                to: to,
                by: [.installDate, .adNetworkID, .crowdAnonymityTier],
                events: false,
                dateBasis: .install
            ),
            ReportQuery(from: nil, to: nil, by: [.installDate, .appID], events: false, dateBasis: .install),
            ReportQuery(
                from: nil,
                to: to,
                by: [],
                events: false,
                dateBasis: .install,
                adNetworkIDs: ["fzbddbi26k.skadnetwork"]
            ),
            ReportQuery(from: from, to: nil, by: [.date, .adNetworkID], events: false, appIDs: [1_254_734_734]),
            ReportQuery(
                from: nil,
                to: nil,
                by: [.crowdAnonymityTier],
                events: false,
                dateBasis: .install,
                appIDs: [1_254_734_734]
            ),
            // The totals with the other date.
            ReportQuery(from: from, to: to, by: [.date, .installDate], events: false, dateBasis: .install),
        ]
    }()

    /// Each query from its sums' tables equals it from the detailed rows (JSON and CSV: counts,
    /// revenue, tier shares), and is not empty.
    private func expectSameAsDetailedRows(_ store: TestStore) async throws {
        for query in Self.queries {
            #expect(ReportSQL(query: query).readsTotals, "\(query.dimensions)")
            var detailed = query
            detailed.detailedRowsOnly = true
            #expect(!ReportSQL(query: detailed).readsTotals)
            let fromTotals = try await ReportJob.run(store.location, query).report
            let fromDetails = try await ReportJob.run(store.location, detailed).report
            #expect(!fromTotals.rows.isEmpty, "\(query.dimensions)")
            #expect(
                fromTotals.formatted(.json) == fromDetails.formatted(.json),
                "\(query.dimensions) \(query.dateBasis)"
            )
            #expect(fromTotals.formatted(.csv) == fromDetails.formatted(.csv), "\(query.dimensions) \(query.dateBasis)")
        }
    }

    @Test(
        "reports by the totals' dimensions read the totals and equal the detailed rows exactly",
        arguments: TestEngine.available
    )
    func totalsEqualDetailedRows(_ engine: TestEngine) async throws {
        let store = try await sampleStore(engine)
        try await expectSameAsDetailedRows(store)
        // The smallest tables that hold a report: by a day with app, network and tier, the
        // dashboard's table of that date; with both dates, the totals.
        func source(
            _ dimensions: [AggregateDimension],
            _ basis: DateBasis = .received,
            apps: [Int64] = []
        ) -> ReportSQL.Source {
            ReportSQL(
                query:
                    ReportQuery(from: nil, to: nil, by: dimensions, events: false, dateBasis: basis, appIDs: apps)
            ).source
        }
        #expect(
            source([.date, .adNetworkID, .crowdAnonymityTier]) == .dashboard(DashboardTable(.received, byApp: false))
        )
        #expect(source([.date], apps: [1]) == .dashboard(DashboardTable(.received, byApp: true)))
        #expect(source([.date, .appID]) == .dashboard(DashboardTable(.received, byApp: true)))
        #expect(source([.installDate, .appID], .install) == .dashboard(DashboardTable(.install, byApp: true)))
        #expect(source([], .install) == .dashboard(DashboardTable(.install, byApp: false)))
        #expect(source([.installDate]) == .totals)
        #expect(source([.date], .install) == .totals)
        // Other dimensions and events read the detailed rows.
        #expect(source([.date, .version]) == .detailed)
        #expect(!ReportSQL(query: ReportQuery(from: nil, to: nil, by: [.date], events: true)).readsTotals)
        // Fewer rows: that is their point.
        let totals = try await store.count("aggregate_daily_totals")
        let details = try await store.count("aggregate_daily")
        #expect(totals > 0 && totals * 2 < details, "\(totals) totals for \(details) detailed rows")
        for basis in DateBasis.allCases {
            let byApp = try await store.count(DashboardTable(basis, byApp: true).name)
            let allApps = try await store.count(DashboardTable(basis, byApp: false).name)
            #expect(allApps > 0 && allApps < byApp && byApp < totals, "\(basis): \(allApps) < \(byApp) < \(totals)")
        }
        for table in DashboardTable.all { #expect(try await store.count(table.name + "_revenue") > 0, "\(table.name)") }
        #expect(try await store.count("aggregate_daily_totals_revenue") > 0)
    }

    @Test(
        "after a run over one day, the sums' tables still equal the detailed rows, by either date",
        arguments: TestEngine.available
    )
    func rerunOverOneDay(_ engine: TestEngine) async throws {
        // Aggregated without models (no revenue), then one day again with them: by install date,
        // a day's sums then mix rows of both runs.
        let store = try await TestStore.make(engine, in: directory, name: "rerun")
        try await ingest([Repository.path("SamplePostbacks/generated")], into: store.location)
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        #expect(try await store.count("aggregate_dashboard_install_revenue") == 0)
        _ = try await ModelsJob.add(files: Self.modelFiles(), location: store.location)
        let days = try await store.rows("SELECT DISTINCT date FROM aggregate_daily").map {
            $0.filter { !"\"()".contains($0) }
        }.sorted()
        #expect(days.count >= 3)
        let day = try #require(UTCDay(days[days.count / 2]))
        _ = try await AggregateJob.run(store.location, .range(from: day, to: day), policy: .midpoint)
        let withRevenue = try await store.rows("SELECT DISTINCT date FROM aggregate_dashboard_received_revenue")
            .map { $0.filter { !"\"()".contains($0) } }
        #expect(withRevenue == [day.description])
        let revenueInstallDays = try await store.count("aggregate_dashboard_install_revenue")
        #expect(revenueInstallDays > 0)
        try await expectSameAsDetailedRows(store)
        // And a run over every day gives the tables of a clean run.
        let dump = DashboardTable.all.flatMap { ["SELECT * FROM \($0.name)", "SELECT * FROM \($0.name)_revenue"] }
        _ = try await AggregateJob.run(store.location, .all, policy: .midpoint)
        var whole: [[String]] = []
        for sql in dump { whole.append(try await store.rows(sql).sorted()) }
        let clean = try await sampleStore(engine)
        var fresh: [[String]] = []
        for sql in dump { fresh.append(try await clean.rows(sql).sorted()) }
        #expect(whole == fresh)
        #expect(whole.allSatisfy { !$0.isEmpty })
    }

    @Test(
        "the fine-value histogram from its totals equals the one from the rows by app and network",
        arguments: TestEngine.available
    )
    func fineValueTotalsEqualDetailedRows(_ engine: TestEngine) async throws {
        let store = try await sampleStore(engine)
        let days = try await store.rows("SELECT DISTINCT date FROM aggregate_fine_values").map {
            $0.filter { !"\"()".contains($0) }
        }.sorted()
        let first = try #require(days.first.flatMap(UTCDay.init))
        let last = try #require(days.last.flatMap(UTCDay.init))
        func day(_ day: UTCDay, _ offset: Int64) -> UTCDay { UTCDay(daysSinceEpoch: day.daysSinceEpoch + offset) }
        #expect(first < last)
        // Every day, then the period without its first and last day, then a period with no rows.
        let periods: [(UTCDay?, UTCDay?)] = [(nil, nil), (day(first, 1), day(last, -1)), (day(last, 1), nil)]
        for (from, to) in periods {
            let query = ReportQuery(from: from, to: to, by: [], events: false)
            #expect(
                ReportSQL(query: query).fineValues.rendered(for: .sqlite).sql.contains("aggregate_fine_value_totals")
            )
            var detailed = query
            detailed.detailedRowsOnly = true
            #expect(
                !ReportSQL(query: detailed).fineValues.rendered(for: .sqlite).sql.contains(
                    "aggregate_fine_value_totals"
                )
            )
            let fromTotals = try await PostbackStores.with(store.location) {
                try await $0.dashboardSeries(query, fineValues: true)
            }
            let fromRows = try await PostbackStores.with(store.location) {
                try await $0.dashboardSeries(detailed, fineValues: true)
            }
            #expect(
                fromTotals.fineValues == fromRows.fineValues,
                "\(String(describing: from))…\(String(describing: to))"
            )
            #expect(fromTotals.fineValues.isEmpty == (from == day(last, 1)))
        }
        // A filter reads the rows by app and network.
        let filtered = ReportQuery(from: nil, to: nil, by: [], events: false, appIDs: [1_254_734_734])
        #expect(
            !ReportSQL(query: filtered).fineValues.rendered(for: .sqlite).sql.contains("aggregate_fine_value_totals")
        )
        #expect(try await store.count("aggregate_fine_value_totals") < store.count("aggregate_fine_values"))
    }

    @Test(
        "a store aggregated before the totals gets them from its rows when it is opened",
        arguments: TestEngine.available
    )
    func migrationFillsTotals(_ engine: TestEngine) async throws {
        let store = try await sampleStore(engine)
        // The columns the tables had when the migration that fills them shipped (v12; with v13's
        // model_ambiguous, which it fills too): later ones are filled by aggregate runs.
        let counts =
            "postbacks, installs, redownloads, reengagements, non_winning, test_mode, development, null_conversion_values, unmapped, unmodelled, model_ambiguous"
        let money = "currency, revenue_min, revenue_max, revenue_estimate"
        // Rows with observed revenue: a run writes a sum's row for a currency only modeled
        // (no detailed row stores modeled revenue since v16), which the migration cannot know.
        let observed = "WHERE revenue_min <> 0 OR revenue_max <> 0"
        func columns(_ dimensions: [AggregateDimension]) -> String { dimensions.map(\.column).joined(separator: ", ") }
        let dump =
            [
                "SELECT \(columns(AggregateSQL.totalsDimensions)), \(counts) FROM aggregate_daily_totals",
                "SELECT \(columns(AggregateSQL.totalsDimensions)), \(money) FROM aggregate_daily_totals_revenue \(observed)",
                "SELECT * FROM aggregate_fine_value_totals",
            ]
            + DashboardTable.all.flatMap {
                [
                    "SELECT \(columns($0.dimensions)), \(counts) FROM \($0.name)",
                    "SELECT \(columns($0.dimensions)), \(money) FROM \($0.name)_revenue \(observed)",
                ]
            }
        let dashboardTables = DashboardTable.all.flatMap { [$0.name, $0.name + "_revenue"] }
        var written: [[String]] = []
        for sql in dump { written.append(try await store.rows(sql).sorted()) }
        #expect(written.allSatisfy { !$0.isEmpty })
        // Back to the schema before: the tables gone, the migration not applied (nor the one
        // after it, undone: the model timelines and `model_ambiguous`).
        let laterMigration = [
            "DROP INDEX conversion_models_timeline",
            "CREATE UNIQUE INDEX conversion_models_current ON conversion_models (app_id) WHERE replaced_at IS NULL",
            "ALTER TABLE conversion_models DROP COLUMN conversion_type",
            "ALTER TABLE conversion_models DROP COLUMN effective_from",
            "ALTER TABLE aggregate_daily DROP COLUMN model_ambiguous",
            // v15 / 11: conversion types and modeled nulls.
            "ALTER TABLE aggregate_daily DROP COLUMN conversion_type",
            "ALTER TABLE aggregate_daily DROP COLUMN modeled_day",
            "ALTER TABLE aggregate_daily DROP COLUMN modeled_week",
            "ALTER TABLE aggregate_daily DROP COLUMN modeled_app_week",
            "ALTER TABLE aggregate_daily DROP COLUMN modeled_none",
            "ALTER TABLE aggregate_daily_revenue DROP COLUMN conversion_type",
            "ALTER TABLE aggregate_daily_revenue DROP COLUMN reengagement",
            "ALTER TABLE aggregate_daily_revenue DROP COLUMN modeled_min",
            "ALTER TABLE aggregate_daily_revenue DROP COLUMN modeled_max",
            "ALTER TABLE aggregate_daily_revenue DROP COLUMN modeled_estimate",
            "ALTER TABLE aggregate_daily_events DROP COLUMN conversion_type",
            "ALTER TABLE aggregate_daily_event_revenue DROP COLUMN conversion_type",
            // v16 / 12: the null model's reference groups.
            "DROP TABLE aggregate_daily_references",
        ]
        switch engine {
        case .sqlite:
            for table in dashboardTables { try await store.execute("DROP TABLE \(table)") }
            try await store.execute(
                "DROP TABLE aggregate_daily_intake",
                "DROP TABLE aggregate_daily_totals",
                "DROP TABLE aggregate_daily_totals_revenue",
                "DROP TABLE aggregate_fine_value_totals",
                "DELETE FROM grdb_migrations WHERE identifier LIKE 'v12:%' OR identifier LIKE 'v13:%' OR identifier LIKE 'v15:%' OR identifier LIKE 'v16:%'"
            )
            for statement in laterMigration { try await store.execute(statement) }
        case .postgres:
            // PostgreSQL applies the migrations after the highest one recorded: the later ones are
            // undone too (9: the model timelines and model_ambiguous, below; 10: the conflicts'
            // signed_differs, the runs' signed_conflicts; 11: conversion types and modeled nulls,
            // and 12: the reference groups, below).
            try await store.execute(
                "DROP TABLE aggregate_daily_intake, aggregate_daily_totals, aggregate_daily_totals_revenue, aggregate_fine_value_totals, "
                    + dashboardTables.joined(separator: ", "),
                "ALTER TABLE conflicts DROP COLUMN signed_differs",
                "ALTER TABLE ingest_runs DROP COLUMN signed_conflicts",
                // 14: Apple Ads install ids (13, renaming a token state, runs again as it is).
                "ALTER TABLE apple_ads_tokens DROP COLUMN install_id",
                // 15: costs and exchange rates; 16: access keys and apps; 17: retention; 18: the
                // sightings by day received; 19: what a prune removed of test and development postbacks.
                "DROP TABLE costs, exchange_rates, access_keys, apps, settings, retention, pruned_keys, pruned_intake, prune_runs, pruned_postbacks",
                "DROP INDEX quarantine_received_day, sightings_received_day",
                // 20: the channels.
                "ALTER TABLE postbacks DROP COLUMN channel",
                "ALTER TABLE sightings DROP COLUMN channel",
                "ALTER TABLE quarantine DROP COLUMN channel",
                // 21: the sightings' interaction type, reconcile_daily; 22: the claims.
                "ALTER TABLE sightings DROP COLUMN ad_interaction_type",
                "DROP TABLE reconcile_daily, reconcile_daily_totals, claims",
                "DELETE FROM postbackd_migrations WHERE version >= 8"
            )
            for statement in laterMigration { try await store.execute(statement) }
        }
        // A command that only reads does not migrate it, and says a writer must.
        do {
            _ = try await ReportJob.run(store.location, ReportQuery(from: nil, to: nil, by: [], events: false))
            Issue.record("a report migrated, or read, a store of an older schema")
        } catch let fault as StoreFault {
            #expect(fault.code == .olderSchema, "\(fault)")
        }
        // Opening it to write migrates it.
        try await PostbackStores.with(store.location) { _ in }
        var filled: [[String]] = []
        for sql in dump { filled.append(try await store.rows(sql).sorted()) }
        #expect(filled == written)
    }
}
